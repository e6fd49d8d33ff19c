/**
 * Each answered delivery, for whoever listens (the event inspector, inspector/, records them
 * against the captured requests). The one hook the dispatcher calls: a no-op until a listener is
 * installed, and cheap while none wants the integration: events are read only for those it does.
 */
import type { DeliveryAttempt } from '../../api/inspector.js';
import { inertText } from '../../common/sender-text.js';
import type { NormalisedEvent } from '../core/event.js';
import type { Outcome } from '../outbound/outcome.js';

/** A delivery attempt's error text kept at most. */
export const MAX_ATTEMPT_ERROR_CHARS = 256;

/** One attempt of one event, named by the event's id. */
export type AnsweredDelivery = Omit<DeliveryAttempt, 'event'> & { eventId: string };

export interface DeliveryListener {
  /** Whether any attempt may be wanted now (checked once a batch, before any event is read). */
  wantsAny(): boolean;
  /** Whether the integration's attempts are wanted now. */
  wants(where: { namespace: string; integration: string }): boolean;
  answered(where: { namespace: string; integration: string }, a: AnsweredDelivery): void;
}

let listener: DeliveryListener | undefined;

export function listenToDeliveries(l: DeliveryListener | undefined): void {
  listener = l;
}

/** What became of the attempt: delivered, tried again later, or a dead letter. */
export type AttemptOutcome = DeliveryAttempt['outcome'];

/**
 * Reports one attempt per event of the batch. `outcomeOf` says per event what the dispatcher did
 * (a retried batch may dead-letter the events whose attempts ran out).
 */
export function recordAttempts(
  destination: string,
  events: ReadonlyArray<{ event(): NormalisedEvent }>,
  outcome: Outcome,
  startedAtMs: number,
  outcomeOf: (i: number) => AttemptOutcome,
): void {
  const l = listener;
  if (!l?.wantsAny()) return;
  try {
    const at = new Date().toISOString();
    const latencyMs = Date.now() - startedAtMs;
    events.forEach((d, i) => {
      const e = d.event();
      const where = { namespace: e.namespace, integration: e.integration };
      if (!l.wants(where)) return;
      l.answered(where, {
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
    // Listening never hurts a delivery.
  }
}
