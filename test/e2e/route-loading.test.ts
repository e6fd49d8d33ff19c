/**
 * A large routing table loads behind listening ports (main.ts): with 20,000 routes the built
 * ingester answers /healthz while it builds the table, says "loading routes" on /readyz, answers
 * ingest requests 503 with Retry-After (never a 401 from an empty table), and once ready accepts
 * the example's demo credentials and a generated integration's. Before, nothing listened until
 * the table was built, so /healthz first answered when /readyz already did.
 */
import { createHash } from 'node:crypto';
import { jest } from '@jest/globals';
import { DEMO_AUTH } from '../support/credentials.js';
import { basic, post, startIngester, type RunningIngester } from './support/ingester.js';

jest.setTimeout(120_000);

const INTEGRATIONS = 10_000;
const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/** 10,000 integrations and 10,000 API keys over 500 namespaces, one sha256 credential each. */
function manyRoutes(): unknown[] {
  const routes: unknown[] = [];
  for (let i = 0; i < INTEGRATIONS; i++) {
    const namespace = `team-${i % 500}`;
    routes.push(
      {
        apiVersion: 'intake.dev/v1alpha1',
        kind: 'WebhookIntegration',
        name: `hook-${i}`,
        namespace,
        credentials: [{ username: `sender-${i}`, secret: { sha256: sha256Hex(`password-${i}`) } }],
      },
      {
        apiVersion: 'intake.dev/v1alpha1',
        kind: 'ApiKey',
        name: `key-${i}`,
        namespace,
        credentials: [{ username: namespace, secret: { sha256: sha256Hex(`${namespace}_key-${i}`) } }],
      },
    );
  }
  return routes;
}

let ing: RunningIngester | undefined;
afterEach(async () => {
  await ing?.stop();
  ing = undefined;
});

describe('an ingester loading 20,000 routes', () => {
  it('answers /healthz meanwhile, is not ready, refuses ingest with 503 (not 401), then accepts', async () => {
    // Returns as soon as /healthz answers (waitReady: false).
    ing = await startIngester(
      (config) => {
        config.routes = [...(config.routes as unknown[]), ...manyRoutes()];
      },
      { waitReady: false },
    );
    const { url, adminUrl } = ing;
    let sawLoading = false;
    const duringLoading: Array<{ status: number; retryAfter: string | null; text: string }> = [];
    for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
      const health = await fetch(`${adminUrl}/healthz`);
      const ready = await fetch(`${adminUrl}/readyz`);
      const readyBody = (await ready.json()) as { status: string };
      if (ready.status === 200) break;
      expect(health.status).toBe(200);
      expect(ready.status).toBe(503);
      if (readyBody.status !== 'loading routes') continue;
      sawLoading = true;
      const answer = await post(
        `${url}/events/webhook_demo`,
        { source: 'early', severity: 'major' },
        { authorization: DEMO_AUTH },
      );
      if (answer.status !== 503) {
        // The table was installed between /readyz and this request: then it must be accepted.
        expect(answer.status).toBeLessThan(300);
        break;
      }
      duringLoading.push({
        status: answer.status,
        retryAfter: answer.headers.get('retry-after'),
        text: answer.text,
      });
    }
    expect(sawLoading).toBe(true);
    for (const refused of duringLoading)
      expect(refused).toMatchObject({
        status: 503,
        retryAfter: '1',
        text: expect.stringContaining('loading its routes'),
      });

    expect((await fetch(`${adminUrl}/readyz`)).status).toBe(200);
    const demo = await post(
      `${url}/events/webhook_demo`,
      { source: 'after-loading', severity: 'major' },
      { authorization: DEMO_AUTH },
    );
    expect(demo.status).toBeLessThan(300);
    const last = INTEGRATIONS - 1;
    const generated = await post(
      `${url}/events/webhook_hook-${last}`,
      { source: 'generated', severity: 'major' },
      { authorization: basic(`sender-${last}`, `password-${last}`) },
    );
    expect(generated.status).toBeLessThan(300);
    const wrong = await post(
      `${url}/events/webhook_hook-${last}`,
      { source: 'wrong', severity: 'major' },
      { authorization: basic(`sender-${last}`, 'not-the-password') },
    );
    expect(wrong.status).toBe(401);
  });
});
