/**
 * What the inspector's stream holds, by namespace (bus-store.ts): every replica follows the
 * stream's headers (every replica's captures and attempts, and what was there before it started)
 * into this ledger, so a namespace's share and the whole are one budget for all replicas together,
 * not one per replica, and a restart forgets nothing. A new capture reserves its bytes here before
 * it is written; a namespace at its share gives up its own oldest message (its sequence is deleted
 * from the stream), never another's; past the whole, the namespace holding the most.
 *
 * Two replicas writing at once may each reserve room the other is taking: when the follower brings a
 * message that takes its namespace past its share, the namespace gives up its own oldest stored
 * messages then (every replica that sees it does; deleting a message twice is harmless), so the
 * share holds again as soon as the replicas have read each other's writes.
 *
 * The ledger may count a message the stream no longer has (another replica trimmed or deleted it):
 * that only makes its namespace give up its own oldest sooner, never another's, and reconcile()
 * forgets them. Every way a message leaves the stream takes the oldest of its subject (a trim
 * keeps the newest, max_age and the namespace's share take the oldest), so per subject the stream
 * holds the newest of what the ledger knows, and a count per subject is enough to reconcile.
 */
import type { InspectorSettings } from './settings.js';

/** One message of the stream (a capture or an attempt), or one being written (no sequence yet). */
export interface Held {
  readonly namespace: string;
  readonly subject: string;
  readonly bytes: number;
  readonly atMs: number;
  seq?: number;
  /** Given up before its acknowledgement came: delete it as soon as its sequence is known. */
  evicted?: boolean;
}

interface Namespace {
  bytes: number;
  /** Of `bytes`, reservations not acknowledged yet (the follower may count the same message too). */
  unsettled: number;
  /** Oldest first. */
  items: Held[];
}

/** Sequences this replica gave up, remembered so the follower does not count them again (bounded). */
const MAX_GIVEN_UP = 10_000;

export class StreamLedger {
  private readonly byNamespace = new Map<string, Namespace>();
  private readonly givenUp = new Set<number>();
  private readonly bySeq = new Map<number, Held>();
  private total = 0;

  constructor(
    private readonly s: Pick<InspectorSettings, 'maxBytes' | 'maxBytesPerNamespace' | 'maxAgeMs'>,
    private readonly now: () => number = Date.now,
  ) {}

  /** Bytes held, in all or by one namespace. */
  bytes(namespace?: string): number {
    return namespace === undefined ? this.total : (this.byNamespace.get(namespace)?.bytes ?? 0);
  }

  /** Messages held (with a sequence or being written). */
  get size(): number {
    let n = 0;
    for (const ns of this.byNamespace.values()) n += ns.items.length;
    return n;
  }

  has(seq: number): boolean {
    return this.bySeq.has(seq);
  }

  /**
   * A message the stream holds (read by the follower; any replica's): counted once. Returns what
   * its namespace gives up when it takes the namespace past its share (replicas that wrote at once).
   */
  add(h: Held & { seq: number }): Held[] {
    if (this.givenUp.delete(h.seq) || this.bySeq.has(h.seq)) return [];
    this.push(h);
    this.bySeq.set(h.seq, h);
    const ns = this.namespace(h.namespace);
    const evicted: Held[] = [];
    // Stored bytes only: a reservation of ours may be this very message, counted twice until settled.
    while (ns.bytes - ns.unsettled > this.s.maxBytesPerNamespace) {
      const oldest = this.oldestStored(ns);
      if (!oldest) break;
      this.forget(oldest);
      this.rememberGivenUp(oldest.seq as number);
      oldest.evicted = true;
      evicted.push(oldest);
    }
    return evicted;
  }

  /**
   * Reserves `bytes` of `namespace` for a new message on `subject`, before it is written; returns
   * it and what was given up for it (to delete from the stream), or undefined when it can never fit.
   */
  reserve(namespace: string, subject: string, bytes: number): { held: Held; evicted: Held[] } | undefined {
    if (bytes > this.s.maxBytesPerNamespace || bytes > this.s.maxBytes) return undefined;
    this.expire();
    const ns = this.namespace(namespace);
    const evicted: Held[] = [];
    while (ns.bytes + bytes > this.s.maxBytesPerNamespace) evicted.push(this.giveUpOldest(ns));
    while (this.total + bytes > this.s.maxBytes) {
      let largest = ns;
      for (const other of this.byNamespace.values()) if (other.bytes > largest.bytes) largest = other;
      evicted.push(this.giveUpOldest(largest));
    }
    const held: Held = { namespace, subject, bytes, atMs: this.now() };
    this.push(held);
    return { held, evicted };
  }

