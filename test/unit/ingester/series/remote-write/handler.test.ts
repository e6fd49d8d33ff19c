/** The metrics route with remote write on: series caps, all-or-nothing and the ack, via fastify.inject. */
import pino from 'pino';
import { Registry } from 'prom-client';
import { AuthThrottle } from '../../../../../ingester/auth/auth-throttle.js';
import { IngesterMetrics } from '../../../../../ingester/core/ingester-metrics.js';
import type { SendOutcome } from '../../../../../ingester/series/remote-write/client.js';
import { resolveRemoteWrite } from '../../../../../ingester/series/remote-write/settings.js';
import { RemoteWriter } from '../../../../../ingester/series/remote-write/writer.js';
import { RouteTable } from '../../../../../ingester/routing/route-table.js';
import { SeriesStore } from '../../../../../ingester/series/series-store.js';
import { buildIngestServer } from '../../../../../ingester/http/listener.js';
import { SqliteDeadLetters } from '../../../../../ingester/dead-letters/sqlite-store.js';
import { MappingMetrics } from '../../../../../ingester/mapping/metrics.js';
import { MappedWebhooks } from '../../../../../ingester/mapping/mapped-webhooks.js';
import { API_KEY, demoRoutes } from '../../harness.js';

let writer: RemoteWriter;
afterEach(() => writer.close(Date.now()));

async function build(maxQueuedSamples: number) {
  const registry = new Registry();
  const series = new SeriesStore({ ttlMs: 600_000, maxSeriesTotal: 1000, maxSeriesPerNamespace: 2 });
  const metrics = new IngesterMetrics(registry, series, { defaultMetrics: false });
  // The receiver never answers (until shut down): whatever is admitted stays queued, so the queue shows what was accepted.
  const send = (_body: Buffer, _tenant: string, _attempt: number, signal: AbortSignal): Promise<SendOutcome> =>
    new Promise((resolve) =>
      signal.addEventListener('abort', () => resolve({ kind: 'retry', reason: 'aborted', error: 'aborted' })),
    );
  writer = new RemoteWriter(
    resolveRemoteWrite({ url: 'http://127.0.0.1:1/api/v1/write', batchSize: 1, maxQueuedSamples }),
    {
      registry,
      logger: pino({ level: 'silent' }),
      seriesTtlMs: 600_000,
      rejected: metrics.pointsRejected,
      send,
    },
  );
  const { table } = RouteTable.build(
    demoRoutes().map((route, i) => ({ source: `t#${i}`, route })),
    { allowPlaintext: true },
  );
  const app = await buildIngestServer({
    routes: () => table,
    sinks: [],
    series,
    remoteWrite: writer,
    metrics,
    limits: { bodyBytes: 1024 * 1024, eventsPerRequest: 1000, pointsPerRequest: 10000, maxEventLoopDelayMs: 1000 },
    throttle: new AuthThrottle({ failures: 1000, windowSeconds: 60, blockSeconds: 60 }),
    lifecycle: { ready: true, closing: false },
    logger: pino({ level: 'silent' }),
    mapped: new MappedWebhooks({
      deadLetter: new SqliteDeadLetters(':memory:', { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 }),
      metrics: new MappingMetrics(registry),
      eventsPerRequest: 1000,
    }),
  });
  const post = (body: unknown) =>
    app.inject({
      method: 'POST',
      url: '/v1/integrations/metrics',
      headers: { 'content-type': 'application/json', apikey: API_KEY },
      payload: JSON.stringify(body),
    });
  return { post, series };
}

const points = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ metric: 'm', data: i, source: `s${from + i}` }));

it('answers 200 "processed" for points queued for sending', async () => {
  const { post } = await build(100);
  const res = await post(points(2));
  expect(res.json()).toEqual({
    response: { processed: 2, cached: 0, received: 2 },
    success: true,
    message: 'Processed 2 data point(s)',
  });
  expect(writer.queuedSamples).toBe(2);
});

it('keeps the per-namespace series cap: past it the request gets 429 and nothing of it is queued', async () => {
  const { post } = await build(100);
  const res = await post(points(3));
  expect(res.statusCode).toBe(429);
  expect(res.json().message).toMatch(/series cap reached for namespace default/);
  expect(writer.queuedSamples).toBe(0);
});

it('answers 503 when the queue is full and writes nothing of the request to the series either', async () => {
  const { post, series } = await build(1);
  expect((await post(points(1))).statusCode).toBe(200);
  const res = await post(points(1, 1));
  expect(res.statusCode).toBe(503);
  expect(res.headers['retry-after']).toBe('5');
  expect(series.activeSeries).toBe(1);
});
