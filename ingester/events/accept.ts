/**
 * The accept step of the events path, shared by a live request (http/endpoints/events.ts) and the
 * replay of a mapping dead letter (mapping-replay.ts): events that passed mapping and validation
 * are counted, handed off to every sink, and counted again by what the sinks hold.
 */
import type { NormalisedEvent } from '../core/event.js';
import type { IngesterMetrics } from '../core/ingester-metrics.js';
import { handOffToAll, type DecidedDestinations, type EventSink, type HandOffResult } from '../sinks/sink.js';
import type { TraceCarrier } from '../tracing/carrier.js';

export interface AcceptOptions {
  sinks: readonly EventSink[];
  metrics: IngesterMetrics;
  /** A sink failed (counted here); the caller logs it its own way. */
  onSinkError(sink: string, err: unknown): void;
  /** The hand-off's trace context, carried with the events to the delivering replica (tracing on). */
  trace?: TraceCarrier | undefined;
}

/**
 * Hands the events to every sink, with the destinations their routing rules chose (when the
 * integration has rules: routing/rule-decisions.ts); resolves with what all of them hold, or throws
 * sinkFailed (503).
 */
export async function acceptEvents(
  events: readonly NormalisedEvent[],
  tenant: { integration: string; namespace: string },
  o: AcceptOptions,
  destinations?: DecidedDestinations,
): Promise<HandOffResult> {
  o.metrics.receivedCounts.add(tenant.namespace, tenant.integration, events.length);
  const result = await handOffToAll(
    o.sinks,
    events,
    (sink, err) => {
      o.metrics.sinkErrors.inc({ sink });
      o.onSinkError(sink, err);
    },
    destinations,
    o.trace,
  );
  o.metrics.processedCounts.add(tenant.namespace, tenant.integration, result.processed);
  if (result.cached > 0)
    o.metrics.eventsCached.inc({ integration: tenant.integration, namespace: tenant.namespace }, result.cached);
  return result;
}
