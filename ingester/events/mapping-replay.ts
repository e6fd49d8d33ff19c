/**
 * Replay of a mapping dead letter (kind `mapping`; dead-letters/dead-letter-replay.ts claims and removes it):
 * the kept payload runs through its integration's current mapping, and the events are accepted
 * like a live request's (accept.ts). Event ids come from the content as for a live request, so a
 * payload replayed twice gives the same ids (stored once by the bus).
 */
import type { Logger } from 'pino';
import type { IngesterMetrics } from '../core/ingester-metrics.js';
import type { MappingDeadLetter } from '../dead-letters/model.js';
import type { MappedWebhooks } from '../mapping/mapped-webhooks.js';
import type { RouteTable } from '../routing/route-table.js';
import type { EventSink } from '../sinks/sink.js';
import { acceptEvents } from './accept.js';
import { destinationsOf } from '../routing/rule-decisions.js';

export interface MappingReplayOptions {
  mapped: MappedWebhooks;
  routes: () => RouteTable;
  sinks: readonly EventSink[];
  metrics: IngesterMetrics;
  logger: Logger;
}

/** Resolves with the number of events handed off; throws with the reason otherwise. */
export async function replayMapping(letter: MappingDeadLetter, o: MappingReplayOptions): Promise<number> {
  const tenant = { integration: letter.integration, namespace: letter.namespace };
  const route = o.routes().webhook(letter.integration);
  if (!route || route.namespace !== letter.namespace)
    throw new Error(`integration ${letter.integration} is not published in namespace ${letter.namespace}`);
  if (route.suspended) throw new Error(`integration ${letter.integration} is suspended`);
  const events = await o.mapped.map(letter.payload, route, {
    ...tenant,
    receivedAtMs: Date.parse(letter.at) || Date.now(),
  });
  // Routed as a live request's events are: once, here, charged to the namespace.
  const decisions = await o.mapped.decideRoutes(route, events);
  await acceptEvents(
    events,
    tenant,
    {
      sinks: o.sinks,
      metrics: o.metrics,
      onSinkError: (sink, err) => o.logger.error({ err, sink }, 'event sink failed during replay'),
    },
    decisions && destinationsOf(decisions),
  );
  return events.length;
}
