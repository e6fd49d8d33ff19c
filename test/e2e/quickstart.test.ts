/** The quick start as a user drives it: the built ingester, the example config, real HTTP. */
import { writeFileSync } from 'node:fs';
import { readFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { waitFor } from '../support/waiting.js';
import { API_KEY, basic, DEMO, eventLines, post, startIngester, type RunningIngester } from './support/ingester.js';

describe('standalone ingester with examples/intake.yaml', () => {
  let ing: RunningIngester;
  const events = () => `${ing.url}/events/webhook_demo`;
  const metrics = () => `${ing.url}/v1/integrations/metrics`;
  const auth = basic(DEMO.user, DEMO.password);

  beforeAll(async () => {
    ing = await startIngester();
  });
  afterAll(async () => {
    await ing.stop();
  });

  it('accepts one event with the exact body and writes it, normalised, to stdout', async () => {
    const res = await post(
      events(),
      { source: 'web-01', severity: 'major', class: 'disk', region: 'eu-1', run_id: 'q1' },
      { authorization: auth },
    );
    expect(res.status).toBe(200);
    expect(res.text).toBe(
      '{"response":{"processed":1,"cached":0,"received":1},"success":true,"message":"Processed 1 event(s)"}',
    );
    const line = await waitFor('event on stdout', async () =>
      eventLines(ing.stdout()).find((e) => (e.custom_info as Record<string, unknown>)?.run_id === 'q1'),
    );
    expect(line).toMatchObject({
      integration: 'demo',
      namespace: 'default',
      severity: 4,
      severity_name: 'major',
      signature: 'web-01:disk:',
      custom_info: { region: 'eu-1', run_id: 'q1' },
    });
    expect(line.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(line.received_at as string)).toBeGreaterThan(0);
  });

  it('accepts a batch', async () => {
    const res = await post(
      events(),
      [1, 2, 3].map((i) => ({ source: `h${i}`, severity: i })),
      { authorization: auth },
    );
    expect(res.json()).toEqual({
      response: { processed: 3, cached: 0, received: 3 },
      success: true,
      message: 'Processed 3 event(s)',
    });
  });

  it('answers wrong password and unknown integration with the same 401', async () => {
    const wrong = await post(events(), { source: 's', severity: 1 }, { authorization: basic('demo', 'nope') });
    const unknown = await post(
      `${ing.url}/events/webhook_nosuch`,
      { source: 's', severity: 1 },
      { authorization: auth },
    );
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.text).toBe(unknown.text);
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Basic /);
  });

  it('accepts metrics by apiKey header and by Basic, exposed with the namespace label', async () => {
    expect((await post(metrics(), { metric: 'e2e.load', data: 2, source: 'h1' }, { apikey: API_KEY })).text).toBe(
      '{"response":{"processed":1,"cached":0,"received":1},"success":true,"message":"Processed 1 data point(s)"}',
    );
    expect(
      (
        await post(
          metrics(),
          { metric: 'e2e.temp', data: '21.5', source: 'h1' },
          { authorization: basic('default', API_KEY) },
        )
      ).status,
    ).toBe(200);
    const text = await (await fetch(`${ing.adminUrl}/metrics/ingested`)).text();
    expect(text).toContain('e2e_load{key="",namespace="default",source="h1"} 2');
    expect(text).toContain('e2e_temp{key="",namespace="default",source="h1"} 21.5');
    const own = await (await fetch(`${ing.adminUrl}/metrics`)).text();
    expect(own).toMatch(/intake_http_requests_total\{endpoint="metrics",status="200"\} \d+/);
  });

  it('answers 404 and 405 as JSON', async () => {
    const missing = await fetch(`${ing.url}/nope`, { method: 'POST' });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ success: false });
    const get = await fetch(events());
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });

  it('reloads a changed file, and keeps the current table when the new file is bad', async () => {
    const config = parse(readFileSync(ing.configPath, 'utf8')) as {
      routes: Array<{ credentials: Array<{ secret: unknown }> }>;
    };
    (config.routes[0] as { credentials: Array<{ secret: unknown }> }).credentials[0] = {
      username: 'demo',
      secret: { plain: 'rotated-password' },
    } as never;
    writeFileSync(ing.configPath, stringify(config));
    await waitFor(
      'new password accepted',
      async () =>
        (await post(events(), { source: 's', severity: 1 }, { authorization: basic('demo', 'rotated-password') }))
          .status === 200,
      10_000,
      100,
    );
    expect((await post(events(), { source: 's', severity: 1 }, { authorization: auth })).status).toBe(401);
    writeFileSync(ing.configPath, 'routes: [{kind: Nonsense}]\n');
    await waitFor('reload error logged', async () => ing.stderr().includes('routes not reloaded'), 10_000, 100);
    expect(
      (await post(events(), { source: 's', severity: 1 }, { authorization: basic('demo', 'rotated-password') })).status,
    ).toBe(200);
  });
});

describe('limits in a running ingester', () => {
  it('blocks an address after repeated failed authentications, even with the right password', async () => {
    const ing = await startIngester((c) => (c.authThrottle = { failures: 3, window: '1m', block: '1m' }));
    try {
      const url = `${ing.url}/events/webhook_demo`;
      for (let i = 0; i < 3; i++)
        expect(
          (await post(url, { source: 's', severity: 1 }, { authorization: basic('demo', `guess${i}`) })).status,
        ).toBe(401);
      expect((await post(url, { source: 's', severity: 1 }, { authorization: basic('demo', 'guess') })).status).toBe(
        429,
      );
      const right = await post(url, { source: 's', severity: 1 }, { authorization: basic(DEMO.user, DEMO.password) });
      expect(right.status).toBe(429);
      expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await ing.stop();
    }
  });

  it('refuses new series past the namespace cap with 429, existing ones keep updating', async () => {
    const ing = await startIngester((c) => ((c.limits as Record<string, number>).maxSeriesPerNamespace = 2));
    try {
      const url = `${ing.url}/v1/integrations/metrics`;
      expect(
        (
          await post(
            url,
            [
              { metric: 'm', data: 1, source: 'a' },
              { metric: 'm', data: 1, source: 'b' },
            ],
            { apikey: API_KEY },
          )
        ).status,
      ).toBe(200);
      const over = await post(url, { metric: 'm', data: 1, source: 'c' }, { apikey: API_KEY });
      expect(over.status).toBe(429);
      expect(over.json().message).toMatch(/cap 2/);
      expect((await post(url, { metric: 'm', data: 9, source: 'a' }, { apikey: API_KEY })).status).toBe(200);
    } finally {
      await ing.stop();
    }
  });

  it('answers 403 for a suspended integration', async () => {
    const ing = await startIngester(
      (c) => (((c.routes as Array<Record<string, unknown>>)[0] as Record<string, unknown>).suspended = true),
    );
    try {
      expect(
        (
          await post(
            `${ing.url}/events/webhook_demo`,
            { source: 's', severity: 1 },
            { authorization: basic(DEMO.user, DEMO.password) },
          )
        ).status,
      ).toBe(403);
    } finally {
      await ing.stop();
    }
  });
});
