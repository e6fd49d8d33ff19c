import pino from 'pino';
import type { TenantLimiter } from '../../../../ingester/limits/tenant-limiter.js';
import { basic } from '../../../support/credentials.js';
import { hashScrypt } from '../../../../api/verifiers.js';
import { API_KEY, DEMO_AUTH, demoRoutes, harness } from '../harness.js';

const event = { source: 'web-01', severity: 'critical', class: 'cpu', type: 'high' };

describe('POST /events/webhook_<name>', () => {
  it('accepts one event with the exact body of the interface document', async () => {
    const h = await harness();
    const res = await h.postEvents(event);
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(
      '{"response":{"processed":1,"cached":0,"received":1},"success":true,"message":"Processed 1 event(s)"}',
    );
    expect(h.sink.events[0]).toMatchObject({
      integration: 'demo',
      namespace: 'default',
      severity: 5,
      signature: 'web-01:cpu:high',
    });
  });

  it('accepts a batch and counts every event', async () => {
    const h = await harness();
    const res = await h.postEvents([event, event, { ...event, severity: 0 }]);
    expect(res.json()).toEqual({
      response: { processed: 3, cached: 0, received: 3 },
      success: true,
      message: 'Processed 3 event(s)',
    });
    expect(h.sink.events).toHaveLength(3);
  });

  it('reports cached when a sink only spooled the events', async () => {
    const h = await harness();
    h.sink.report = (n) => ({ processed: 0, cached: n });
    expect((await h.postEvents([event, event])).json().response).toEqual({ processed: 0, cached: 2, received: 2 });
  });

  it('answers 503 and acknowledges nothing when a sink fails', async () => {
    const h = await harness();
    h.sink.fail = true;
    const res = await h.postEvents(event);
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBeDefined();
    expect(res.json()).toMatchObject({ success: false, code: 'SINK_FAILED' });
  });

  it.each([
    ['wrong password', basic('demo', 'nope'), 'demo'],
    ['wrong username', basic('other', 'demo-password'), 'demo'],
    ['unknown integration', DEMO_AUTH, 'nosuch'],
    ['no credentials', '', 'demo'],
    ['a non-Basic scheme', 'Bearer abc', 'demo'],
    ['malformed base64', 'Basic !!!', 'demo'],
  ])('answers 401 with one indistinguishable body for %s', async (_what, authorization, name) => {
    const h = await harness();
    const res = await h.postEvents(event, { authorization }, name);
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Basic /);
    expect(res.body).toBe('{"success":false,"message":"missing or invalid credentials","code":"UNAUTHORIZED"}');
  });

  it('answers 403 for a suspended integration, only after authentication', async () => {
    const h = await harness();
    expect((await h.postEvents(event, { authorization: basic('paused', 'pw') }, 'paused')).statusCode).toBe(403);
    expect((await h.postEvents(event, { authorization: basic('paused', 'bad') }, 'paused')).statusCode).toBe(401);
  });

  it('throttles an address after repeated failures, even when it then sends the right password', async () => {
    const h = await harness({ failures: 2 });
    const bad = { authorization: basic('demo', 'guess') };
    expect((await h.postEvents(event, bad)).statusCode).toBe(401);
    expect((await h.postEvents(event, bad)).statusCode).toBe(401);
    const third = await h.postEvents(event, bad);
    expect(third.statusCode).toBe(429);
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
    const right = await h.postEvents(event);
    expect(right.statusCode).toBe(429);
    expect(right.json().code).toBe('AUTH_THROTTLED');
  });

  it("blocks an address only for the integration it failed at: another tenant's credentials from it still pass", async () => {
    const other = {
      apiVersion: 'intake.dev/v1alpha1' as const,
      kind: 'WebhookIntegration' as const,
      name: 'team-b',
      namespace: 'team-b',
      credentials: [{ username: 'b', secret: { plain: 'b-password' } }],
    };
    const h = await harness({ failures: 2, routes: [...demoRoutes(), other] });
    const bad = { authorization: basic('demo', 'guess') };
    for (let i = 0; i < 3; i++) await h.postEvents(event, bad);
    expect((await h.postEvents(event)).statusCode).toBe(429);
    expect((await h.postEvents(event, { authorization: basic('b', 'b-password') }, 'team-b')).statusCode).toBe(200);
    // A wrong password for team-b is still a 401: team-b's own pair has failed once only.
    expect((await h.postEvents(event, { authorization: basic('b', 'guess') }, 'team-b')).statusCode).toBe(401);
  });

  it("blocks an address only for the API key identity it failed at: another tenant's key from it still passes", async () => {
    const key = (namespace: string, secret: string) => ({
      apiVersion: 'intake.dev/v1alpha1' as const,
      kind: 'ApiKey' as const,
      name: 'k',
      namespace,
      credentials: [{ username: `${namespace}-user`, secret: { plain: secret } }],
    });
    const h = await harness({
      failures: 2,
      routes: [...demoRoutes(), key('team-a', 'team-a_secret'), key('team-b', 'team-b_secret')],
    });
    const point = { metric: 'm', data: 1, source: 's' };
    for (let i = 0; i < 3; i++) await h.postMetrics(point, { apikey: `team-a_guess${i}` });
    // A's key identity is blocked from this address, in both forms, the right key too...
    expect((await h.postMetrics(point, { apikey: 'team-a_secret' })).statusCode).toBe(429);
    expect((await h.postMetrics(point, { authorization: basic('team-a-user', 'team-a_secret') })).statusCode).toBe(429);
    // ...B's key from it is not, in either form, nor the example's key.
    expect((await h.postMetrics(point, { apikey: 'team-b_secret' })).statusCode).toBe(200);
    expect((await h.postMetrics(point, { authorization: basic('team-b-user', 'team-b_secret') })).statusCode).toBe(200);
    expect((await h.postMetrics(point)).statusCode).toBe(200);
    // Keys naming nobody count against the address alone: no identity of theirs gets blocked.
    for (let i = 0; i < 3; i++) expect((await h.postMetrics(point, { apikey: `nobody_${i}` })).statusCode).toBe(401);
  });

  it('from a suspect address, looks up no key that names no identity; keys naming one still pass', async () => {
    const h = await harness({
      failures: 20,
      failuresPerAddress: 3,
      routes: [
        ...demoRoutes(),
        {
          apiVersion: 'intake.dev/v1alpha1' as const,
          kind: 'ApiKey' as const,
          name: 'k',
          namespace: 'team-u',
          credentials: [{ username: 'u', secret: { plain: 'unprefixed-key' } }],
        },
      ],
    });
    const point = { metric: 'm', data: 1, source: 's' };
    expect((await h.postMetrics(point, { apikey: 'unprefixed-key' })).statusCode).toBe(200);
    for (let i = 0; i < 4; i++) await h.postMetrics(point, { apikey: `guess${i}` });
    const refused = await h.postMetrics(point, { apikey: 'unprefixed-key' });
    const wrong = await h.postMetrics(point, { apikey: 'guess-again' });
    expect(refused.statusCode).toBe(429);
    expect(refused.body).toBe(wrong.body);
    // The example's key names its namespace: checked as usual.
    expect((await h.postMetrics(point)).statusCode).toBe(200);
  });

  it('bounds failures across integrations per address: past it failures get 429, valid credentials still pass', async () => {
    const h = await harness({ failures: 1000, failuresPerAddress: 5 });
    const statuses = [];
    // A stranger enumerating names: unknown names have no pair of their own, only the address's budget.
    for (let i = 0; i < 7; i++)
      statuses.push((await h.postEvents(event, { authorization: basic('x', 'y') }, `guess-${i}`)).statusCode);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
    // A wrong password for a published integration answers alike (nothing says which names exist)...
    expect((await h.postEvents(event, { authorization: basic('demo', 'guess') })).statusCode).toBe(429);
    // ...and the right one is accepted.
    expect((await h.postEvents(event)).statusCode).toBe(200);
  });

  it('never refuses a suspect address scrypt credentials for an integration it did not try', async () => {
    const salt = Buffer.alloc(16, 1);
    const scryptRoute = async (name: string) => ({
      apiVersion: 'intake.dev/v1alpha1' as const,
      kind: 'WebhookIntegration' as const,
      name,
      namespace: name,
      credentials: [{ username: name, secret: { scrypt: await hashScrypt(`${name}-pw`, salt, 4) } }],
    });
    const h = await harness({
      failures: 1000,
      failuresPerAddress: 3,
      routes: [...demoRoutes(), await scryptRoute('team-x'), await scryptRoute('team-y')],
    });
    // A stranger guesses at team-x until the address is suspect.
    for (let i = 0; i < 4; i++) await h.postEvents(event, { authorization: basic('team-x', `guess-${i}`) }, 'team-x');
    // team-y's sender from that address, never verified before: checked and accepted.
    expect((await h.postEvents(event, { authorization: basic('team-y', 'team-y-pw') }, 'team-y')).statusCode).toBe(200);
    // At team-x, which the address kept trying, a new (uncached) scrypt check is not started.
    expect((await h.postEvents(event, { authorization: basic('team-x', 'team-x-pw') }, 'team-x')).statusCode).toBe(429);
  });

  it.each([
    ['application/json', 200],
    ['application/json; charset=utf-8', 200],
    ['application/vnd.acme+json', 200],
    ['text/plain', 200],
    ['text/html', 415],
    ['application/x-www-form-urlencoded', 415],
    ['application/json; charset=latin1', 415],
  ])('content type %s gives %i', async (contentType, status) => {
    const h = await harness();
    const res = await h.postEvents(event, { 'content-type': contentType });
    expect(res.statusCode).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
  });

  it('answers 413 past the body limit', async () => {
    const h = await harness({ bodyBytes: 1000 });
    const res = await h.postEvents({ ...event, description: 'x'.repeat(2000) });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ success: false, code: 'PAYLOAD_TOO_LARGE' });
  });

  it('rejects a whole batch when one event is invalid, naming index and field', async () => {
    const h = await harness();
    const res = await h.postEvents([event, { ...event, severity: 9 }, { severity: 1 }]);
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.success).toBe(false);
    expect(body.errors).toEqual([
      { index: 1, field: 'severity', message: expect.stringMatching(/0\.\.5/) },
      { index: 2, field: 'source', message: 'is required' },
    ]);
    expect(h.sink.events).toHaveLength(0);
  });

  it('rejects invalid JSON with 400', async () => {
    const h = await harness();
    const res = await h.postEvents('{"source":');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ success: false, code: 'INVALID_JSON' });
  });

  it('rejects __proto__ keys', async () => {
    const h = await harness();
    const res = await h.postEvents('{"source":"a","severity":1,"__proto__":{"polluted":true}}');
    expect(res.statusCode).toBe(400);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('answers 405 with Allow for other methods, 404 JSON for other paths', async () => {
    const h = await harness();
    const get = await h.app.inject({ method: 'GET', url: '/events/webhook_demo' });
    expect(get.statusCode).toBe(405);
    expect(get.headers.allow).toBe('POST');
    const missing = await h.app.inject({ method: 'POST', url: '/events/other' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ success: false, code: 'NOT_FOUND' });
  });

  it('answers 503 with Retry-After when the event loop is overloaded', async () => {
    const h = await harness({ maxEventLoopDelayMs: 20 });
    // Block the event loop past under-pressure's 1 s sample, as a CPU-bound overload would.
    const until = Date.now() + 1100;
    while (Date.now() < until);
    await new Promise((r) => setTimeout(r, 50));
    const res = await h.postEvents(event);
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBeDefined();
    expect(res.json()).toMatchObject({ success: false, code: 'UNAVAILABLE' });
    await h.app.close();
  });

  it('answers 503 with Retry-After while shutting down', async () => {
    const h = await harness();
    h.lifecycle.closing = true;
    const res = await h.postEvents(event);
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
  });

  it('sets helmet security headers on every response, errors included', async () => {
    const h = await harness();
    for (const res of [await h.postEvents(event), await h.app.inject({ method: 'GET', url: '/nowhere' })]) {
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['content-security-policy']).toBe("default-src 'none';frame-ancestors 'none'");
      expect(res.headers['strict-transport-security']).toMatch(/max-age=\d+/);
    }
  });

  it('counts requests by endpoint and status', async () => {
    const h = await harness();
    await h.postEvents(event);
    await h.postEvents(event, { authorization: basic('demo', 'x') });
    const text = await h.registry.metrics();
    expect(text).toContain('intake_http_requests_total{endpoint="events",status="200"} 1');
    expect(text).toContain('intake_http_requests_total{endpoint="events",status="401"} 1');
    expect(text).toContain('intake_auth_failures_total{endpoint="events",reason="invalid"} 1');
    expect(text).toContain('intake_events_processed_total{integration="demo",namespace="default"} 1');
  });
});

