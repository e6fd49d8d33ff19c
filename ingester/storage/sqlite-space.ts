/**
 * The disk space of an SQLite store that fills in a burst and drains (the spool). SQLite never
 * gives space back by itself: deleted rows leave free pages in the database file, and the WAL
 * file stays as large as the largest transaction it ever held. After a burst of maxBytes the
 * directory would stay at about twice maxBytes once drained. So:
 *
 * - `auto_vacuum = INCREMENTAL`: free pages can be cut off the end of the file, a bounded number
 *   per step (incremental_vacuum), so reclaiming never blocks the event loop for long;
 * - `journal_size_limit`: after a checkpoint the WAL file is truncated to this size (it is reused
 *   from the start, so a small WAL also lets a delete succeed on a full disk);
 * - once the store is empty: every free page is cut off and the WAL is checkpointed with TRUNCATE,
 *   so a drained store is back to a few pages.
 */
import { closeSync, existsSync, ftruncateSync, openSync, rmSync, writeSync } from 'node:fs';
import type { DatabaseSync } from 'node:sqlite';

/** The WAL file is truncated to this after each checkpoint (SQLite's auto-checkpoint is at ~4 MiB). */
export const WAL_SIZE_LIMIT_BYTES = 4 * 1024 * 1024;
/** Pages cut off per reclaim step (4 MiB with 4 KiB pages): bounds the time one step holds the loop. */
const PAGES_PER_STEP = 1024;
/** Free space below this is left alone while rows remain (new rows reuse free pages anyway). */
const RECLAIM_THRESHOLD_BYTES = 8 * 1024 * 1024;

/**
 * Sets the pragmas; call right after opening, before the tables are created. A database created
 * without auto_vacuum (an older intake) is converted by a VACUUM once it is empty (see reclaimStep).
 */
export function configureSpace(db: DatabaseSync): void {
  // Only takes effect on a database that has no tables yet; later it is a no-op until VACUUM.
  db.exec('PRAGMA auto_vacuum = INCREMENTAL');
  db.exec(`PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
}

/**
 * One bounded step of giving space back. Returns true when there is more to do (call again on a
 * later turn). With rows left, only free space past the threshold is cut; an empty store is cut to
 * its last page and its WAL truncated.
 */
export function reclaimStep(db: DatabaseSync, empty: boolean): boolean {
  const pragma = (name: string): number => Number(Object.values(db.prepare(`PRAGMA ${name}`).get() ?? {})[0] ?? 0);
  if (pragma('auto_vacuum') !== 2) {
    if (!empty) return false;
    // Converting rewrites the whole file: only worth it (and cheap) once nothing is left in it.
    db.exec('PRAGMA auto_vacuum = INCREMENTAL');
    db.exec('VACUUM');
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    return false;
  }
  const free = pragma('freelist_count');
  if (free > 0 && (empty || free * pragma('page_size') > RECLAIM_THRESHOLD_BYTES)) {
    // An autocommit write: SQLite's auto-checkpoint then copies it back and the file shrinks.
    db.exec(`PRAGMA incremental_vacuum(${PAGES_PER_STEP})`);
    if (free > PAGES_PER_STEP) return true;
  }
  // Empty: copy everything back now and cut the WAL to nothing (the checkpoint is what shrinks the file).
  if (empty) db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  return false;
}

/** Space held back so a store on a full disk can still write its deletes (and so drain). */
export const DISK_RESERVE_BYTES = 8 * 1024 * 1024;

/** SQLITE_FULL, or the filesystem's ENOSPC / EDQUOT underneath. */
export function isDiskFull(err: unknown): boolean {
  const e = err as { errcode?: number; code?: string; message?: string };
  return (
    (e.errcode !== undefined && (e.errcode & 0xff) === 13) ||
    e.code === 'ENOSPC' ||
    e.code === 'EDQUOT' ||
    /database or disk is full|no space left|quota/i.test(e.message ?? '')
  );
}

/**
 * A file of real (written, not sparse) blocks next to the database. Deleting it frees enough
 * room for the deletes and checkpoints that drain the store; it is written again once the store
 * is empty. A reserve that cannot be written (the disk is full already) is simply not there.
 */
export class DiskReserve {
  constructor(
    private readonly path: string,
    private readonly bytes = DISK_RESERVE_BYTES,
  ) {}

  /** Writes the reserve when it is missing; false when the disk has no room for it. */
  ensure(): boolean {
    if (existsSync(this.path)) return true;
    let fd: number | undefined;
    try {
      fd = openSync(this.path, 'w', 0o600);
      const chunk = Buffer.alloc(64 * 1024);
      for (let written = 0; written < this.bytes; written += chunk.length) writeSync(fd, chunk);
      return true;
    } catch {
      if (fd !== undefined) ftruncateSync(fd, 0);
      rmSync(this.path, { force: true });
      return false;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /** Frees the reserve's space; false when there was none to free. */
  release(): boolean {
    if (!existsSync(this.path)) return false;
    rmSync(this.path, { force: true });
    return true;
  }
}
