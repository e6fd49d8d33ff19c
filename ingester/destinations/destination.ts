/**
 * A destination receives normalised events after the hand-off, from the durable queue (the
 * JetStream consumer or the standalone outbox), never inside the sender's request.
 */
import type { NormalisedEvent } from '../core/event.js';
import type { Outcome } from '../outbound/outcome.js';

export interface Destination {
  readonly name: string;
  readonly kind: 'alertmanager' | 'http';
  /** Events handed to one send() at most. */
  readonly maxBatch: number;
  /** Delivers a batch; one outcome for all of it. Never rejects. */
  send(events: readonly NormalisedEvent[]): Promise<Outcome>;
  /** Background work (the Alertmanager resender). */
  start?(): void;
  close(): Promise<void>;
}

/** Exponential backoff with full jitter: random(0, min(max, min * 2^(attempt-1))); Retry-After wins when given. */
export function retryDelayMs(
  attempt: number,
  o: { backoffMinMs: number; backoffMaxMs: number },
  retryAfterMs?: number,
  random = Math.random,
): number {
  if (retryAfterMs !== undefined) return Math.min(Math.max(0, retryAfterMs), MAX_RETRY_AFTER_MS);
  const ceiling = Math.min(o.backoffMaxMs, o.backoffMinMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
  return Math.round(random() * ceiling);
}

/** A receiver asking for more than this is waited for this long, then tried again. */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/** Which destinations an event goes to (the hand-off sinks ask it per event). */
export interface Routing {
  /** The destinations an event goes to now (its integration's, else the defaults). */
  destinationsOf(e: NormalisedEvent): readonly string[];
}
