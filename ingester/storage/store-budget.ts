/**
 * The size limit of a local store (the spool, the outbox): a request is admitted whole or refused
 * whole, before anything is written, and readiness says whether the last request that had to be
 * refused would fit now. "Below the limit" alone would call a store ready that has 2 KiB left
 * and refuses every 50 KiB request.
 */
export class StoreBudget {
  /** Bytes held now (kept by the store as rows come and go). */
  used = 0;
  /** The last refused request that could fit in an empty store (a larger one never fits). */
  private refused = 0;

  constructor(readonly max: number) {}

  /** The members of a commit group that fit, in order; `refuse` is called for each of the others. */
  admit<T extends { bytes: number }>(group: readonly T[], refuse: (item: T) => void): T[] {
    const admitted: T[] = [];
    let projected = this.used;
    for (const item of group) {
      if (projected + item.bytes > this.max) {
        if (item.bytes <= this.max) this.refused = item.bytes;
        refuse(item);
        continue;
      }
      projected += item.bytes;
      admitted.push(item);
    }
    return admitted;
  }

  /** Room for another request: below the limit, and the last refused request would fit. */
  hasRoom(): boolean {
    return this.used + this.refused < this.max;
  }
}
