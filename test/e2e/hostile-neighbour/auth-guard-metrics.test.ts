/**
 * Hostile-neighbour row: the brute-force guard on the metrics endpoint.
 *
 * Tenant B's metrics sender and a stranger share one address (a SaaS sender's egress, or every
 * sender behind an ingress; here X-Forwarded-For through a trusted proxy). The stranger sends wrong
 * API keys for tenant A's key (in header `apiKey`, naming A's namespace, and in Basic with A's key
 * username) until the guard blocks it, then keys that name nobody. B's valid key from that same
 * address is answered 200 throughout; the stranger is blocked for A's key identity, and only there.
 */
import { basic, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { expectUnharmed, steadyTenant } from './support.js';

const KEY_A = 'team-a_0123456789abcdef0123456789abcdef01234567';
const KEY_B = 'team-b_89abcdef0123456789abcdef0123456789abcdef';
const SHARED_EGRESS = '192.0.2.60';
const ELSEWHERE = '192.0.2.61';
/** At most; B stops 1.5 s after the stranger's last request (its rounds take 2-4 s). */
const RUN_MS = 15_000;
const POINT = JSON.stringify({ metric: 'm', data: 1, source: 's' });

const apiKeyRoute = (namespace: string, key: string) => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'ApiKey',
  name: 'metrics',
  namespace,
  credentials: [{ username: `${namespace}-metrics`, secret: { plain: key } }],
});

const from = (address: string) => ({ 'x-forwarded-for': address });

/** `count` requests with `headers(i)`, ten at a time (each 401 waits the failure floor); their statuses. */
async function waves(url: string, count: number, headers: (i: number) => Record<string, string>): Promise<number[]> {
  const statuses: number[] = [];
  for (let start = 0; start < count; start += 10) {
    const wave = await Promise.all(
      Array.from({ length: Math.min(10, count - start) }, (_, j) => post(url, POINT, headers(start + j))),
    );
    statuses.push(...wave.map((r) => r.status));
  }
  return statuses;
}

describe('hostile neighbour: the brute-force guard on the metrics endpoint', () => {
  let ing: RunningIngester;
  let metricsUrl: string;
  beforeAll(async () => {
    ing = await startIngester((c) => {
      c.trustProxy = '127.0.0.1';
      (c.routes as unknown[]).push(apiKeyRoute('team-a', KEY_A), apiKeyRoute('team-b', KEY_B));
    });
    metricsUrl = `${ing.url}/v1/integrations/metrics`;
  });
  afterAll(async () => {
    await ing.stop('SIGKILL'); // the row is over: a graceful stop would drain what A left in flight
  });

  it("a stranger's wrong keys for A's key from B's address never block B's valid key there", async () => {
    const stranger = (async () => {
      const header = await waves(metricsUrl, 30, (i) => ({ ...from(SHARED_EGRESS), apikey: `team-a_guess${i}` }));
      const basicA = await waves(metricsUrl, 10, (i) => ({
        ...from(SHARED_EGRESS),
        authorization: basic('team-a-metrics', `team-a_guess-basic${i}`),
      }));
      // Keys naming nobody published: counted against the address alone, never a key of their own.
      const nobody = await waves(metricsUrl, 20, (i) => ({ ...from(SHARED_EGRESS), apikey: `nobody${i}_x` }));
      return { header, basicA, nobody, endedMs: performance.now() };
    })();
    const b = await steadyTenant({
      url: metricsUrl,
      headers: { 'content-type': 'application/json', apikey: KEY_B, ...from(SHARED_EGRESS) },
      body: POINT,
      perSecond: 10,
      durationMs: RUN_MS,
      until: stranger.then(() => new Promise((r) => setTimeout(r, 1_500))),
      adminUrl: ing.adminUrl,
    });
    const bEndedMs = performance.now();
    const { header, basicA, nobody, endedMs } = await stranger;

    expectUnharmed(b, { p99BoundMs: 1500 });
    // B was still sending 1.5 s after the stranger's last request, blocked there (not cut short by RUN_MS).
    expect(bEndedMs - endedMs).toBeGreaterThan(1_000);
    // 401 until A's key identity's budget (20) from this address was spent, then 429, in both forms.
    expect(header.filter((s) => s === 401).length).toBe(20);
    expect(header.slice(-10)).toEqual(Array(10).fill(429));
    expect(basicA).toEqual(Array(10).fill(429));
    // Below the address's budget across targets (100): unknown identities are still answered 401.
    expect(nobody).toEqual(Array(20).fill(401));

    // Blocked for A's key from that address whatever it sends: the right key too, in both forms...
    const rightA = await post(metricsUrl, POINT, { ...from(SHARED_EGRESS), apikey: KEY_A });
    expect(rightA.status).toBe(429);
    expect(rightA.json()).toMatchObject({ code: 'AUTH_THROTTLED' });
    expect(rightA.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(
      (await post(metricsUrl, POINT, { ...from(SHARED_EGRESS), authorization: basic('team-a-metrics', KEY_A) })).status,
    ).toBe(429);
    // ...but A's real sender elsewhere, and B from the shared address in either form, are served.
    expect((await post(metricsUrl, POINT, { ...from(ELSEWHERE), apikey: KEY_A })).status).toBe(200);
    expect((await post(metricsUrl, POINT, { ...from(SHARED_EGRESS), apikey: KEY_B })).status).toBe(200);
    expect(
      (await post(metricsUrl, POINT, { ...from(SHARED_EGRESS), authorization: basic('team-b-metrics', KEY_B) })).status,
    ).toBe(200);
  }, 40_000);

  it('answers every wrong key with the same 401, whichever identity it names', async () => {
    const address = from('192.0.2.62');
    const answers = await Promise.all([
      post(metricsUrl, POINT, { ...address, apikey: 'team-b_wrong' }),
      post(metricsUrl, POINT, { ...address, apikey: 'nobody_wrong' }),
      post(metricsUrl, POINT, { ...address, apikey: 'no-namespace-at-all' }),
      post(metricsUrl, POINT, { ...address, authorization: basic('team-b-metrics', 'wrong') }),
      post(metricsUrl, POINT, { ...address, authorization: basic('nobody', 'wrong') }),
      post(metricsUrl, POINT, { ...address }),
    ]);
    for (const a of answers) {
      expect(a.status).toBe(401);
      expect(a.text).toBe(answers[0]!.text);
      expect(a.headers.get('www-authenticate')).toBe(answers[0]!.headers.get('www-authenticate'));
      expect(a.headers.get('content-length')).toBe(answers[0]!.headers.get('content-length'));
    }
    // Nothing of a key reaches the log.
    expect(ing.stdout() + ing.stderr()).not.toMatch(/team-a_guess|team-b_wrong|nobody_wrong|team-a_0123/);
  }, 20_000);
});
