/**
 * Replay of a mapping failure (kind `mapping` of the dead letter, dead-letters/replay.ts claims and
 * removes it): the kept payload runs through its integration's current mapping, and the events are
 * handed off like a live request's. Event ids come from the content as for a live request, so a
 * payload replayed twice gives the same ids (stored once by the bus).
 */
import type { Logger } from 'pino';
import type { MappingDeadLetter } from '../dead-letters/model.js';
import type { IngesterMetrics } from '../core/ingester-metrics.js';
import type { RouteTable } from '../routing/route-table.js';
import { deliverToAll, type EventSink } from '../sinks/sink.js';
import type { MappedWebhooks } from '../mapping/mapped-webhooks.js';

export interface MappingReplayOptions {
  pipeline: MappedWebhooks;
  routes: () => RouteTable;
  sinks: readonly EventSink[];
  metrics: IngesterMetrics;
  logger: Logger;
}

/** Resolves with the number of events handed off; throws with the reason otherwise. */
export async function replayMapping(letter: MappingDeadLetter, o: MappingReplayOptions): Promise<number> {
  const labels = { integration: letter.integration, namespace: letter.namespace };
  const route = o.routes().webhook(letter.integration);
  if (!route || route.namespace !== letter.namespace) throw new Error(`integration ${letter.integration} is not published in namespace ${letter.namespace}`);
  if (route.suspended) throw new Error(`integration ${letter.integration} is suspended`);
  const events = await o.pipeline.map(letter.payload, route, { ...labels, receivedAtMs: Date.parse(letter.at) || Date.now() });
  o.metrics.eventsReceived.inc(labels, events.length);
  const result = await deliverToAll(o.sinks, events, (sink, err) => {
    o.metrics.sinkErrors.inc({ sink });
    o.logger.error({ err, sink }, 'event sink failed during replay');
  });
  o.metrics.eventsProcessed.inc(labels, result.processed);
  if (result.cached > 0) o.metrics.eventsCached.inc(labels, result.cached);
  return events.length;
}
