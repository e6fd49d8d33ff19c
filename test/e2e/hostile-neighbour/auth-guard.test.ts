/**
 * Hostile-neighbour row: the brute-force guard.
 *
 * Tenant B's sender and a stranger share one address (a SaaS sender's egress, or every sender
 * behind an ingress; here X-Forwarded-For through a trusted proxy). The stranger sends wrong
 * signatures to tenant A's signed integration until the guard blocks it, and then enumerates
 * integration names that do not exist. B's correctly signed requests from that same address are
 * all answered 200 throughout; the stranger is blocked for A's integration, and only there.
 */
import { createHmac } from 'node:crypto';
import { basic, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { expectUnharmed, steadyTenant } from './support.js';

const GH_A_SECRET = 'tenant-a-github-secret';
const GH_B_SECRET = 'tenant-b-github-secret';
const SHARED_EGRESS = '192.0.2.50';
const ELSEWHERE = '192.0.2.51';
/** At most; B stops 1.5 s after the stranger's last request (its rounds take 2-4 s). */
const RUN_MS = 15_000;

const signedRoute = (name: string, namespace: string, secret: string) => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace,
  credentials: [],
  authentication: { mode: 'signature', signature: { scheme: 'github', secrets: [{ value: secret }] } },
});

const signed = (secret: string, body: string): Record<string, string> => ({
  'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
});

describe('hostile neighbour: the brute-force guard', () => {
  let ing: RunningIngester;
  beforeAll(async () => {
    ing = await startIngester((c) => {
      c.trustProxy = '127.0.0.1';
      (c.routes as unknown[]).push(
        signedRoute('gh-a', 'team-a', GH_A_SECRET),
        signedRoute('gh-b', 'team-b', GH_B_SECRET),
      );
    });
  });
  afterAll(async () => {
    await ing.stop('SIGKILL'); // the row is over: a graceful stop would drain what A left in flight
  });

  it("a stranger trips the guard on A's integration from B's address; B's signed requests from it all get 200", async () => {
    const from = (address: string) => ({ 'x-forwarded-for': address });
    const stranger = (async () => {
      const statuses: number[] = [];
      // Wrong signatures to A's integration, ten at a time (each 401 waits the failure floor).
      for (let round = 0; round < 4; round++) {
        const body = JSON.stringify({ source: 'stranger', severity: 1, round });
        const wave = await Promise.all(
          Array.from({ length: 10 }, () =>
            post(`${ing.url}/events/webhook_gh-a`, body, { ...from(SHARED_EGRESS), ...signed('guess', body) }),
          ),
        );
        statuses.push(...wave.map((r) => r.status));
      }
      // Then names that do not exist, many of them (each its own name: no key of its own).
      const unknown: number[] = [];
      for (let round = 0; round < 6; round++) {
        const wave = await Promise.all(
          Array.from({ length: 25 }, (_, i) =>
            post(`${ing.url}/events/webhook_nobody-${round}-${i}`, '{}', {
              ...from(SHARED_EGRESS),
              authorization: basic('x', 'y'),
            }),
          ),
        );
        unknown.push(...wave.map((r) => r.status));
      }
      return { statuses, unknown, endedMs: performance.now() };
    })();
    const b = await steadyTenant({
      url: `${ing.url}/events/webhook_gh-b`,
      headers: { 'content-type': 'application/json', ...from(SHARED_EGRESS) },
      body: (seq) => {
        const body = JSON.stringify({ source: `b-${seq}`, severity: 3 });
        return { body, headers: signed(GH_B_SECRET, body) };
      },
      perSecond: 10,
      durationMs: RUN_MS,
      until: stranger.then(() => new Promise((r) => setTimeout(r, 1_500))),
      adminUrl: ing.adminUrl,
    });
    const bEndedMs = performance.now();
    const { statuses, unknown, endedMs } = await stranger;

    expectUnharmed(b, { p99BoundMs: 1500 });
    // B was still sending 1.5 s after the stranger's last request, blocked there (not cut short by RUN_MS).
    expect(bEndedMs - endedMs).toBeGreaterThan(1_000);
    // The stranger: 401 until A's integration's budget (20) from this address was spent, then 429.
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(20);
    expect(statuses.slice(-10)).toEqual(Array(10).fill(429));
    // Unknown names end in 429 too, once the address's budget across integrations is spent.
    expect(unknown.every((s) => s === 401 || s === 429)).toBe(true);
    expect(unknown.slice(-25)).toEqual(Array(25).fill(429));

    // Blocked for A's integration whatever it sends from that address: the right signature too...
    const body = JSON.stringify({ source: 'a-real', severity: 2 });
    const right = await post(`${ing.url}/events/webhook_gh-a`, body, {
      ...from(SHARED_EGRESS),
      ...signed(GH_A_SECRET, body),
    });
    expect(right.status).toBe(429);
    expect(right.json()).toMatchObject({ code: 'AUTH_THROTTLED' });
    // ...but A's real sender elsewhere, and B from the shared address, are served.
    expect(
      (await post(`${ing.url}/events/webhook_gh-a`, body, { ...from(ELSEWHERE), ...signed(GH_A_SECRET, body) })).status,
    ).toBe(200);
    expect(
      (await post(`${ing.url}/events/webhook_gh-b`, body, { ...from(SHARED_EGRESS), ...signed(GH_B_SECRET, body) }))
        .status,
    ).toBe(200);
  }, 40_000);
});
