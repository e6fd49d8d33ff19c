/**
 * Where accepted events go (docs/design.md §5). A sink acknowledges what it holds: `processed` events
 * reached its store (log file, bus), `cached` events are durably spooled for later hand-off. A sink that
 * can hold nothing rejects, and the request is answered 503 so the sender retries.
 */
import type { NormalisedEvent } from '../core/event.js';
import { IntakeError, sinkFailed } from '../core/errors.js';

export interface HandOffReport {
  /** Reached the sink's store (the log file, the bus). */
  processed: number;
  /** Durably spooled, to reach it later. */
  cached: number;
}

export interface EventSink {
  readonly name: string;
  handOff(events: readonly NormalisedEvent[]): Promise<HandOffReport>;
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

export interface HandOffResult {
  /** Processed by every sink. */
  processed: number;
  /** Held by every sink, but at least one of them only has it spooled. */
  cached: number;
}

/** Hands a batch to every sink; the answer is what all of them hold. */
export async function handOffToAll(
  sinks: readonly EventSink[],
  events: readonly NormalisedEvent[],
  onError: (sink: string, err: unknown) => void,
): Promise<HandOffResult> {
  const reports = await Promise.allSettled(sinks.map((s) => s.handOff(events)));
  let processed = events.length;
  for (let i = 0; i < reports.length; i++) {
    const report = reports[i] as PromiseSettledResult<HandOffReport>;
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
