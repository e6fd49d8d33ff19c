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
  // One sink (most deployments): its answer, without settling a list of them.
  if (sinks.length === 1) {
    const sink = sinks[0] as EventSink;
    let report: HandOffResult;
    try {
      report = await sink.handOff(events, destinations, trace);
    } catch (reason) {
      return refused(sink.name, reason, onError);
    }
    const processed = heldAll(sink.name, report, events.length, onError);
    return { processed, cached: events.length - processed };
  }
  const reports = await Promise.allSettled(sinks.map((s) => s.handOff(events, destinations, trace)));
  let processed = events.length;
  for (let i = 0; i < reports.length; i++) {
    const report = reports[i] as PromiseSettledResult<HandOffResult>;
    const name = (sinks[i] as EventSink).name;
    if (report.status === 'rejected') return refused(name, report.reason, onError);
    processed = Math.min(processed, heldAll(name, report.value, events.length, onError));
  }
  return { processed, cached: events.length - processed };
}

/** A sink that held nothing: its own refusal for this tenant (its share of the spool) as it is, else 503. */
function refused(name: string, reason: unknown, onError: (sink: string, err: unknown) => void): never {
  if (reason instanceof IntakeError) throw reason;
  onError(name, reason);
  throw sinkFailed(name, reason);
}

/** The events the sink's store holds (the rest it spooled); a sink that held fewer than all of them is a 503. */
function heldAll(
  name: string,
  report: HandOffResult,
  count: number,
  onError: (sink: string, err: unknown) => void,
): number {
  if (report.processed + report.cached < count) {
    onError(
      name,
      new SinkError(name, `sink ${name} acknowledged ${report.processed + report.cached} of ${count} events`),
    );
    throw sinkFailed(name, undefined);
  }
  return report.processed;
}
