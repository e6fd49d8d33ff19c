/**
 * A destination's events waiting to be sent, one lane per namespace, served in turn: a request
 * holds one namespace's events (so a receiver's answer, and the circuit breaker it feeds, is that
 * namespace's: receiver-guard.ts), and one namespace's backlog never sits in front of another's
 * events. While several namespaces send to the destination, each may hold at most its share of the
 * in-flight bound (`share`: half of maxInFlight, rounded up) so that a receiver slow or hanging on
 * one tenant's payloads keeps the rest for the others; a destination only one namespace uses
 * (a team's own) gives it all.
 *
 * A namespace that took everything while it was alone keeps what it holds (its requests are out),
 * so a namespace that arrives then may use what the others hold past their shares on top of the
 * bound (borrowedEvents): it gets its share at once instead of waiting for the first one's
 * receiver to answer or time out. In flight is then at most maxInFlight plus what the first holds
 * past its share (1.5x maxInFlight), until those settle.
 */

/** A namespace's events on one destination. */
export interface Lane<T> {
  readonly namespace: string;
  /** Submitted, waiting to be sent (in the order submitted). */
  pending: T[];
  /** Submitted and not yet settled (waiting or being sent). */
  submitted: number;
  /** Being sent. */
  sending: number;
  /** When it last submitted an event (ms): it counts as present this long after. */
  lastSubmitMs: number;
  /** The bytes of its submitted events (their stored JSON). */
  bytes: number;
}

/** The most one namespace may hold of `maxInFlight` while another is present (half, rounded up). */
export const shareOf = (maxInFlight: number): number => Math.max(1, Math.ceil(maxInFlight / 2));

const emptyLane = <T>(namespace: string): Lane<T> => ({
  namespace,
  pending: [],
  submitted: 0,
  sending: 0,
  lastSubmitMs: 0,
  bytes: 0,
});

/** How long a namespace that submitted counts as present: the others are held to their share meanwhile. */
export const PRESENT_FOR_MS = 30_000;

export class NamespaceLanes<T> {
  private readonly lanes = new Map<string, Lane<T>>();
  /** Lanes with events pending, in the order they take their next turn. */
  private turns: Array<Lane<T>> = [];
  /** Events pending over every lane. */
  pendingCount = 0;
  /** Summed over the lanes: what each holds past its share (kept as lanes change, not counted on each ask). */
  private readonly over = { events: 0, bytes: 0 };
  /** Summed over the lanes: what each is sending past its share. */
  private overSending = 0;
  /** The most one namespace may hold while another is present. */
  readonly share: number;
  private readonly shareBytes: number;

  constructor(
    private readonly maxInFlight: number,
    private readonly now: () => number = Date.now,
    maxInFlightBytes = Number.POSITIVE_INFINITY,
  ) {
    this.share = shareOf(maxInFlight);
    this.shareBytes = maxInFlightBytes / 2;
  }

  lane(namespace: string): Lane<T> {
    let lane = this.lanes.get(namespace);
    if (!lane) {
      lane = emptyLane(namespace);
      this.lanes.set(namespace, lane);
    }
    return lane;
  }

  /** Whether a namespace other than this one submitted within PRESENT_FOR_MS (then shares hold). */
  othersPresent(lane: Lane<T>): boolean {
    const since = this.now() - PRESENT_FOR_MS;
    for (const other of this.lanes.values()) {
      if (other === lane) continue;
      if (other.submitted > 0 || other.lastSubmitMs >= since) return true;
      // Gone quiet and holding nothing: forgotten (a namespace that comes back starts a new lane).
      this.lanes.delete(other.namespace);
    }
    return false;
  }

  /** The most this lane may hold now: its share while others are present, else everything. */
  limitOf(lane: Lane<T>): number {
    return this.othersPresent(lane) ? this.share : this.maxInFlight;
  }

