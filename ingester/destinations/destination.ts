/**
 * A destination receives normalised events after the hand-off, from the durable queue (the
 * JetStream consumer or the standalone outbox), never inside the sender's request.
 */
import type { NormalisedEvent } from '../core/event.js';
import type { Outcome } from '../outbound/outcome.js';
import type { TraceCarrier } from '../tracing/carrier.js';

/**
 * An event as a durable queue holds it: the JSON text the sink stored, and the event parsed on
 * first use. An HTTP destination sends the stored bytes as they are; only a destination that reads
 * the event's fields (Alertmanager) pays for parsing it.
 */
export interface QueuedEvent {
  readonly json: Uint8Array | string;
  event(): NormalisedEvent;
  /**
   * Its received_at (ms), when the queue reads it once for several events: the events of one bus
   * message or outbox row come from one request and share it (packReceivedAt). Otherwise
   * receivedAtMs() reads each event's own.
   */
  sharedReceivedAtMs?(): number;
  /** The trace context its hand-off carried (the bus message's headers, the outbox row), when tracing is on. */
  readonly trace?: TraceCarrier | undefined;
}

/** An event that is already parsed, as a queued one (for callers and tests that hold the object). */
export function queuedEvent(e: NormalisedEvent): QueuedEvent {
  return { json: JSON.stringify(e), event: () => e };
}

/** The stored JSON parsed (a queued event parses it once, on first use). */
export const parseStored = (json: Uint8Array | string): NormalisedEvent =>
  JSON.parse(typeof json === 'string' ? json : storedBytes(json).toString('utf8')) as NormalisedEvent;

const RECEIVED_AT = '"received_at":"';
const RECEIVED_AT_BYTES = Buffer.from(RECEIVED_AT);

/**
 * The event's received_at (ms), read from the stored JSON without parsing it: the sinks store
 * JSON.stringify of a normalised event, whose top-level received_at comes before any nested
 * object (a key of the same name inside custom_info comes later; inside a string the quotes are
 * escaped). Parses the event when the text is not there.
 */
export function receivedAtMs(q: QueuedEvent): number {
  if (q.sharedReceivedAtMs) return q.sharedReceivedAtMs();
  return ownReceivedAtMs(q);
}

/**
 * For the events of one pack (a bus message, an outbox row: one request's events, normalised with
 * one received_at), a reader of that time that parses it once, from the first event, for all of
 * them. Undefined for a pack of one, which reads its own.
 */
export function packReceivedAt(events: readonly (Uint8Array | string)[]): (() => number) | undefined {
  const first = events[0];
  if (events.length < 2 || first === undefined) return undefined;
  let at: number | undefined;
  return () => (at ??= ownReceivedAtMs({ json: first, event: () => parseStored(first) }));
}

/** receivedAtMs of this event's own JSON. */
function ownReceivedAtMs(q: QueuedEvent): number {
  const json = q.json;
  let at = Number.NaN;
  if (typeof json === 'string') {
    const from = json.indexOf(RECEIVED_AT);
    if (from >= 0) at = Date.parse(json.slice(from + RECEIVED_AT.length, json.indexOf('"', from + RECEIVED_AT.length)));
  } else {
    const b = storedBytes(json);
    const from = b.indexOf(RECEIVED_AT_BYTES);
    if (from >= 0) {
      const start = from + RECEIVED_AT_BYTES.length;
      at = Date.parse(b.toString('latin1', start, b.indexOf(0x22, start)));
    }
  }
  return Number.isNaN(at) ? Date.parse(q.event().received_at) : at;
}

const ID_PREFIX = '{"id":"';
const ID_PREFIX_BYTES = Buffer.from(ID_PREFIX);

/**
 * The event's id, read from the stored JSON without parsing it: JSON.stringify of a normalised
 * event starts with its id. Parses the event when the text does not (or the id holds an escape).
 */
export function eventIdOf(q: QueuedEvent): string {
  const json = q.json;
  let id: string | undefined;
  if (typeof json === 'string') {
    if (json.startsWith(ID_PREFIX)) id = json.slice(ID_PREFIX.length, json.indexOf('"', ID_PREFIX.length));
  } else {
    const b = storedBytes(json);
    if (b.subarray(0, ID_PREFIX_BYTES.length).equals(ID_PREFIX_BYTES)) {
      const end = b.indexOf(0x22, ID_PREFIX_BYTES.length);
      if (end > 0) id = b.toString('utf8', ID_PREFIX_BYTES.length, end);
    }
  }
  return id !== undefined && !id.includes('\\') ? id : q.event().id;
}

/** The stored JSON as a Buffer over the same memory (no copy). */
export const storedBytes = (json: Uint8Array | string): Buffer =>
  typeof json === 'string' ? Buffer.from(json) : Buffer.from(json.buffer, json.byteOffset, json.byteLength);

export interface Destination {
  readonly name: string;
  readonly kind: 'alertmanager' | 'http';
  /** Events handed to one send() at most. */
  readonly maxBatch: number;
  /**
   * Delivers a batch; one outcome for all of it. Never rejects. `trace`: the delivery attempt's
   * context, sent as the request's traceparent (tracing on).
   */
  send(events: readonly QueuedEvent[], trace?: TraceCarrier): Promise<Outcome>;
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

/**
 * Which destinations an event goes to when no decision travels with it: an integration without
 * routing rules (its destinations as they are now), or a message an older ingester published
 * (its rules evaluated here). Rules are otherwise decided at acceptance (routing/rule-decisions.ts).
 */
export interface Routing {
  /**
   * The destinations an event goes to now: its integration's routing rules decide when it has
   * some (they read the event, asked for only then: `event`), else its destinations, else the
   * defaults. Without `event`, an integration with rules answers every destination they can reach.
   */
  destinationsOf(
    where: Pick<NormalisedEvent, 'namespace' | 'integration'>,
    event?: () => NormalisedEvent | undefined,
  ): readonly string[];
  /** Whether the integration's rules decide per event (a bus message's events are then routed one by one). */
  decidesPerEvent?(where: Pick<NormalisedEvent, 'namespace' | 'integration'>): boolean;
}
