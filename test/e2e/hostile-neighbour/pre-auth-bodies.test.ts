/**
 * Hostile-neighbour row: request bodies being received at once.
 *
 * A stranger (no credentials) holds uploads open to tenant A's signed integration from one address:
 * 64 connections, each announcing a 1 MiB body with a bogus signature and sending a byte a second,
 * reconnecting as soon as one ends. Beside it tenant A, with valid Basic credentials, does the same
 * to its own Basic integration from its address. Tenant B sends at a steady rate from a third
 * address, Basic and signed alternately. B gets only 200s, the replica stays ready; the stranger
 * got its own address's share only (429 at once, or 408 once too slow), A its namespace's.
 */
import { createHmac } from 'node:crypto';
import { basic, startIngester, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { waitFor } from '../../support/waiting.js';
import { openSocket, readAll } from '../support/raw-http.js';
import { expectUnharmed, steadyTenant } from './support.js';

const GH_A_SECRET = 'tenant-a-github-secret';
const GH_B_SECRET = 'tenant-b-github-secret';
const STRANGER = '198.51.100.66';
const TENANT_A = '198.51.100.77';
const TENANT_B = '192.0.2.20';
const ATTACK_MS = 6_000;

const signedRoute = (name: string, namespace: string, secret: string) => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace,
  credentials: [],
  authentication: { mode: 'signature', signature: { scheme: 'github', secrets: [{ value: secret }] } },
});

/**
 * Uploads that never finish in time: `connections` sockets to `path`, each announcing a 1 MiB body
 * and sending one byte a second until the server answers or closes, then reconnecting after a
 * second, until `untilMs`. `outcomes` has each attempt's status line as it ends (or 'closed'
 * without an answer); `done` resolves once every connection is closed.
 */
function slowUploads(
  port: number,
  path: string,
  headers: Record<string, string>,
  connections: number,
  untilMs: number,
): { outcomes: string[]; done: Promise<string[]> } {
  const outcomes: string[] = [];
  const head =
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n` +
    Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('') +
    '\r\n';
  const one = async (): Promise<void> => {
    while (performance.now() < untilMs) {
      const socket = await openSocket(port);
      socket.write(head);
      const trickle = setInterval(() => socket.writable && socket.write('['), 1000);
      const { text } = await readAll(socket, Math.max(100, untilMs - performance.now()));
      clearInterval(trickle);
      socket.destroy();
      outcomes.push(text === '' ? 'closed' : (text.split('\r\n')[0] ?? ''));
      await new Promise((r) => setTimeout(r, Math.min(1000, Math.max(0, untilMs - performance.now()))));
    }
  };
  return { outcomes, done: Promise.all(Array.from({ length: connections }, one)).then(() => outcomes) };
}

describe('hostile neighbour: request bodies being received at once', () => {
  let ing: RunningIngester;
  beforeAll(async () => {
    ing = await startIngester((c) => {
      c.trustProxy = '127.0.0.1';
      (c.routes as unknown[]).push(
        signedRoute('gh-a', 'team-a', GH_A_SECRET),
        tenantRoute('slow-a', 'team-a'),
        signedRoute('gh-b', 'team-b', GH_B_SECRET),
        tenantRoute('basic-b', 'team-b'),
      );
    });
  });
  afterAll(async () => {
    await ing.stop('SIGKILL'); // the row is over: a graceful stop would drain what A left in flight
  });

  it('keeps B unharmed while a stranger and tenant A hold slow uploads open', async () => {
    const until = performance.now() + ATTACK_MS;
    const stranger = slowUploads(
      ing.port,
      '/events/webhook_gh-a',
      { 'x-forwarded-for': STRANGER, 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` },
      64,
      until,
    );
    const tenantA = slowUploads(
      ing.port,
      '/events/webhook_slow-a',
      { 'x-forwarded-for': TENANT_A, authorization: basic('slow-a', 'slow-a-password') },
      24,
      until,
    );
    // The attack holds both shares first: each attacker's next upload is refused at once (without
    // shares, never: B then meets the attack as it is, and the checks below say what it got).
    await waitFor(
      'the stranger and A refused at their shares',
      async () => [stranger, tenantA].every((a) => a.outcomes.some((s) => / 429 /.test(s))),
      3_000,
      20,
    ).catch(() => undefined);
    // B until a second before the attack ends.
    const bMs = until - performance.now() - 1000;
    // B, Basic and signed side by side, from its own address.
    const [bBasic, bSigned] = await Promise.all([
      steadyTenant({
        url: `${ing.url}/events/webhook_basic-b`,
        headers: {
          'content-type': 'application/json',
          'x-forwarded-for': TENANT_B,
          authorization: basic('basic-b', 'basic-b-password'),
        },
        body: (seq) => ({ body: JSON.stringify({ source: `b-${seq}`, severity: 3 }) }),
        perSecond: 10,
        durationMs: bMs,
        adminUrl: ing.adminUrl,
      }),
      steadyTenant({
        url: `${ing.url}/events/webhook_gh-b`,
        headers: { 'content-type': 'application/json', 'x-forwarded-for': TENANT_B },
        body: (seq) => {
          const body = JSON.stringify({ source: `b-signed-${seq}`, severity: 3 });
          const signature = createHmac('sha256', GH_B_SECRET).update(body).digest('hex');
          return { body, headers: { 'x-hub-signature-256': `sha256=${signature}` } };
        },
        perSecond: 10,
        durationMs: bMs,
      }),
    ]);
    const [strangerOutcomes, tenantAOutcomes] = await Promise.all([stranger.done, tenantA.done]);

    expectUnharmed(bBasic, { p99BoundMs: 2000 });
    expectUnharmed(bSigned, { p99BoundMs: 2000 });
    // The stranger got no more than its address's share: refused at once, or cut as too slow.
    expect(strangerOutcomes.length).toBeGreaterThan(64);
    expect(strangerOutcomes.filter((s) => !/^HTTP\/1\.1 (429|408) /.test(s) && s !== 'closed')).toEqual([]);
    expect(strangerOutcomes.filter((s) => / 408 /.test(s)).length).toBeGreaterThan(0);
    // It asked for more than that share: the rest of its uploads were refused at once.
    expect(strangerOutcomes.filter((s) => / 429 /.test(s)).length).toBeGreaterThan(0);
    // Tenant A got its namespace's share, and its slow bodies were cut too.
    expect(tenantAOutcomes.filter((s) => !/^HTTP\/1\.1 (429|408) /.test(s) && s !== 'closed')).toEqual([]);
    expect(tenantAOutcomes.filter((s) => / 408 /.test(s)).length).toBeGreaterThan(0);
    expect(tenantAOutcomes.filter((s) => / 429 /.test(s)).length).toBeGreaterThan(0);
  }, 40_000);
});
