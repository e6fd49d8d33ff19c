/**
 * Room kept aside so that a store on a full disk can still settle what it holds: the outbox's
 * leases and deletes, its alert states, the dead letters' claims and removals. Every one of
 * those is a write (SQLite WAL frames), and on a full disk it fails, so a store that filled its
 * disk, or whose disk something else filled, would never deliver nor drain, even after a restart
 * (a restart needs a new WAL and shared-memory index too).
 *
 * A file of `bytes`, created while there is room. A write that fails for lack of disk gives the
 * file back to the filesystem, copies the WAL into the database and restarts it from its first
 * frame (a WAL is then rewritten in place, it needs no new pages), and runs once more. Writes
 * that add to the store (accepting an event, keeping a letter) never use the reserve: they are
 * refused while it is not in place, so the room it gave is left for draining, and the store is
 * back in service once the disk has room for the reserve again (refill).
 *
 * Unlike the spool's replay cursor (replay-cursor.ts), this needs no second record of what was
 * handed on: these stores settle rows in any order (per destination, retries, claims), and their
 * writes on a full disk are few and small once the WAL restarts in place.
 */
import { closeSync, fdatasyncSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { freeBytes, isDiskFull } from './sqlite-space.js';

/** The default size: a shared-memory index (32 KiB) and a few WAL transactions of leases and deletes. */
export const DISK_RESERVE_BYTES = 256 * 1024;
/** How often a missing reserve is tried again (a statfs, and a write when there is room). */
const REFILL_INTERVAL_MS = 1000;
const CHUNK = 64 * 1024;

export class DiskReserve {
  private lastRefill = 0;
  private present = false;

  constructor(
    readonly path: string,
    readonly bytes = DISK_RESERVE_BYTES,
    /** Told once each time the reserve is given up (the disk is full). */
    private readonly onRelease: () => void = () => undefined,
  ) {
    this.refill(true);
  }

  /** Whether the reserve is in place (tried again at most once a second when not). */
  get held(): boolean {
    if (!this.present) this.refill();
    return this.present;
  }

  /**
   * Creates the file when missing and the filesystem has room for it and as much again (so the
   * store's own next writes are not what fills the disk right away). True when it is in place.
   */
  refill(force = false): boolean {
    if (this.present) return true;
    const now = Date.now();
    if (!force && now - this.lastRefill < REFILL_INTERVAL_MS) return false;
    this.lastRefill = now;
    try {
      if (statSync(this.path).size >= this.bytes) return (this.present = true);
    } catch {
      // missing: created below
    }
    if (freeBytes(dirname(this.path)) < 2 * this.bytes) return false;
    let fd: number | undefined;
    try {
      fd = openSync(this.path, 'w', 0o600);
      // Written, not truncated to size: a sparse file would hold no blocks to give back.
      const chunk = Buffer.alloc(CHUNK, 0);
      for (let at = 0; at < this.bytes; at += CHUNK) writeSync(fd, chunk, 0, Math.min(CHUNK, this.bytes - at), at);
      fdatasyncSync(fd);
      this.present = true;
    } catch {
      rmSync(this.path, { force: true });
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    return this.present;
  }

  /**
   * Runs `write`; when it fails for lack of disk, gives the reserve back, restarts `db`'s WAL in
   * place, and runs it once more. Throws what the last attempt threw.
   */
  withRoom<T>(db: DatabaseSync | undefined, write: () => T): T {
    try {
      return write();
    } catch (err) {
      if (!isDiskFull(err)) throw err;
      this.release();
      if (db) restartWal(db);
      return write();
    }
  }

  /** Gives the reserve's space back to the filesystem (for the writes that drain the store). */
  release(): void {
    const had = this.present;
    rmSync(this.path, { force: true });
    this.present = false;
    this.lastRefill = Date.now();
    if (had) this.onRelease();
  }
}

/**
 * Copies the WAL into the database and makes the next write start at its first frame: the WAL is
 * rewritten in place instead of growing. Best effort (a reader in the middle keeps it from
 * completing; the write is tried anyway).
 */
function restartWal(db: DatabaseSync): void {
  try {
    if (db.isOpen && !db.isTransaction) db.exec('PRAGMA wal_checkpoint(RESTART)');
  } catch {
    // the write that follows says whether there is room
  }
}
