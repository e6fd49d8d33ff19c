/**
 * Where accepted events go (docs/design.md §5). A sink acknowledges what it holds: `processed` events
 * reached its store (log file, bus), `cached` events are durably spooled for later hand-off. A sink that
 * can hold nothing rejects, and the request is answered 503 so the sender retries.
 */
import type { NormalisedEvent } from '../core/event.js';
import { IntakeError, sinkFailed } from '../core/errors.js';
import type { TraceCarrier } from '../tracing/carrier.js';

/** What a hand-off holds: one sink's (EventSink.handOff), or every sink's together (handOffToAll). */
export interface HandOffResult {
  /** Reached the store: the sink's (the log file, the bus), or every sink's. */
  processed: number;
  /** Held durably but spooled, to reach the store later (with every sink: at least one only spooled it). */
  cached: number;
}

/**
 * Per event, in order, the destinations its integration's routing rules chose at acceptance
 * (routing/rule-decisions.ts); a sink that feeds delivery keeps them with the event. Absent: the
 * integration has no rules, and its events go to its destinations as they are when delivered.
 */
export type DecidedDestinations = readonly (readonly string[])[];

export interface EventSink {
  readonly name: string;
  /**
   * `destinations`: each event's destinations as its routing rules decided (absent: the route's);
   * `trace`: the hand-off's context, for a sink that holds events for delivery to carry with them.
   */
  handOff(
    events: readonly NormalisedEvent[],
    destinations?: DecidedDestinations,
    trace?: TraceCarrier,
  ): Promise<HandOffResult>;
  /** Why the sink cannot take events right now (readiness), or undefined when it can. */
  unavailable?(): string | undefined;
  /** Resolves when everything acknowledged so far has left the process (shutdown). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export class SinkError extends Error {
  readonly code = 'INTAKE_SINK_FAILED';
  constructor(
    readonly sink: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SinkError';
  }
}

/** Hands a batch to every sink; the answer is what all of them hold. */
export async function handOffToAll(
  sinks: readonly EventSink[],
  events: readonly NormalisedEvent[],
  onError: (sink: string, err: unknown) => void,
  destinations?: DecidedDestinations,
  trace?: TraceCarrier,
): Promise<HandOffResult> {
  const reports = await Promise.allSettled(sinks.map((s) => s.handOff(events, destinations, trace)));
  let processed = events.length;
  for (let i = 0; i < reports.length; i++) {
    const report = reports[i] as PromiseSettledResult<HandOffResult>;
    const name = (sinks[i] as EventSink).name;
    if (report.status === 'rejected') {
      // A sink's own refusal for this tenant (its share of the spool) is the answer as it is.
      if (report.reason instanceof IntakeError) throw report.reason;
      onError(name, report.reason);
      throw sinkFailed(name, report.reason);
    }
    if (report.value.processed + report.value.cached < events.length) {
      onError(
        name,
        new SinkError(
          name,
          `sink ${name} acknowledged ${report.value.processed + report.value.cached} of ${events.length} events`,
        ),
      );
      throw sinkFailed(name, undefined);
    }
    processed = Math.min(processed, report.value.processed);
  }
  return { processed, cached: events.length - processed };
}
