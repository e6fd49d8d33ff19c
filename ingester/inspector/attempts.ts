/**
 * The one hook the delivery path calls (destinations/dispatcher.ts): each answered batch, to be
 * recorded against the captured requests its events came from. A no-op until the inspector is
 * set up, and cheap while no integration is inspected: events are read only for those that are.
 */
import type { NormalisedEvent } from '../core/event.js';
import type { Outcome } from '../outbound/outcome.js';
import { inertText } from '../../common/sender-text.js';
import { MAX_ATTEMPT_ERROR_CHARS, type Integration, type RecordedAttempt } from './store.js';

interface AttemptSink {
  inspects(where: Integration): boolean;
  attempt(where: Integration, a: RecordedAttempt): void;
}

let recorder: AttemptSink | undefined;

export function installAttemptRecorder(r: AttemptSink | undefined): void {
  recorder = r;
}

/** What became of the attempt: delivered, tried again later, or a dead letter. */
export type AttemptOutcome = RecordedAttempt['outcome'];

/**
 * Records one attempt per event of the batch. `outcomeOf` says per event what the dispatcher did
 * (a retried batch may dead-letter the events whose attempts ran out).
 */
export function recordAttempts(
  destination: string,
  events: ReadonlyArray<{ event(): NormalisedEvent }>,
  outcome: Outcome,
  startedAtMs: number,
  outcomeOf: (i: number) => AttemptOutcome,
): void {
  const r = recorder;
  if (!r) return;
  try {
    const at = new Date().toISOString();
    const latencyMs = Date.now() - startedAtMs;
    events.forEach((d, i) => {
      const e = d.event();
      const where = { namespace: e.namespace, integration: e.integration };
      if (!r.inspects(where)) return;
      r.attempt(where, {
        eventId: e.id,
        destination,
        at,
        latencyMs,
        outcome: outcomeOf(i),
        ...(outcome.status !== undefined ? { status: outcome.status } : {}),
        ...(outcome.kind !== 'accepted' ? { error: inertText(outcome.error, MAX_ATTEMPT_ERROR_CHARS) } : {}),
      });
    });
  } catch {
    // The inspector never hurts a delivery.
  }
}
