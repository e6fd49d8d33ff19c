/**
 * Makes a SQLite database's committed transactions durable off the event loop: its WAL's file
 * fdatasynced in libuv's thread pool. The database runs with synchronous=NORMAL, so SQLite's
 * COMMIT on the request thread only writes the WAL's frames (a kill -9 cannot lose them: they are
 * in the kernel's page cache); what must survive a power loss before an answer is flushed here,
 * and meanwhile the request thread serves other requests. One flush covers every commit before it.
 * A checkpoint still syncs the WAL before it copies and the database after (SQLite's NORMAL in
 * WAL mode), so durability equals synchronous=FULL's for whoever waits for flush().
 */
import { closeSync, fdatasync, openSync } from 'node:fs';

export class WalFlush {
  /** The WAL's file, opened at the first flush (SQLite creates it at the first write). */
  private fd: number | undefined;
  /** Flushes under way: the file is closed only once none uses its descriptor. */
  private readonly flushing = new Set<Promise<void>>();
  /** Descriptors to close once the flushes under way end (a database closed or removed meanwhile). */
  private readonly retired: number[] = [];

  /** `databaseFile` is the database's path; ':memory:' has nothing to flush. */
  constructor(private readonly databaseFile: string) {}

  /** Resolves once everything committed so far is on the disk; rejects with the fdatasync's error. */
  flush(): Promise<void> {
    if (this.databaseFile === ':memory:') return Promise.resolve();
    let fd: number;
    try {
      fd = this.fd ??= openSync(`${this.databaseFile}-wal`, 'r');
    } catch (err) {
      return Promise.reject(err as Error);
    }
    const flushed = new Promise<void>((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));
    this.flushing.add(flushed);
    const done = (): void => {
      this.flushing.delete(flushed);
      if (this.flushing.size === 0) this.closeRetired();
    };
    flushed.then(done, done);
    return flushed;
  }

  /**
   * Forgets the WAL's file: call it when the database is closed, or its files are removed and made
   * anew (a descriptor kept on a removed file would flush a file nobody reads any more). The
   * descriptor is closed now, or when the flushes still using it end (never under one: the number
   * could be reused by another file meanwhile).
   */
  release(): void {
    if (this.fd !== undefined) this.retired.push(this.fd);
    this.fd = undefined;
    if (this.flushing.size === 0) this.closeRetired();
  }

  /** Waits for the flushes under way (a shutdown that wants them done). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.flushing]);
  }

  private closeRetired(): void {
    for (const fd of this.retired.splice(0)) closeSync(fd);
  }
}
