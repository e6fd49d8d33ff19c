/**
 * The places under an Alertmanager destination's caps (`maxAlertsPerNamespace` per namespace,
 * `maxAlerts` in all). A new alert state takes a place before it is written and gives it back
 * when the write does not happen, so concurrent creates never pass a cap between them.
 *
 * The count is the states as last counted plus the places taken since. A re-send round counts the
 * states again, a page at a time, while new ones are being created: a state created during the
 * round may or may not be among those it reads. So the places taken since the round began (and
 * those still being written when it began) are set aside: the round leaves their states out of
 * its count, and its result is its count plus those places, each state counted once. (Counting
 * only what the round read let every round forget the states created while it ran, and the cap
 * was passed by that many.)
 *
 * With the bus each replica takes places from the counts the re-sending replica stored, plus its
 * own since: replicas creating new alerts at the same moment can pass a cap together by what they
 * created since the last round, until that round's count.
 */
import type { AlertCounts } from './alert-store.js';

/** A place taken for one new state. */
export interface Slot {
  readonly namespace: string;
  readonly key: string;
}

export type CapReached = 'namespace' | 'total';

export class AlertSlots {
  private counts = new Map<string, number>();
  private total = 0;
  /** Places taken whose state is not written yet. */
  private readonly pending = new Set<Slot>();
  /** While a round runs: the places it does not count itself, and how many of them each key has. */
  private round?: { slots: Set<Slot>; keys: Map<string, number> };

  constructor(
    private readonly maxPerNamespace: number,
    private readonly max: number,
  ) {}

  /** A place for a new state of `namespace`, or the cap that is reached. */
  take(namespace: string, key: string): Slot | CapReached {
    if ((this.counts.get(namespace) ?? 0) >= this.maxPerNamespace) return 'namespace';
    if (this.total >= this.max) return 'total';
    this.add(namespace, 1);
    const slot: Slot = { namespace, key };
    this.pending.add(slot);
    if (this.round) this.setAside(slot);
    return slot;
  }

  /** The state was written: the place stays taken. */
  settle(slot: Slot): void {
    this.pending.delete(slot);
  }

  /** The state was not written (the write failed, or another writer won): the place is free again. */
  release(slot: Slot): void {
    if (!this.pending.delete(slot)) return;
    this.add(slot.namespace, -1);
    const round = this.round;
    if (round?.slots.delete(slot)) {
      const n = (round.keys.get(slot.key) ?? 1) - 1;
      if (n > 0) round.keys.set(slot.key, n);
      else round.keys.delete(slot.key);
    }
  }

  /** Counts from elsewhere (the store: the first count, or the re-sending replica's): those, plus the places being written. */
  counted(counts: AlertCounts): void {
    this.replace(counts, this.pending);
  }

  /** A re-send round begins counting the states. */
  startRound(): void {
    this.round = { slots: new Set(), keys: new Map() };
    for (const slot of this.pending) this.setAside(slot);
  }

  /** Whether the round must leave the state of `key` out: its place counts it. */
  createdThisRound(key: string): boolean {
    return this.round?.keys.has(key) ?? false;
  }

  /** The round's count is done: the counts become it plus the places set aside; returns them. */
  endRound(counted: AlertCounts): AlertCounts {
    const slots = this.round?.slots ?? new Set<Slot>();
    this.round = undefined;
    return this.replace(counted, slots);
  }

  /** The round failed: the counts stay as they are. */
  abandonRound(): void {
    this.round = undefined;
  }

  /** States per namespace as this replica counts them (for tests). */
  snapshot(): AlertCounts {
    return Object.fromEntries(this.counts);
  }

  private setAside(slot: Slot): void {
    const round = this.round as { slots: Set<Slot>; keys: Map<string, number> };
    round.slots.add(slot);
    round.keys.set(slot.key, (round.keys.get(slot.key) ?? 0) + 1);
  }

  private replace(counts: AlertCounts, plus: Iterable<Slot>): AlertCounts {
    this.counts = new Map(Object.entries(counts));
    this.total = [...this.counts.values()].reduce((a, b) => a + b, 0);
    for (const slot of plus) this.add(slot.namespace, 1);
    return this.snapshot();
  }

  private add(namespace: string, n: number): void {
    const next = (this.counts.get(namespace) ?? 0) + n;
    if (next > 0) this.counts.set(namespace, next);
    else this.counts.delete(namespace);
    this.total = Math.max(0, this.total + n);
  }
}
