/**
 * A route's own limit is created at its first request, not when its route is placed (with 20,000
 * routes most are quiet; limits/tenant-limiter.ts). Through the built ingester with many routes:
 * a route never used before gets exactly its burst on its first requests, concurrent ones and a
 * single batch alike, and is refused 429 naming its own limit past it; its neighbours are not
 * charged for it.
 */
import { jest } from '@jest/globals';
import { post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from './support/ingester.js';

jest.setTimeout(60_000);

const ROUTES = 400;
const BURST = 5;
/** The smallest rate a route may publish: at most one event more per second the test takes. */
const PER_SECOND = 1;

let ing: RunningIngester;

const send = (name: string, body: unknown = { source: `${name}-host`, severity: 'warning' }) =>
  post(`${ing.url}/events/webhook_${name}`, body, tenantAuth(name));

beforeAll(async () => {
  ing = await startIngester((config) => {
    for (let i = 0; i < ROUTES; i++)
      (config.routes as unknown[]).push(
        tenantRoute(`quiet-${i}`, `team-${i % 20}`, { limits: { eventsPerSecond: PER_SECOND, eventsBurst: BURST } }),
      );
    // The namespaces' limits far away: only the routes' own limits are under test.
    config.tenantLimits = { namespace: { eventsPerSecond: 100_000, eventsBurst: 100_000 } };
  });
});

afterAll(async () => {
  await ing?.stop();
});

it('admits exactly the burst of concurrent first requests to a route never used, then refuses 429 naming its limit', async () => {
  const started = performance.now();
  const answers = await Promise.all(Array.from({ length: 3 * BURST }, () => send('quiet-17')));
  const refills = Math.ceil(((performance.now() - started) / 1000) * PER_SECOND);
  const accepted = answers.filter((a) => a.status === 200).length;
  expect(accepted).toBeGreaterThanOrEqual(BURST);
  expect(accepted).toBeLessThanOrEqual(BURST + refills);
  const refused = answers.filter((a) => a.status !== 200);
  expect(refused.length).toBeGreaterThan(0);
  for (const r of refused) {
    expect(r.status).toBe(429);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(r.json()).toMatchObject({
      code: 'RATE_LIMITED',
      limit: { scope: 'integration', name: 'quiet-17', perSecond: PER_SECOND, burst: BURST },
    });
  }
});

it('takes a first request that is a batch of the whole burst, and refuses the next event', async () => {
  const batch = Array.from({ length: BURST }, (_, i) => ({ source: `batch-${i}`, severity: 2 }));
  expect((await send('quiet-301', batch)).status).toBe(200);
  const next = await send('quiet-301');
  expect(next.status).toBe(429);
  expect(next.json()).toMatchObject({ limit: { scope: 'integration', name: 'quiet-301' } });
});

it('charges nobody else: a neighbour in the same namespace still gets its own whole burst on its first requests', async () => {
  // quiet-37 shares team-17 with quiet-17, whose burst is spent.
  const answers = [];
  for (let i = 0; i < BURST; i++) answers.push((await send('quiet-37')).status);
  expect(answers).toEqual(Array.from({ length: BURST }, () => 200));
});
