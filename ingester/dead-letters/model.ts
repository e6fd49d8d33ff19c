/**
 * One dead-letter model for everything intake accepted but could not finish (docs/design.md,
 * "Dead letters"):
 *   kind `mapping`  a payload that authenticated but could not be mapped (answered 422);
 *   kind `delivery` an event a destination refused or ran out of attempts for.
 * Both are kept in one store: the bus (`INTAKE_DEADLETTER`) with JetStream, the SQLite file
 * `deadletters.sqlite` in the storage directory standalone, or a SQLite file next to
 * `deadLetter.path` when there is neither. Every store gives each namespace a byte share, so one
 * tenant's failures never push out or refuse another's (shares.ts).
 */
import { hash } from 'node:crypto';
import type { FieldError } from '../core/errors.js';
import type { NormalisedEvent } from '../core/event.js';

export const DEAD_LETTER_KINDS = ['mapping', 'delivery'] as const;
export type DeadLetterKind = (typeof DEAD_LETTER_KINDS)[number];

interface Common {
  /** Stable and opaque: what the 422 header, list and replay name. */
  id: string;
  /** Position in the store, oldest first. */
  seq: number;
  namespace: string;
  integration: string;
  /** Why it was not accepted or not delivered (the 422 message, or the destination's reason). */
  reason: string;
  /** When it was kept (ISO 8601). */
  at: string;
  /** What it counts against its namespace's share. */
  bytes: number;
}

export interface MappingDeadLetter extends Common {
  kind: 'mapping';
  errors?: FieldError[];
  contentType?: string;
  payload: unknown;
}

export interface DeliveryDeadLetter extends Common {
  kind: 'delivery';
  destination: string;
  /** The receiver's answer or the network error. */
  error: string;
  attempts: number;
  /** With the bus: the subject the event was published on (a replay publishes it there again). */
  subject?: string;
  event: NormalisedEvent;
}

export type DeadLetter = MappingDeadLetter | DeliveryDeadLetter;

type New<T> = Omit<T, 'seq' | 'at' | 'bytes' | 'id'> & { id?: string; at?: string };
export type NewDeadLetter = New<MappingDeadLetter> | New<DeliveryDeadLetter>;

/**
 * The id of the delivery letter of one event for one destination. Derived, not random: a sender's
 * re-send of a request (the same `Idempotency-Key`, so the same event ids) that the destination
 * refuses again replaces the event's letter instead of adding one per re-send (the outbox takes a
 * re-sent event again once its row is gone; the bus, once its duplicate window has passed).
 */
export const deliveryLetterId = (destination: string, eventId: string): string =>
  `d-${hash('sha256', `${destination}\n${eventId}`, 'hex').slice(0, 32)}`;

export interface DeadLetterQuery {
  kind?: DeadLetterKind;
  namespace?: string;
  integration?: string;
  destination?: string;
  ids?: readonly string[];
  seqs?: readonly number[];
  /** The letter's reason equals this, or begins with it when it ends in `*` (`http_5*`). */
  reason?: string;
  /** Kept at or after this time (epoch ms). */
  since?: number;
  /** Kept before this time (epoch ms). */
  until?: number;
  /** Only letters after this position (a bulk replay's cursor). */
  afterSeq?: number;
  /** Only letters up to this position (a bulk replay leaves out letters kept after it began). */
  maxSeq?: number;
  limit: number;
}

/** Why a dead letter left the store without a replay (the drop metric's reason). */
export type DropReason = 'namespace_share' | 'store_full' | 'too_large';

export interface DroppedLetter {
  kind: DeadLetterKind;
  namespace: string;
  reason: DropReason;
}

