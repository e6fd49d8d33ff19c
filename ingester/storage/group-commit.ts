/**
 * Group commit: what arrives within one turn of the event loop is handed over at once, so that a
 * busy ingester pays one write (log sink) or one transaction and fsync (spool) per turn instead of
 * one per request. Each caller is answered by the commit function, after its group was committed.
 */
export class GroupCommit<T> {
  private pending: T[] = [];
  private scheduled = false;

  constructor(private readonly commit: (group: T[]) => void) {}

  add(item: T): void {
    this.pending.push(item);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Commits what is pending now; the scheduled turn then finds nothing (shutdown, flush()). */
  flush(): void {
    const group = this.pending;
    this.pending = [];
    this.scheduled = false;
    if (group.length > 0) this.commit(group);
  }
}
