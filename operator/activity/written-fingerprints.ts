/**
 * What a status loop (activity, delivery) last wrote per resource, as a fingerprint, until the
 * watch brings that write back into the cache: a round that runs before then compares with the
 * write, not with the older cached status, so it neither writes the same again nor misses a change.
 */
export class WrittenFingerprints {
  private readonly written = new Map<string, string>();

  /** Whether `next` differs from what `key` holds: its pending write, else `cached` (the cache's). */
  differs(key: string, next: string, cached: string): boolean {
    if (this.written.get(key) === cached) this.written.delete(key);
    return next !== (this.written.get(key) ?? cached);
  }

  wrote(key: string, fingerprint: string): void {
    this.written.set(key, fingerprint);
  }

  /** Forgets the resources not in `seen` (deleted, or no longer watched). */
  keepOnly(seen: ReadonlySet<string>): void {
    for (const key of this.written.keys()) if (!seen.has(key)) this.written.delete(key);
  }
}
