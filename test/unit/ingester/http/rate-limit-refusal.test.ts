/**
 * A sender far over its rate limit makes most of an ingester's requests. Its refusal before the
 * body is read is answered in the authentication hook, without a throw and fastify's error route
 * (both measurable in each refusal's cost), with the same answer the error route gives. The e2e
 * test (test/e2e/tenant-limits.test.ts) compares the two paths byte for byte through the process.
 */
import { jest } from '@jest/globals';
import type { Route } from '../../../../api/route.js';
import type { IntakeError } from '../../../../ingester/core/errors.js';
import { TenantLimiter } from '../../../../ingester/limits/tenant-limiter.js';
import { demoRoutes, harness } from '../harness.js';

const event = { source: 'web-01', severity: 'critical', class: 'cpu', type: 'high' };

const limited = (): Route[] =>
  demoRoutes().map((r) => (r.name === 'demo' ? { ...r, limits: { eventsPerSecond: 1, eventsBurst: 1 } } : r));

describe('a request over its rate limit, before its body is read', () => {
  it('is answered 429 without going through the error route, with the body and headers the error route renders', async () => {
    const limiter = new TenantLimiter({ mode: 'file', now: () => 0 });
    const h = await harness({ routes: limited(), limiter });
    const onError = jest.fn((_req: unknown, _reply: unknown, _err: unknown, done: () => void) => done());
    h.app.addHook('onError', onError);
    expect((await h.postEvents(event)).statusCode).toBe(200);

    const refused = await h.postEvents(event);
    expect(refused.statusCode).toBe(429);
    expect(onError).not.toHaveBeenCalled();
    // What admitRequest throws (and the error route would render) is what was sent.
    let thrown: IntakeError | undefined;
    try {
      limiter.admitRequest(h.table.webhook('demo')!);
    } catch (err) {
      thrown = err as IntakeError;
    }
    expect(refused.body).toBe(JSON.stringify(thrown!.toBody()));
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(refused.headers['x-content-type-options']).toBe('nosniff');
    expect(h.sink.events).toHaveLength(1);
  });

  it('still goes through the error route when refused after validation (a batch that finds the bucket emptied)', async () => {
    let nowMs = 0;
    const limiter = new TenantLimiter({ mode: 'file', now: () => nowMs });
    const h = await harness({
      routes: demoRoutes().map((r) =>
        r.name === 'demo' ? { ...r, limits: { eventsPerSecond: 1, eventsBurst: 2 } } : r,
      ),
      limiter,
    });
    const onError = jest.fn((_req: unknown, _reply: unknown, _err: unknown, done: () => void) => done());
    h.app.addHook('onError', onError);
    expect((await h.postEvents(event)).statusCode).toBe(200);
    nowMs = 1; // one token left: admitted, but a batch of two is more than the bucket holds
    const refused = await h.postEvents([event, event]);
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ code: 'RATE_LIMITED', limit: { requested: 2 } });
    expect(onError).toHaveBeenCalledTimes(1);
  });
});

describe('a request refused after its rate was taken', () => {
  it('gives the events back when the hand-off refuses: the sink failing (503) spends none of the rate', async () => {
    const limiter = new TenantLimiter({ mode: 'file', now: () => 0 });
    const h = await harness({
      routes: demoRoutes().map((r) =>
        r.name === 'demo' ? { ...r, limits: { eventsPerSecond: 1, eventsBurst: 3 } } : r,
      ),
      limiter,
    });
    h.sink.fail = true;
    for (let i = 0; i < 5; i++) expect((await h.postEvents([event, event, event])).statusCode).toBe(503);
    h.sink.fail = false;
    // The whole burst is still there, and no more than it.
    expect((await h.postEvents([event, event, event])).statusCode).toBe(200);
    expect((await h.postEvents(event)).statusCode).toBe(429);
  });

  it('gives the data points back when the series cap refuses them (429 SERIES_LIMIT)', async () => {
    const limiter = new TenantLimiter({ mode: 'file', now: () => 0 });
    const h = await harness({
      routes: demoRoutes().map((r) =>
        r.kind === 'ApiKey' ? { ...r, limits: { dataPointsPerSecond: 1, dataPointsBurst: 4, maxSeries: 2 } } : r,
      ),
      limiter,
    });
    const point = (source: string) => ({ metric: 'm', data: 1, source });
    expect((await h.postMetrics([point('a'), point('b')])).statusCode).toBe(200);
    for (let i = 0; i < 5; i++) {
      const refused = await h.postMetrics([point(`new-${i}`), point(`other-${i}`)]);
      expect(refused.statusCode).toBe(429);
      expect(refused.json()).toMatchObject({ code: 'SERIES_LIMIT' });
    }
    // The existing series: the two points left of the burst, and no more.
    expect((await h.postMetrics([point('a'), point('b')])).statusCode).toBe(200);
    expect((await h.postMetrics([point('a')])).json()).toMatchObject({ code: 'RATE_LIMITED' });
  });
});
