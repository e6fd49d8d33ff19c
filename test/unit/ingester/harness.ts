/** Builds the ingest server in-process for fastify.inject tests, with an in-memory sink. */
import pino from 'pino';
import { Registry } from 'prom-client';
import type { ExpressionRunner } from '../../../api/mapping/engine.js';
// Loaded as the ingester loads it before a mapped route reaches the table (mapping-engine-loader.ts).
import '../../../api/mapping/engine.js';
import type { Route } from '../../../api/route.js';
import type { ActivityRecorder } from '../../../ingester/activity/recorder.js';
import { AuthThrottle } from '../../../ingester/auth/auth-throttle.js';
import type { NormalisedEvent } from '../../../ingester/core/event.js';
import { IngesterMetrics } from '../../../ingester/core/ingester-metrics.js';
import { RouteTable } from '../../../ingester/routing/route-table.js';
import type { TenantLimiter } from '../../../ingester/limits/tenant-limiter.js';
import type { DeadLetterStore } from '../../../ingester/dead-letters/model.js';
import { SqliteDeadLetters } from '../../../ingester/dead-letters/sqlite-store.js';
import { MappingMetrics } from '../../../ingester/mapping/metrics.js';
import { MappedWebhooks } from '../../../ingester/mapping/mapped-webhooks.js';
import { SeriesStore } from '../../../ingester/series/series-store.js';
import type { Lifecycle } from '../../../ingester/http/context.js';
import { buildIngestServer } from '../../../ingester/http/listener.js';
import type { HandOffResult, EventSink } from '../../../ingester/sinks/sink.js';

import { API_KEY, DEMO_AUTH } from '../../support/credentials.js';

export { API_KEY, DEMO_AUTH };

export const demoRoutes = (): Route[] => [
  {
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'WebhookIntegration',
    name: 'demo',
    namespace: 'default',
    credentials: [{ username: 'demo', secret: { plain: 'demo-password' } }],
  },
  {
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'WebhookIntegration',
    name: 'paused',
    namespace: 'team-a',
    suspended: true,
    credentials: [{ username: 'paused', secret: { plain: 'pw' } }],
  },
  {
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'ApiKey',
    name: 'default',
    namespace: 'default',
    credentials: [{ username: 'default', secret: { plain: API_KEY } }],
  },
];

export class MemorySink implements EventSink {
  readonly name = 'memory';
  readonly events: NormalisedEvent[] = [];
  fail = false;
  report?: (n: number) => HandOffResult;
  async handOff(events: readonly NormalisedEvent[]): Promise<HandOffResult> {
    if (this.fail) throw new Error('sink down');
    this.events.push(...events);
    return this.report ? this.report(events.length) : { processed: events.length, cached: 0 };
  }
  async flush(): Promise<void> {}
  async close(): Promise<void> {}
}

export interface HarnessOptions {
  routes?: Route[];
  maxSeriesPerNamespace?: number;
  maxSeriesTotal?: number;
  bodyBytes?: number;
  failures?: number;
  /** Failures per address across integrations (auth/auth-throttle.ts); default 5 x failures. */
  failuresPerAddress?: number;
  sinks?: EventSink[];
  maxEventLoopDelayMs?: number;
  deadLetter?: DeadLetterStore;
  /** Where tenants' expressions are evaluated (the ingester: worker threads); absent: in-process. */
  mappingRunner?: ExpressionRunner;
  /** Per-tenant limits; absent: none. */
  limiter?: TenantLimiter;
  /** The ingester's logger; absent: silent. */
  logger?: pino.Logger;
  /** Activity per integration and key; absent: none recorded. */
  activity?: ActivityRecorder;
}

export async function harness(options: HarnessOptions = {}) {
  const registry = new Registry();
  const series = new SeriesStore({
    ttlMs: 600_000,
    maxSeriesTotal: options.maxSeriesTotal ?? 1000,
    maxSeriesPerNamespace: options.maxSeriesPerNamespace ?? 100,
  });
  const metrics = new IngesterMetrics(registry, series, { defaultMetrics: false });
  const sink = new MemorySink();
  const lifecycle: Lifecycle = { ready: true, closing: false };
  const deadLetter =
    options.deadLetter ?? new SqliteDeadLetters(':memory:', { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });
  const mapped = new MappedWebhooks({ deadLetter, metrics: new MappingMetrics(registry), eventsPerRequest: 1000 });
  const { table } = RouteTable.build(
    (options.routes ?? demoRoutes()).map((route, i) => ({ source: `test#${i}`, route })),
    { allowPlaintext: true, ...(options.mappingRunner ? { mappingRunner: options.mappingRunner } : {}) },
  );
  const app = await buildIngestServer({
    routes: () => table,
    sinks: options.sinks ?? [sink],
    series,
    metrics,
    limits: {
      bodyBytes: options.bodyBytes ?? 1024 * 1024,
      eventsPerRequest: 1000,
      pointsPerRequest: 10000,
      maxEventLoopDelayMs: options.maxEventLoopDelayMs ?? 1000,
    },
    throttle: new AuthThrottle({
      failures: options.failures ?? 1000,
      windowSeconds: 60,
      blockSeconds: 60,
      ...(options.failuresPerAddress ? { failuresPerAddress: options.failuresPerAddress } : {}),
    }),
    lifecycle,
    logger: options.logger ?? pino({ level: 'silent' }),
    mapped,
    ...(options.limiter ? { limiter: options.limiter } : {}),
    ...(options.activity ? { activity: options.activity } : {}),
  });
  options.activity?.sync(table.entries());
  options.limiter?.sync(table.entries());
  const postEvents = (body: unknown, headers: Record<string, string> = {}, name = 'demo') =>
    app.inject({
      method: 'POST',
      url: `/events/webhook_${name}`,
      headers: { authorization: DEMO_AUTH, 'content-type': 'application/json', ...headers },
      payload: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const postMetrics = (body: unknown, headers: Record<string, string> = { apikey: API_KEY }) =>
    app.inject({
      method: 'POST',
      url: '/v1/integrations/metrics',
      headers: { 'content-type': 'application/json', ...headers },
      payload: typeof body === 'string' ? body : JSON.stringify(body),
    });
  return { app, sink, series, registry, metrics, lifecycle, postEvents, postMetrics, deadLetter, mapped, table };
}