export interface DeadLetterStore {
  /** Where the store keeps letters, for the startup log and `GET /deadletter`. */
  readonly description: string;
  /**
   * Keeps a letter durably (room is made by dropping the oldest of its namespace, or of the
   * namespace holding most when the store is full); resolves with its id. A letter with the id of
   * one kept already takes its place: the newer replaces it, with a new seq, so a replay holding
   * the old one removes nothing (on the bus the older message is deleted once the newer is kept). Rejects with
   * LetterTooLarge when it exceeds a namespace's share, or when it cannot be written now.
   */
  put(letter: NewDeadLetter): Promise<string>;
  list(q: DeadLetterQuery): Promise<DeadLetter[]>;
  /** The metadata of the letters `q` selects, oldest first, at most `q.limit` (no body is read). */
  select(q: DeadLetterQuery): LetterMeta[];
  /** How many letters `q` selects (`q.limit` aside), and the position of the newest of them (0 when none). */
  census(q: DeadLetterQuery): { matched: number; lastSeq: number };
  /**
   * Takes the letter for one replay: resolves with its current content when no other replay (in
   * this process or another replica) holds it, undefined when one does or it is gone. A claim
   * lasts `leaseMs`, so a replay that died lets the letter be replayed again after it.
   */
  claim(letter: Pick<DeadLetter, 'seq'>, leaseMs: number): Promise<DeadLetter | undefined>;
  /** Ends a claim without removing (the replay failed: it can be tried again at once). */
  release(letter: DeadLetter): Promise<void>;
  /** Removes a letter (replayed). */
  remove(letter: DeadLetter): Promise<void>;
  /**
   * Letters still kept whose replay began long ago and never ended (the replaying process died
   * between handing the letter on and removing it, or before handing it on), each claimed now by
   * this process: the caller hands it on again and removes it (dead-letter-replay.ts). Only where
   * claims outlive the process (the bus); the SQLite store settles at start instead.
   */
  interruptedReplays?(): AsyncIterable<DeadLetter>;
  /** Bytes held, in total and per namespace (this replica's view with the bus). */
  usage(): { bytes: number; namespaces: ReadonlyMap<string, number> };
  /**
   * Why this replica should not take requests yet because of its dead letters, if so (readiness):
   * only where the store opens after the start, and only until it first opened (the bus).
   */
  unavailable?(): string | undefined;
  close(): Promise<void>;
}

export interface DeadLetterLimits {
  /** The whole store. */
  maxBytes: number;
  /** Each namespace's share: its oldest letters go first when a new one would exceed it. */
  maxBytesPerNamespace: number;
}

/** A letter larger than a namespace's share can never be kept: retrying would not help. */
export class LetterTooLarge extends Error {
  constructor(
    readonly bytes: number,
    readonly share: number,
  ) {
    super(
      `the dead letter (${bytes} bytes) is larger than a namespace's share of the dead-letter store (${share} bytes)`,
    );
    this.name = 'LetterTooLarge';
  }
}

/** The letter's body: what a replay needs besides the metadata. */
export const bodyOf = (l: NewDeadLetter | DeadLetter): unknown => (l.kind === 'mapping' ? l.payload : l.event);

/** What a letter counts: its JSON form (body and metadata), as the SQLite store holds it. */
export const letterBytes = (l: NewDeadLetter | DeadLetter): number =>
  Buffer.byteLength(JSON.stringify({ ...l, seq: 0, bytes: 0 }));

/** What the stores index of a letter (without its body): enough to select, share and drop. */
export interface LetterMeta {
  id: string;
  seq: number;
  kind: DeadLetterKind;
  namespace: string;
  integration: string;
  destination?: string;
  bytes: number;
  /** When it was kept (epoch ms), for the time-range filters. */
  atMs: number;
  /** Its reason, cut at REASON_INDEX_CHARS (one more than a filter may hold, so a cut one never equals a filter). */
  reason: string;
}

/** The longest `reason` filter; the index keeps one character more of each reason. */
export const MAX_REASON_FILTER_CHARS = 256;
const REASON_INDEX_CHARS = MAX_REASON_FILTER_CHARS + 1;

export const indexedReason = (reason: string | undefined): string => (reason ?? '').slice(0, REASON_INDEX_CHARS);

/** An ISO 8601 time as epoch ms (0 when absent or unreadable: such a letter is older than any range). */
export const atMsOf = (at: string | undefined): number => {
  const ms = at ? Date.parse(at) : Number.NaN;
  return Number.isNaN(ms) ? 0 : ms;
};

export const metaOf = (l: DeadLetter): LetterMeta => ({
  id: l.id,
  seq: l.seq,
  kind: l.kind,
  namespace: l.namespace,
  integration: l.integration,
  bytes: l.bytes,
  atMs: atMsOf(l.at),
  reason: indexedReason(l.reason),
  ...(l.kind === 'delivery' ? { destination: l.destination } : {}),
});

/** `reason` equals the filter, or begins with it when the filter ends in `*`. */
export const reasonMatches = (reason: string, filter: string): boolean =>
  filter.endsWith('*') ? reason.startsWith(filter.slice(0, -1)) : reason === filter;

export function matches(l: LetterMeta, q: DeadLetterQuery): boolean {
  return (
    (q.afterSeq === undefined || l.seq > q.afterSeq) &&
    (q.maxSeq === undefined || l.seq <= q.maxSeq) &&
    (q.kind === undefined || l.kind === q.kind) &&
    (q.reason === undefined || reasonMatches(l.reason, q.reason)) &&
    (q.since === undefined || l.atMs >= q.since) &&
    (q.until === undefined || l.atMs < q.until) &&
    (q.namespace === undefined || l.namespace === q.namespace) &&
    (q.integration === undefined || l.integration === q.integration) &&
    (q.destination === undefined || l.destination === q.destination) &&
    (q.ids === undefined || q.ids.includes(l.id)) &&
    (q.seqs === undefined || q.seqs.includes(l.seq))
  );
}
