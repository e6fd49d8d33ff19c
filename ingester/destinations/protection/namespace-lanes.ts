/**
 * A destination's events waiting to be sent, one lane per namespace, served in turn: a request
 * holds one namespace's events (so a receiver's answer, and the circuit breaker it feeds, is that
 * namespace's: receiver-guard.ts), and one namespace's backlog never sits in front of another's
 * events. While several namespaces send to the destination, each may hold at most its share of the
 * in-flight bound (`share`: half of maxInFlight, rounded up) so that a receiver slow or hanging on
 * one tenant's payloads keeps the rest for the others; a destination only one namespace uses
 * (a team's own) gives it all.
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
}

/** How long a namespace that submitted counts as present: the others are held to their share meanwhile. */
export const PRESENT_FOR_MS = 30_000;

export class NamespaceLanes<T> {
  private readonly lanes = new Map<string, Lane<T>>();
  /** Lanes with events pending, in the order they take their next turn. */
  private turns: Array<Lane<T>> = [];
  /** Events pending over every lane. */
  pendingCount = 0;

  constructor(
    private readonly maxInFlight: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The most one namespace may hold while another is present. */
  get share(): number {
    return Math.max(1, Math.ceil(this.maxInFlight / 2));
  }

  lane(namespace: string): Lane<T> {
    let lane = this.lanes.get(namespace);
    if (!lane) {
      lane = { namespace, pending: [], submitted: 0, sending: 0, lastSubmitMs: 0 };
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
    const lane = this.lanes.get(namespace) ?? { namespace, pending: [], submitted: 0, sending: 0, lastSubmitMs: 0 };
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

  /** An event of the lane's, to be sent in turn. */
  add(lane: Lane<T>, item: T): void {
    lane.submitted++;
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

  /** Events of the lane settled (sent and answered, or handed back). */
  settled(lane: Lane<T>, count: number): void {
    lane.submitted -= count;
  }
}
