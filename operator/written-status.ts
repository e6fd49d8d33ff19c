/**
 * The statuses the operator wrote that its cache does not show yet. A reconcile that runs again
 * before the watch event of its own status write arrives (a resync, a Secret's event, a quota's)
 * would read the old status from the cache and write it again (with new transition times, so
 * not even equal); this keeps each written status until the cache shows that write (the
 * resourceVersion it returned), for the reconcile to start from instead.
 *
 * An entry also goes after `ttlMs`: a relisted cache may never deliver that exact resourceVersion,
 * and then the status in the cache is at least as new as the write.
 */
const DEFAULT_TTL_MS = 30_000;

export class WrittenStatus {
  private readonly pending = new Map<string, { resourceVersion: string; status: object; at: number }>();

  constructor(
    private readonly ttlMs = DEFAULT_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** The status a write for `key` returned, with the resourceVersion it returned. */
  record(key: string, resourceVersion: string | undefined, status: object | undefined): void {
    if (!resourceVersion || !status) return;
    this.pending.set(key, { resourceVersion, status, at: this.now() });
  }

  /** The status last written for `key` while the cache does not show that write yet; else undefined. */
  fresher(key: string): object | undefined {
    const entry = this.pending.get(key);
    if (!entry) return undefined;
    if (this.now() - entry.at > this.ttlMs) {
      this.pending.delete(key);
      return undefined;
    }
    return entry.status;
  }

  /** The cache shows this resourceVersion of `key`: a write that returned it is no longer pending. */
  seen(key: string, resourceVersion: string | undefined): void {
    if (resourceVersion !== undefined && this.pending.get(key)?.resourceVersion === resourceVersion)
      this.pending.delete(key);
  }

  forget(key: string): void {
    this.pending.delete(key);
  }

  get size(): number {
    return this.pending.size;
  }
}