  /** The stream stored a reserved message at `seq` (the follower may have counted it first). */
  settle(held: Held, seq: number): void {
    if (this.bySeq.has(seq)) {
      this.remove(held);
      return;
    }
    if (held.evicted) {
      held.seq = seq;
      this.rememberGivenUp(seq);
      return;
    }
    const ns = this.byNamespace.get(held.namespace);
    if (ns) ns.unsettled -= held.bytes;
    held.seq = seq;
    this.bySeq.set(seq, held);
  }

  /** A write the stream did not take: its reservation goes back. */
  release(held: Held): void {
    this.remove(held);
  }

  /**
   * Forgets what the stream no longer holds: sequences before its first, and per subject the
   * oldest beyond the count it holds (of the messages up to `lastSeq`, which the count covers).
   */
  reconcile(firstSeq: number, lastSeq: number, counts: Readonly<Record<string, number>>): void {
    const gone: Held[] = [];
    const bySubject = new Map<string, Held[]>();
    for (const ns of this.byNamespace.values())
      for (const h of ns.items) {
        if (h.seq === undefined || h.seq > lastSeq) continue;
        if (h.seq < firstSeq) {
          gone.push(h);
          continue;
        }
        const list = bySubject.get(h.subject) ?? [];
        list.push(h);
        bySubject.set(h.subject, list);
      }
    for (const [subject, list] of bySubject) {
      const extra = list.length - (counts[subject] ?? 0);
      if (extra <= 0) continue;
      list.sort((x, y) => (x.seq as number) - (y.seq as number));
      gone.push(...list.slice(0, extra));
    }
    this.forgetAll(new Set(gone));
    for (const seq of this.givenUp) if (seq < firstSeq) this.givenUp.delete(seq);
  }

  private namespace(name: string): Namespace {
    let ns = this.byNamespace.get(name);
    if (!ns) {
      ns = { bytes: 0, unsettled: 0, items: [] };
      this.byNamespace.set(name, ns);
    }
    return ns;
  }

  private push(h: Held): void {
    const ns = this.namespace(h.namespace);
    ns.items.push(h);
    ns.bytes += h.bytes;
    if (h.seq === undefined) ns.unsettled += h.bytes;
    this.total += h.bytes;
  }

  private remove(h: Held): void {
    const ns = this.byNamespace.get(h.namespace);
    // The oldest (expired) or one of the newest (a write being settled or released): look from the end.
    const i = ns?.items[0] === h ? 0 : (ns?.items.lastIndexOf(h) ?? -1);
    if (!ns || i < 0) return;
    ns.items.splice(i, 1);
    this.uncount(ns, h);
  }

  private forget(h: Held): void {
    this.remove(h);
    if (h.seq !== undefined && this.bySeq.get(h.seq) === h) this.bySeq.delete(h.seq);
  }

  /** Forgets many at once (a reconcile): one pass over each namespace's list, not one per message. */
  private forgetAll(gone: ReadonlySet<Held>): void {
    if (gone.size === 0) return;
    for (const [name, ns] of [...this.byNamespace]) {
      const kept = ns.items.filter((h) => !gone.has(h));
      if (kept.length === ns.items.length) continue;
      for (const h of ns.items) {
        if (!gone.has(h)) continue;
        ns.bytes -= h.bytes;
        if (h.seq === undefined) ns.unsettled -= h.bytes;
        this.total -= h.bytes;
        if (h.seq !== undefined && this.bySeq.get(h.seq) === h) this.bySeq.delete(h.seq);
      }
      ns.items = kept;
      if (kept.length === 0) this.byNamespace.delete(name);
    }
  }

  private uncount(ns: Namespace, h: Held): void {
    ns.bytes -= h.bytes;
    if (h.seq === undefined) ns.unsettled -= h.bytes;
    this.total -= h.bytes;
    if (ns.items.length === 0) this.byNamespace.delete(h.namespace);
  }

  /** Forgets what the stream's max_age removed already. */
  private expire(): void {
    const since = this.now() - this.s.maxAgeMs;
    for (const ns of [...this.byNamespace.values()])
      while (ns.items.length > 0 && (ns.items[0] as Held).atMs < since) {
        const h = ns.items[0] as Held;
        this.forget(h);
      }
  }

  private giveUpOldest(ns: Namespace): Held {
    const h = ns.items.shift() as Held;
    this.uncount(ns, h);
    if (h.seq !== undefined) {
      this.bySeq.delete(h.seq);
      this.rememberGivenUp(h.seq);
    }
    h.evicted = true;
    return h;
  }

  /** The stored message (with a sequence) written first. */
  private oldestStored(ns: Namespace): Held | undefined {
    let oldest: Held | undefined;
    for (const h of ns.items)
      if (h.seq !== undefined && (oldest === undefined || h.seq < (oldest.seq as number))) oldest = h;
    return oldest;
  }

  private rememberGivenUp(seq: number): void {
    if (this.givenUp.size >= MAX_GIVEN_UP) this.givenUp.delete(this.givenUp.values().next().value as number);
    this.givenUp.add(seq);
  }
}
