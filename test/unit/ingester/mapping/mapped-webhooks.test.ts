/** The mapped webhook path through the ingest server: dry run, 422, compression, RFC 3339 times. */
import { deflateSync, gzipSync } from 'node:zlib';
import type { Route } from '../../../../api/route.js';
import { DEMO_AUTH, demoRoutes, harness } from '../harness.js';

const custom = (expression: string): Route[] => [
  {
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'WebhookIntegration',
    name: 'demo',
    namespace: 'default',
    credentials: [{ username: 'demo', secret: { plain: 'demo-password' } }],
    mapping: { expression },
  },
];
const EXPR = 'checks.{"source": host, "severity": ok ? "clear" : "critical", "signature": "chk:" & host}';

describe('a custom mapping', () => {
  it('turns one payload into one event per item', async () => {
    const h = await harness({ routes: custom(EXPR) });
    const res = await h.postEvents({
      checks: [
        { host: 'a', ok: true },
        { host: 'b', ok: false },
      ],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ response: { received: 2, processed: 2 } });
    expect(h.sink.events.map((e) => [e.source, e.severity, e.signature])).toEqual([
      ['a', 0, 'chk:a'],
      ['b', 5, 'chk:b'],
    ]);
  });

  it('answers 422 naming the mapped event and field when the result is not valid, and keeps the payload', async () => {
    const h = await harness({ routes: custom(EXPR) });
    const res = await h.postEvents({ checks: [{ ok: true }] });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toMatchObject({
      code: 'MAPPING_FAILED',
      errors: [{ index: 0, field: 'source', message: 'is required' }],
    });
    expect(await h.deadLetter.list({ limit: 1000 })).toHaveLength(1);
    expect(h.sink.events).toHaveLength(0);
  });

  it('answers 422 when a guardrail stops the expression', async () => {
    const h = await harness({ routes: custom('$count([1..1e9])') });
    const res = await h.postEvents({});
    expect(res.statusCode).toBe(422);
    expect(res.json().message).toContain('D2014');
  });
});

describe('?dryRun=true', () => {
  it('shows the mapped and normalised events without accepting, keeping or counting anything', async () => {
    const h = await harness({ routes: custom(EXPR) });
    const res = await h.app.inject({
      method: 'POST',
      url: '/events/webhook_demo?dryRun=true',
      headers: { authorization: DEMO_AUTH, 'content-type': 'application/json' },
      payload: { checks: [{ host: 'a', ok: false }] },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      success: true,
      dryRun: true,
      mapping: 'expression',
      events: [{ source: 'a', severity: 5, severity_name: 'critical', signature: 'chk:a' }],
    });
    expect(h.sink.events).toHaveLength(0);
    expect(await h.registry.getSingleMetricAsString('intake_events_received_total')).not.toMatch(/integration="demo"/);
  });

  it('shows the errors of a payload the mapping cannot turn into events, and keeps nothing', async () => {
    const h = await harness({ routes: custom(EXPR) });
    const res = await h.app.inject({
      method: 'POST',
      url: '/events/webhook_demo?dryRun=true',
      headers: { authorization: DEMO_AUTH, 'content-type': 'application/json' },
      payload: { checks: [{ ok: true }] },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ success: false, dryRun: true, errors: [{ index: 0, field: 'source' }] });
    expect(await h.deadLetter.list({ limit: 1000 })).toHaveLength(0);
  });

  it('needs the integration credentials', async () => {
    const h = await harness({ routes: custom(EXPR) });
    const res = await h.app.inject({
      method: 'POST',
      url: '/events/webhook_demo?dryRun=true',
      headers: { 'content-type': 'application/json' },
      payload: {},
    });
    expect(res.statusCode).toBe(401);
  });
});

describe('compressed bodies', () => {
  const event = JSON.stringify({ source: 'gz', severity: 2 });

  it('accepts gzip and deflate', async () => {
    const h = await harness({ routes: demoRoutes() });
    for (const [encoding, body] of [
      ['gzip', gzipSync(event)],
      ['deflate', deflateSync(event)],
    ] as const) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/events/webhook_demo',
        headers: { authorization: DEMO_AUTH, 'content-type': 'application/json', 'content-encoding': encoding },
        payload: body,
      });
      expect(res.statusCode).toBe(200);
    }
    expect(h.sink.events.map((e) => e.source)).toEqual(['gz', 'gz']);
  });

  it('counts the decompressed size against the body limit (413)', async () => {
    const h = await harness({ routes: demoRoutes(), bodyBytes: 10_000 });
    const big = gzipSync(JSON.stringify({ source: 'x', severity: 1, description: 'a'.repeat(50_000) }));
    expect(big.length).toBeLessThan(10_000);
    const res = await h.app.inject({
      method: 'POST',
      url: '/events/webhook_demo',
      headers: { authorization: DEMO_AUTH, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: big,
    });
    expect(res.statusCode).toBe(413);
  });

  it('answers 415 to another encoding', async () => {
    const h = await harness({ routes: demoRoutes() });
    const res = await h.app.inject({
      method: 'POST',
      url: '/events/webhook_demo',
      headers: { authorization: DEMO_AUTH, 'content-type': 'application/json', 'content-encoding': 'br' },
      payload: event,
    });
    expect(res.statusCode).toBe(415);
    expect(res.json().message).toContain('"br"');
  });
});

describe('agent_time', () => {
  it('also accepts RFC 3339', async () => {
    const h = await harness({ routes: demoRoutes() });
    const res = await h.postEvents([
      { source: 'a', severity: 1, agent_time: '2026-11-22T20:43:01.316853583Z' },
      { source: 'b', severity: 1, agent_time: '2026-11-22T21:43:01+01:00' },
    ]);
    expect(res.statusCode).toBe(200);
    expect(h.sink.events.map((e) => e.agent_time)).toEqual(['2026-11-22T20:43:01.316Z', '2026-11-22T20:43:01.000Z']);
  });

  it('rejects an RFC 3339 time before 1970', async () => {
    const h = await harness({ routes: demoRoutes() });
    const res = await h.postEvents({ source: 'a', severity: 1, agent_time: '0001-01-01T00:00:00Z' });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([expect.objectContaining({ field: 'agent_time' })]);
  });
});
