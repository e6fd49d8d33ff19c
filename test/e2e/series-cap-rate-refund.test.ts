/**
 * A data point request that the series cap refuses (429 SERIES_LIMIT: it would create series past
 * the key's maxSeries) spends none of its API key's or namespace's rate, through the built
 * ingester: nothing of it was stored, so the key's points to the series it already has are not
 * refused 429 RATE_LIMITED for points it was never allowed to write.
 */
import { post, startIngester, type RunningIngester } from './support/ingester.js';

const KEY = 'capped_0123456789abcdef0123456789abcdef';
const PER_REQUEST = 10;
/** The key's burst, in requests of PER_REQUEST points. */
const BURST = 40;
/** Refusals for new series: far more points than the bucket refills (1 a second) while the test runs. */
const REFUSED = 25;
let ing: RunningIngester | undefined;

afterEach(async () => {
  await ing?.stop('SIGKILL');
  ing = undefined;
});

it('a request refused for the series cap does not spend the rate: the key still writes its existing series', async () => {
  ing = await startIngester((c) => {
    (c.routes as unknown[]).push({
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'ApiKey',
      name: 'capped',
      namespace: 'team-c',
      credentials: [{ username: 'capped', secret: { plain: KEY } }],
      // BURST requests' points, refilled one a second (the smallest rate): what a request spends stays spent.
      limits: { dataPointsPerSecond: 1, dataPointsBurst: BURST * PER_REQUEST, maxSeries: PER_REQUEST },
    });
  });
  const url = `${ing.url}/v1/integrations/metrics`;
  const send = (sources: string, i: number) =>
    post(
      url,
      Array.from({ length: PER_REQUEST }, (_, k) => ({ metric: 'capped.refund', data: i, source: `${sources}-${k}` })),
      { apikey: KEY },
    );

  // The key's series: all of its cap.
  expect((await send('kept', 0)).status).toBe(200);
  // New series past the cap: refused, nothing stored.
  for (let i = 0; i < REFUSED; i++) {
    const res = await send(`new${i}`, i);
    expect(res.status).toBe(429);
    expect(res.json().code).toBe('SERIES_LIMIT');
  }
  // The existing series keep updating, for the whole rest of the burst.
  const after: number[] = [];
  for (let k = 1; k < BURST; k++) after.push((await send('kept', k)).status);
  expect(after).toEqual(Array.from({ length: BURST - 1 }, () => 200));
}, 60_000);
