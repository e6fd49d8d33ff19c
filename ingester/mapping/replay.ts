/**
 * Dead-letter endpoints on the admin listener (never public: the payloads are tenants' data):
 *   GET  /deadletter[?integration=NAME][&payload=true]   what is kept (payloads only on request)
 *   POST /deadletter/replay[?integration=NAME][&id=ID]   runs each kept payload through the
 *        integration's current mapping; delivered ones leave the dead letter, the others stay.
 * `intake deadletter list|replay` calls these.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { IngesterMetrics } from '../metrics.js';
import type { RouteTable } from '../route-table.js';
import { deliverToAll, type EventSink } from '../sinks/sink.js';
import type { DeadLetterEntry } from './dead-letter.js';
import type { MappingMetrics } from './metrics.js';
import { MappingFailure, type MappedWebhooks } from './pipeline.js';

export interface ReplayOptions {
  pipeline: MappedWebhooks;
  routes: () => RouteTable;
  sinks: readonly EventSink[];
  metrics: IngesterMetrics;
  mappingMetrics: MappingMetrics;
  logger: Logger;
}

export interface ReplayResult {
  id: string;
  integration: string;
  delivered: boolean;
  events?: number;
  message?: string;
}

type Query = { integration?: string; id?: string; payload?: string };

export function registerDeadLetterRoutes(app: FastifyInstance, o: ReplayOptions): void {
  app.get<{ Querystring: Query }>('/deadletter', async (req) => {
    const entries = await o.pipeline.deadLetter.list(filterOf(req.query));
    const withPayload = req.query.payload === 'true';
    return {
      count: entries.length,
      bytes: o.pipeline.deadLetter.bytes,
      entries: entries.map((e) => (withPayload ? e : { ...e, payload: undefined })),
    };
  });

  app.post<{ Querystring: Query }>('/deadletter/replay', async (req) => {
    const entries = await o.pipeline.deadLetter.list(filterOf(req.query));
    const results: ReplayResult[] = [];
    for (const entry of entries) results.push(await replayOne(entry, o));
    const delivered = new Set(results.filter((r) => r.delivered).map((r) => r.id));
    await o.pipeline.deadLetter.remove(delivered);
    return { replayed: delivered.size, failed: results.length - delivered.size, results };
  });
}

const filterOf = (q: Query): { integration?: string; id?: string } => ({
  ...(q.integration ? { integration: q.integration } : {}),
  ...(q.id ? { id: q.id } : {}),
});

async function replayOne(entry: DeadLetterEntry, o: ReplayOptions): Promise<ReplayResult> {
  const labels = { integration: entry.integration, namespace: entry.namespace };
  const route = o.routes().webhook(entry.integration);
  const failed = (message: string): ReplayResult => {
    o.mappingMetrics.replayed.inc({ ...labels, result: 'failed' });
    return { id: entry.id, integration: entry.integration, delivered: false, message };
  };
  if (!route || route.namespace !== entry.namespace) return failed(`integration ${entry.integration} is not published in namespace ${entry.namespace}`);
  if (route.suspended) return failed(`integration ${entry.integration} is suspended`);
  try {
    const events = await o.pipeline.map(entry.payload, route, { ...labels, receivedAtMs: Date.parse(entry.receivedAt) || Date.now() });
    o.metrics.eventsReceived.inc(labels, events.length);
    const result = await deliverToAll(o.sinks, events, (sink, err) => {
      o.metrics.sinkErrors.inc({ sink });
      o.logger.error({ err, sink }, 'event sink failed during replay');
    });
    o.metrics.eventsProcessed.inc(labels, result.processed);
    if (result.cached > 0) o.metrics.eventsCached.inc(labels, result.cached);
    o.mappingMetrics.replayed.inc({ ...labels, result: 'delivered' });
    return { id: entry.id, integration: entry.integration, delivered: true, events: events.length };
  } catch (err) {
    return failed(err instanceof MappingFailure ? err.message : (err as Error).message);
  }
}
