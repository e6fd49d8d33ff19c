/**
 * Events a destination gave up on, kept with the reason so they can be inspected and replayed:
 * the dead-letter stream with the bus (jetstream-queue.ts), a table of the outbox standalone
 * (outbox.ts). Replaying hands an event back to the same destination only.
 */
import type { NormalisedEvent } from '../events.js';

export interface DeadLetterItem {
  /** Position in the dead letter (what replay selects by). */
  seq: number;
  destination: string;
  reason: string;
  error: string;
  attempts: number;
  failedAt: string;
  /** With the bus: the subject the event was published on (a replay publishes it there again). */
  subject?: string;
  event: NormalisedEvent;
}

export interface DeadLetterQuery {
  destination?: string;
  /** Only these positions (replay of chosen items). */
  seqs?: readonly number[];
  limit: number;
}

export interface DeadLetterStore {
  list(q: DeadLetterQuery): Promise<DeadLetterItem[]>;
  /** Hands the selected items back to their destination and removes them; returns how many. */
  replay(q: DeadLetterQuery): Promise<number>;
}

/** Header values cannot hold line breaks; the error text of a receiver may. */
export const oneLine = (text: string, max = 1024): string => text.replace(/[\r\n]+/g, ' ').slice(0, max);
