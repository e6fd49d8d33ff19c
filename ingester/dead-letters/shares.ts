/**
 * The byte shares of a dead-letter store, kept in memory from the store's metadata (never the
 * bodies). The policy when a new letter does not fit, decided here once for every store:
 *   1. larger than a namespace's share: not kept (LetterTooLarge; the sender is told, nothing else moves);
 *   2. its namespace would exceed its share: that namespace's oldest letters are dropped;
 *   3. the store would exceed maxBytes: the oldest letters of the namespace holding the most are
 *      dropped (a namespace below its share loses letters only when it is the largest one).
 * So a tenant that floods the dead letter pushes out only its own letters, and a new letter is
 * never refused for lack of room. Every drop is returned to the store, which counts it.
 */
import {
  LetterTooLarge,
  matches,
  type DeadLetterLimits,
  type DeadLetterQuery,
  type DropReason,
  type LetterMeta,
} from './model.js';

export class ShareLedger {
  /** Per namespace, oldest first. */
  private readonly byNamespace = new Map<string, LetterMeta[]>();
  private readonly bytesOf = new Map<string, number>();
  private readonly seqs = new Set<number>();
  private total = 0;

  constructor(readonly limits: DeadLetterLimits) {}

  get bytes(): number {
    return this.total;
  }

  namespaces(): ReadonlyMap<string, number> {
    return this.bytesOf;
  }

  has(seq: number): boolean {
    return this.seqs.has(seq);
  }

  /** The letters of `namespace` with this id (a newer one with the same id replaces them). */
  withId(namespace: string, id: string): LetterMeta[] {
    return (this.byNamespace.get(namespace) ?? []).filter((m) => m.id === id);
  }

  /** Every letter, oldest first, for selecting without reading bodies. */
  all(): LetterMeta[] {
    return [...this.byNamespace.values()].flat().sort((a, b) => a.seq - b.seq);
  }

  /**
   * The letters `q` selects, oldest first, at most `q.limit`: each namespace's list is read from
   * `q.afterSeq` on, and only up to `q.limit` from each, so a bulk replay's page costs its page,
   * not a copy of the whole index.
   */
  select(q: DeadLetterQuery): LetterMeta[] {
    const picked: LetterMeta[] = [];
    for (const list of this.listsOf(q)) {
      let taken = 0;
      for (let i = firstAfter(list, q.afterSeq ?? 0); i < list.length && taken < q.limit; i++) {
        const m = list[i] as LetterMeta;
        if (q.maxSeq !== undefined && m.seq > q.maxSeq) break;
        if (matches(m, q)) {
          picked.push(m);
          taken++;
        }
      }
    }
    return picked.sort((a, b) => a.seq - b.seq).slice(0, q.limit);
  }

  /** How many letters `q` selects (its limit aside) and the newest one's seq. */
  census(q: DeadLetterQuery): { matched: number; lastSeq: number } {
    let matched = 0;
    let lastSeq = 0;
    for (const list of this.listsOf(q))
      for (const m of list)
        if (matches(m, q)) {
          matched++;
          lastSeq = Math.max(lastSeq, m.seq);
        }
    return { matched, lastSeq };
  }

  private listsOf(q: DeadLetterQuery): LetterMeta[][] {
    if (q.namespace === undefined) return [...this.byNamespace.values()];
    const list = this.byNamespace.get(q.namespace);
    return list ? [list] : [];
  }

  /** Records a letter (idempotent by seq: the bus index sees its own publishes again). */
  add(m: LetterMeta): void {
    if (this.seqs.has(m.seq)) return;
    this.seqs.add(m.seq);
    const list = this.byNamespace.get(m.namespace) ?? [];
    // Almost always the newest; an index rebuilt from the bus may see them in any order.
    if (list.length === 0 || (list.at(-1) as LetterMeta).seq < m.seq) list.push(m);
    else
      list.splice(
        list.findIndex((x) => x.seq > m.seq),
        0,
        m,
      );
    this.byNamespace.set(m.namespace, list);
    this.bytesOf.set(m.namespace, (this.bytesOf.get(m.namespace) ?? 0) + m.bytes);
    this.total += m.bytes;
  }

  delete(seq: number, namespace?: string): LetterMeta | undefined {
    if (!this.seqs.has(seq)) return undefined;
    for (const [ns, list] of namespace === undefined
      ? this.byNamespace
      : [[namespace, this.byNamespace.get(namespace) ?? []] as const]) {
      const i = list.findIndex((m) => m.seq === seq);
      if (i < 0) continue;
      const [m] = list.splice(i, 1) as [LetterMeta];
      this.seqs.delete(seq);
      const left = (this.bytesOf.get(ns) ?? 0) - m.bytes;
      if (list.length === 0) {
        this.byNamespace.delete(ns);
        this.bytesOf.delete(ns);
      } else this.bytesOf.set(ns, left);
      this.total -= m.bytes;
      return m;
    }
    return undefined;
  }

  /**
   * The letters to drop so that `bytes` more for `namespace` fit, with why; throws LetterTooLarge
   * when it can never fit. Does not change the ledger: the store deletes them, then calls delete().
   */
  makeRoom(namespace: string, bytes: number): Array<{ meta: LetterMeta; reason: DropReason }> {
    const { maxBytes, maxBytesPerNamespace } = this.limits;
    const share = Math.min(maxBytes, maxBytesPerNamespace);
    if (bytes > share) throw new LetterTooLarge(bytes, share);
    const out: Array<{ meta: LetterMeta; reason: DropReason }> = [];
    const taken = new Map<string, number>();
    const held = (ns: string): number => (this.bytesOf.get(ns) ?? 0) - (taken.get(ns) ?? 0);
    const dropOldest = (ns: string, reason: DropReason): void => {
      const list = this.byNamespace.get(ns) ?? [];
      const next = list[out.filter((d) => d.meta.namespace === ns).length] as LetterMeta;
      out.push({ meta: next, reason });
      taken.set(ns, (taken.get(ns) ?? 0) + next.bytes);
    };
    while (held(namespace) + bytes > share) dropOldest(namespace, 'namespace_share');
    let total = this.total - [...taken.values()].reduce((a, b) => a + b, 0);
    while (total + bytes > maxBytes) {
      let largest = namespace;
      for (const ns of this.bytesOf.keys()) if (held(ns) > held(largest)) largest = ns;
      const before = held(largest);
      dropOldest(largest, 'store_full');
      total -= before - held(largest);
    }
    return out;
  }
}

/** The index of the first letter in `list` (sorted by seq) with a seq above `seq`. */
function firstAfter(list: readonly LetterMeta[], seq: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((list[mid] as LetterMeta).seq <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
