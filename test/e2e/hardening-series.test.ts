/**
 * Attacks through the metrics endpoint, against the built process: long label texts that made
 * series lookups slow, label texts that broke every tenant's scrape, unbounded `time` values, and
 * one tenant's HELP text shown above another's series.
 */
import { median } from '../support/stats.js';
import { API_KEY, post, startIngester, type RunningIngester } from './support/ingester.js';

const TEAM_B_KEY = 'team-b_fedcba9876543210fedcba9876543210';
const teamB = (c: Record<string, unknown>): void => {
  (c.routes as unknown[]).push({
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'ApiKey',
    name: 'b',
    namespace: 'team-b',
    credentials: [{ username: 'team-b', secret: { plain: TEAM_B_KEY } }],
  });
};

/** A point whose 20 tag values are 1000 characters long, all alike but for their last digits. */
const longPoint = (i: number) => {
  const tags: Record<string, string> = {};
  for (let t = 0; t < 20; t++) tags[`t${t}`] = `${'x'.repeat(990)}${String(i).padStart(10, '0')}`;
  return { metric: 'long_labels', data: i, source: 's', tags };
};

describe('series with long label texts (limit raised to allow them)', () => {
  let ing: RunningIngester;
  beforeAll(async () => {
    ing = await startIngester((c) => {
      c.limits = { ...(c.limits as object), maxSeriesLabelChars: 40_000, bodyBytes: 8 * 1024 * 1024 };
    });
  });
  afterAll(async () => {
    await ing.stop();
  });

  it('costs no more per request as such series accumulate', async () => {
    const url = `${ing.url}/v1/integrations/metrics`;
    let next = 0;
    const timedRequest = async (): Promise<number> => {
      const points = Array.from({ length: 26 }, () => longPoint(next++));
      const started = performance.now();
      const res = await post(url, points, { apikey: API_KEY });
      expect(res.status).toBe(200);
      return performance.now() - started;
    };
    const early = median([await timedRequest(), await timedRequest(), await timedRequest()]);
    while (next < 3000) {
      const res = await post(
        url,
        Array.from({ length: 200 }, () => longPoint(next++)),
        { apikey: API_KEY },
      );
      expect(res.status).toBe(200);
    }
    const late = median([await timedRequest(), await timedRequest(), await timedRequest()]);
    // Before: 96 ms at 1k series, 683 ms at 3k (every lookup compared the long texts).
    expect(late).toBeLessThan(early * 4 + 100);
  }, 120_000);

  it('streams a large exposition in chunks instead of building one string', async () => {
    const res = await fetch(`${ing.adminUrl}/metrics/ingested`);
    expect(res.status).toBe(200);
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const text = await res.text();
    expect(text.match(/^long_labels\{/gm)?.length).toBeGreaterThanOrEqual(3000);
  }, 60_000);
});

describe('label size, time and HELP (default limits)', () => {
  let ing: RunningIngester;
  beforeAll(async () => {
    ing = await startIngester(teamB);
  });
  afterAll(async () => {
    await ing.stop();
  });
  const url = () => `${ing.url}/v1/integrations/metrics`;

  it('refuses a series whose label text passes the cap, naming the field and the limit', async () => {
    // 32 tags of 1024 characters that all need escaping: the attack that broke every scrape.
    const tags: Record<string, string> = {};
    for (let t = 0; t < 32; t++) tags[`t${t}`] = '"\\'.repeat(512);
    const res = await post(url(), [{ metric: 'm', data: 1, source: 's', tags }], { apikey: API_KEY });
    expect(res.status).toBe(400);
    expect(res.json()).toMatchObject({ errors: [{ index: 0, field: 'tags' }] });
    expect(String(res.json().errors && (res.json().errors as Array<{ message: string }>)[0]?.message)).toMatch(
      /limit is 2048 \(limits\.maxSeriesLabelChars\)/,
    );
    expect((await fetch(`${ing.adminUrl}/metrics/ingested`)).status).toBe(200);
  });

  it.each([
    ['1e400 (Infinity once parsed)', '[{"metric":"t_bound","data":1,"source":"s","time":1e400}]'],
    ['a 16-digit string', '[{"metric":"t_bound","data":1,"source":"s","time":"9999999999999999"}]'],
    [
      'an hour ahead',
      JSON.stringify([{ metric: 't_bound', data: 1, source: 's', time: Math.floor(Date.now() / 1000) + 3600 }]),
    ],
  ])('refuses a time of %s with 400 naming the field, and later writes still apply', async (_what, body) => {
    const res = await post(url(), body, { apikey: API_KEY });
    expect(res.status).toBe(400);
    expect(res.json()).toMatchObject({ errors: [{ index: 0, field: 'time' }] });
    expect((await post(url(), [{ metric: 't_bound', data: 7, source: 's' }], { apikey: API_KEY })).status).toBe(200);
    expect(await (await fetch(`${ing.adminUrl}/metrics/ingested`)).text()).toMatch(
      /^t_bound\{key="",namespace="default",source="s"\} 7$/m,
    );
  });

  it("never shows one tenant's description above another tenant's series", async () => {
    expect(
      (
        await post(url(), [{ metric: 'shared_name', data: 1, source: 's', description: 'from default' }], {
          apikey: API_KEY,
        })
      ).status,
    ).toBe(200);
    let text = await (await fetch(`${ing.adminUrl}/metrics/ingested`)).text();
    expect(text).toContain('# HELP shared_name from default\n');
    expect(
      (
        await post(url(), [{ metric: 'shared_name', data: 2, source: 's', description: 'team-b says otherwise' }], {
          apikey: TEAM_B_KEY,
        })
      ).status,
    ).toBe(200);
    text = await (await fetch(`${ing.adminUrl}/metrics/ingested`)).text();
    expect(text).not.toMatch(/# HELP shared_name/);
    expect(text).toMatch(/^shared_name\{key="",namespace="team-b",source="s"\} 2$/m);
  });
});