  /**
   * How many more events a namespace may submit before it holds its share (Infinity while no
   * other namespace is present): a queue leaves the rest where they are instead of handing them
   * out to be handed back.
   */
  roomOf(namespace: string): number {
    const lane = this.lanes.get(namespace) ?? emptyLane(namespace);
    return this.othersPresent(lane) ? Math.max(0, this.share - lane.submitted) : Infinity;
  }

  /**
   * Whether the lane already holds its share while another namespace is present: what it submits
   * now goes back to the queue. Alone, a namespace may submit past maxInFlight (a message's events
   * come together; the dispatcher sends maxInFlight at a time).
   */
  overShare(lane: Lane<T>): boolean {
    return lane.submitted >= this.share && this.othersPresent(lane);
  }

  /**
   * The events the namespaces other than `namespace` hold past their shares (submitted, not
   * settled): `namespace` may submit that many on top of the dispatcher's bounds. Without a
   * namespace: what every lane holds past its share (the most any namespace may be given on top).
   * Numbers, not an object: asked for every message a queue hands out.
   */
  borrowedEvents(namespace?: string): number {
    const lane = namespace === undefined ? undefined : this.lanes.get(namespace);
    return lane ? this.over.events - Math.max(0, lane.submitted - this.share) : this.over.events;
  }

  /** The same in bytes of their stored JSON. */
  borrowedBytes(namespace?: string): number {
    const lane = namespace === undefined ? undefined : this.lanes.get(namespace);
    return lane ? this.over.bytes - Math.max(0, lane.bytes - this.shareBytes) : this.over.bytes;
  }

  /** What the lanes are sending past their shares, summed: no lane may send more on top of maxInFlight. */
  get sendingOverShares(): number {
    return this.overSending;
  }

  /**
   * What the lanes other than this one are sending past their shares (sent while they were alone):
   * this lane may send that much on top of maxInFlight.
   */
  sendingBorrowedByOthers(lane: Lane<T>): number {
    return this.overSending - Math.max(0, lane.sending - this.share);
  }

  /** The lane's events being sent change by `events` (a request goes out: positive; answered: negative). */
  sendingChanged(lane: Lane<T>, events: number): void {
    this.overSending -= Math.max(0, lane.sending - this.share);
    lane.sending += events;
    this.overSending += Math.max(0, lane.sending - this.share);
  }

  /** The lane's submitted events and bytes change by `events` and `bytes`; what it holds past its share with them. */
  private change(lane: Lane<T>, events: number, bytes: number): void {
    this.over.events -= Math.max(0, lane.submitted - this.share);
    this.over.bytes -= Math.max(0, lane.bytes - this.shareBytes);
    lane.submitted += events;
    lane.bytes += bytes;
    this.over.events += Math.max(0, lane.submitted - this.share);
    this.over.bytes += Math.max(0, lane.bytes - this.shareBytes);
  }

  /** The namespaces holding submitted events. */
  *holding(): Iterable<string> {
    for (const lane of this.lanes.values()) if (lane.submitted > 0) yield lane.namespace;
  }

  /** An event of the lane's (of `bytes`), to be sent in turn. */
  add(lane: Lane<T>, item: T, bytes = 0): void {
    this.change(lane, 1, bytes);
    lane.lastSubmitMs = this.now();
    if (lane.pending.length === 0) this.turns.push(lane);
    lane.pending.push(item);
    this.pendingCount++;
  }

  /**
   * The lanes with events pending, in turn order, for one round of sending: each lane served is
   * moved to the back by served() (a round-robin across namespaces).
   */
  waiting(): ReadonlyArray<Lane<T>> {
    return [...this.turns];
  }

  /** Takes up to `count` of the lane's pending events (its turn moves to the back, or ends). */
  take(lane: Lane<T>, count: number): T[] {
    const items = lane.pending.splice(0, count);
    this.pendingCount -= items.length;
    this.turns = this.turns.filter((l) => l !== lane);
    if (lane.pending.length > 0) this.turns.push(lane);
    return items;
  }

  /** Events of the lane settled (sent and answered, or handed back), and their bytes. */
  settled(lane: Lane<T>, count: number, bytes = 0): void {
    this.change(lane, -count, -bytes);
  }
}