describe('POST /v1/integrations/metrics', () => {
  const point = { metric: 'cpu.load', data: 0.5, source: 'web-01', tags: { env: 'prod' } };

  it('accepts a point with the apiKey header', async () => {
    const h = await harness();
    const res = await h.postMetrics(point);
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(
      '{"response":{"processed":1,"cached":0,"received":1},"success":true,"message":"Processed 1 data point(s)"}',
    );
    expect(h.series.render()).toContain('cpu_load{env="prod",key="",namespace="default",source="web-01"} 0.5');
  });

  it('accepts Basic <username>:<key> and rejects the key under another username', async () => {
    const h = await harness();
    expect((await h.postMetrics(point, { authorization: basic('default', API_KEY) })).statusCode).toBe(200);
    expect((await h.postMetrics(point, { authorization: basic('other', API_KEY) })).statusCode).toBe(401);
  });

  it.each([
    ['no credentials', {}],
    ['a wrong key', { apikey: 'default_wrong' }],
    ['an empty key', { apikey: '' }],
  ])('answers 401 for %s', async (_what, headers) => {
    const h = await harness();
    const res = await h.postMetrics(point, headers as Record<string, string>);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' });
  });

  it('never lets a sender write another namespace: the namespace tag is renamed', async () => {
    const h = await harness();
    await h.postMetrics({ ...point, tags: { namespace: 'kube-system' } });
    expect(h.series.render()).toContain('namespace="default"');
    expect(h.series.render()).toContain('tag_namespace="kube-system"');
  });

  it('answers 429 naming the cap when new series pass it; existing series keep updating', async () => {
    const h = await harness({ maxSeriesPerNamespace: 2 });
    expect(
      (
        await h.postMetrics([
          { ...point, key: 'a' },
          { ...point, key: 'b' },
        ])
      ).statusCode,
    ).toBe(200);
    const over = await h.postMetrics({ ...point, key: 'c' });
    expect(over.statusCode).toBe(429);
    expect(over.json().message).toMatch(/cap 2/);
    expect((await h.postMetrics({ ...point, key: 'a', data: 7 })).statusCode).toBe(200);
    expect(h.series.render()).toContain('key="a",namespace="default",source="web-01"} 7');
  });

  it('rejects the whole batch if one point is invalid', async () => {
    const h = await harness();
    const res = await h.postMetrics([point, { ...point, data: 'NaN' }]);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([{ index: 1, field: 'data', message: expect.any(String) }]);
    expect(h.series.activeSeries).toBe(0);
  });

  it('answers 405 for GET', async () => {
    const h = await harness();
    expect((await h.app.inject({ method: 'GET', url: '/v1/integrations/metrics' })).statusCode).toBe(405);
  });
});

describe('an unexpected failure', () => {
  it('answers 500 INTERNAL and logs the error once with the request id; no logger is made per request', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino(
      { level: 'info' },
      { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    const limiter = {
      refusalFor: () => undefined,
      admitRequest: () => undefined,
      take: () => {
        throw new TypeError('a bug');
      },
      sync: () => {},
    } as unknown as TenantLimiter;
    const h = await harness({ logger, limiter });
    let requestLogger: unknown;
    h.app.addHook('onRequest', (req, _reply, done) => ((requestLogger = req.log), done()));
    const res = await h.postEvents({ source: 'web-01', severity: 'critical', class: 'cpu', type: 'high' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toMatchObject({ success: false, code: 'INTERNAL' });
    expect(requestLogger).toBe(h.app.log);
    const failed = lines.filter((l) => l.msg === 'request failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ level: 50, reqId: expect.any(String), err: { message: 'a bug' } });
  });
});
