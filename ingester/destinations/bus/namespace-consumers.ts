/**
 * A namespace's own consumer on a destination several namespaces send to, so that one namespace's
 * backlog cannot take the destination consumer's room on the server from the others.
 *
 * Why: the server hands a consumer nothing new while it holds max_ack_pending messages
 * unacknowledged, and every message of a namespace that waits on this side stays unacknowledged:
 * kept for its namespace's share (share-wait-list.ts), in flight, or handed back with a delay (a
 * nak, with or without a delay, leaves the message on the consumer's pending list; only an ack or a
 * term takes it off). So a namespace whose receiver hangs or fails, with more messages than that
 * waiting, would stop the consumer for everyone: the others' messages behind them in the stream
 * are not handed out. Handing its messages back cannot help (they stay pending); publishing them
 * again elsewhere would store its backlog twice in a stream that refuses new events once full (and
 * so refuse the others'); only a consumer of its own bounds it to its own room.
 *
 * How: the destination's consumer counts, per namespace, the messages it fetched and has not
 * acknowledged (on this replica). When one namespace holds more than an eighth of max_ack_pending
 * while another has sent there in the last 30 s, it gets a consumer of its own,
 * `intake-<destination>@<namespace>` on `<prefix>.<namespace>.>`, starting at the message at hand
 * (or, when that is a redelivery, just past the newest one fetched: what this replica fetched
 * already is delivered here, once); from then on the destination's consumer acknowledges that namespace's messages from that
 * sequence on without delivering them, and the namespace's consumer delivers them (with the same
 * shares, circuits, attempts and wait list). The messages of the namespace before it stay with the
 * destination's consumer. The start is the consumer's own configuration: a replica that tries to
 * create it again reads it back, and every replica finds the others' by listing the stream's
 * consumers (at connection and every lag round), so each delivers the same messages once.
 *
 * A namespace's consumer stays while the destination does (deleted with it): merging it back would
 * need every replica to agree when the destination's consumer takes the namespace's messages again.
 * Until a replica has found a namespace's consumer it may deliver messages of the namespace that
 * consumer delivers too: duplicates, never a loss (at least once, as everywhere on the bus).
 * A team's destination has one namespace: it never gets one.
 */

/** The part of max_ack_pending one namespace may hold before it gets its own consumer. */
const SHARE_OF_ACK_PENDING = 8;
/** How long a namespace counts as sending to the destination (as the dispatcher's shares). */
const PRESENT_MS = 30_000;
/** After a failed attempt to make one (the bus slow or down), how long before the next: not one per message. */
const RETRY_MS = 5_000;

/** `intake-<destination>@<namespace>`: `@` is in neither a destination's nor a namespace's name. */
export const namespaceConsumerName = (destinationConsumer: string, namespace: string): string =>
  `${destinationConsumer}@${namespace}`;

/** The namespace of a namespace's consumer of `destinationConsumer`, or undefined for any other consumer. */
export function namespaceOfConsumer(destinationConsumer: string, name: string): string | undefined {
  const prefix = `${destinationConsumer}@`;
  return name.startsWith(prefix) && name.length > prefix.length ? name.slice(prefix.length) : undefined;
}

/** One destination's namespaces: who sends, what each holds unacknowledged here, who has a consumer of its own. */
export class NamespaceConsumers {
  /** The first stream sequence each namespace's own consumer delivers. */
  private readonly startOf = new Map<string, number>();
  /** Per namespace: the sequences fetched by the destination's consumer and not acknowledged yet. */
  private readonly unacknowledged = new Map<string, Set<number>>();
  private readonly lastSeenMs = new Map<string, number>();
  private readonly opening = new Set<string>();
  /** When making a namespace's consumer last failed. */
  private readonly failedAtMs = new Map<string, number>();
  /** The namespaces holding at least their part: with none (and no consumer of a namespace's own) nothing is looked at. */
  private readonly crowded = new Set<string>();
  private readonly part: number;

  constructor(
    /** The destination consumer's max_ack_pending. */
    private readonly maxAckPending: number,
    private readonly now: () => number = Date.now,
  ) {
    this.part = Math.max(1, Math.floor(maxAckPending / SHARE_OF_ACK_PENDING));
  }

  /** The newest stream sequence the destination's consumer fetched (redeliveries come back older). */
  newestSeq = 0;

  /** The destination's consumer fetched the message `seq` (any namespace's). */
  saw(seq: number): void {
    if (seq > this.newestSeq) this.newestSeq = seq;
  }

  /** Nothing to do for any message: no namespace holds its part, none has a consumer of its own. */
  get idle(): boolean {
    return this.startOf.size === 0 && this.crowded.size === 0;
  }

  /** The namespaces with a consumer of their own, and where each starts. */
  get known(): ReadonlyMap<string, number> {
    return this.startOf;
  }

  /** The destination's consumer leaves this message to the namespace's own consumer. */
  isTheirs(namespace: string, seq: number): boolean {
    const start = this.startOf.get(namespace);
    return start !== undefined && seq >= start;
  }

  /** A namespace's own consumer exists, from `start`; false when it was known already. */
  found(namespace: string, start: number): boolean {
    if (this.startOf.get(namespace) === start) return false;
    this.startOf.set(namespace, start);
    this.unacknowledged.delete(namespace);
    this.crowded.delete(namespace);
    return true;
  }

  /** The destination's consumer fetched a message of `namespace` to deliver. */
  fetched(namespace: string, seq: number): void {
    this.lastSeenMs.set(namespace, this.now());
    let seqs = this.unacknowledged.get(namespace);
    if (!seqs) this.unacknowledged.set(namespace, (seqs = new Set()));
    seqs.add(seq);
    // Bounded: a message nak'ed here and acknowledged on another replica is never settled here.
    if (seqs.size > 2 * this.maxAckPending) seqs.delete(seqs.values().next().value as number);
    if (seqs.size >= this.part) this.crowded.add(namespace);
  }

  /** The message was acknowledged or terminated: off the server's pending list. */
  settled(namespace: string, seq: number): void {
    const seqs = this.unacknowledged.get(namespace);
    if (!seqs?.delete(seq)) return;
    if (seqs.size < this.part) this.crowded.delete(namespace);
    if (seqs.size === 0) this.unacknowledged.delete(namespace);
  }

  /**
   * Whether `namespace` should get a consumer of its own now: it holds more than its part of the
   * consumer's room while another namespace sends there too, and has none (nor one being made).
   */
  shouldOpen(namespace: string): boolean {
    if (this.startOf.has(namespace) || this.opening.has(namespace)) return false;
    if (this.now() - (this.failedAtMs.get(namespace) ?? -Infinity) < RETRY_MS) return false;
    if ((this.unacknowledged.get(namespace)?.size ?? 0) < this.part) return false;
    const since = this.now() - PRESENT_MS;
    for (const [other, at] of this.lastSeenMs) if (other !== namespace && at >= since) return true;
    return false;
  }

  /** A consumer of the namespace's own is being made: it is made once at a time. */
  beginOpening(namespace: string): void {
    this.opening.add(namespace);
  }

  /** Done making it (made or not): if not, a message after RETRY_MS may try again. */
  endOpening(namespace: string): void {
    this.opening.delete(namespace);
    if (this.startOf.has(namespace)) this.failedAtMs.delete(namespace);
    else this.failedAtMs.set(namespace, this.now());
  }
}
