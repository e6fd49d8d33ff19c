/**
 * The disk space of an SQLite store that fills in a burst and drains (the spool). SQLite never
 * gives space back by itself: deleted rows leave free pages in the database file, and the WAL
 * file stays as large as the largest transaction it ever held. After a burst of maxBytes the
 * directory would stay at about twice maxBytes once drained. So:
 *
 * - `auto_vacuum = INCREMENTAL`: free pages can be cut off the end of the file, a bounded number
 *   per step (incremental_vacuum), so reclaiming never blocks the event loop for long;
 * - `journal_size_limit` and `wal_autocheckpoint`: the WAL is copied back into the database every
 *   walLimitFor(maxBytes) bytes and then truncated to that size (a small store gets a small WAL,
 *   so a 3 MiB volume can hold one);
 * - once the store is empty: every free page is cut off and the WAL is checkpointed with TRUNCATE,
 *   so a drained store is back to a few pages.
 */
import { statfsSync } from 'node:fs';
import type { DatabaseSync, StatementSync } from 'node:sqlite';

const KiB = 1024;
const MiB = 1024 * KiB;
/** The largest WAL kept between checkpoints (SQLite's default auto-checkpoint is at ~4 MiB). */
export const WAL_SIZE_LIMIT_BYTES = 4 * MiB;
const MIN_WAL_BYTES = 256 * KiB;
/** The database's empty pages, its shared-memory index, the replay cursor, one transaction's margin. */
const FIXED_OVERHEAD_BYTES = MiB;

/**
 * Each database's PRAGMA reads, prepared once: a reclaim step follows every commit that removed
 * rows (the outbox settles one per turn while delivering), and preparing its three reads each
 * time showed in the outbox's delivery profile.
 */
const pragmaReads = new WeakMap<DatabaseSync, Map<string, StatementSync>>();

function pragmaValue(db: DatabaseSync, name: string): number {
  let reads = pragmaReads.get(db);
  if (!reads) pragmaReads.set(db, (reads = new Map()));
  let read = reads.get(name);
  if (!read) reads.set(name, (read = db.prepare(`PRAGMA ${name}`)));
  return Number(Object.values(read.get() ?? {})[0] ?? 0);
}

/**
 * The outbox's largest WAL. Its WAL is checkpointed by a worker (wal-checkpointer.ts), not on the
 * loop, and the alert states' random-keyed index dirties about a page per new alert: a larger WAL
 * holds the same pages several times and a checkpoint copies each once (a backlog of 30,000 new
 * alerts: 13-15 worker checkpoints instead of 37-48, 20-30% less of their time).
 */
export const OUTBOX_WAL_SIZE_LIMIT_BYTES = 16 * MiB;

/** The WAL limit of a store of maxBytes: an eighth of it, between 256 KiB and `largest` (4 MiB unless told). */
export const walLimitFor = (maxBytes: number, largest = WAL_SIZE_LIMIT_BYTES): number =>
  Math.min(largest, Math.max(MIN_WAL_BYTES, Math.floor(maxBytes / 8)));

/**
 * Disk a store of maxBytes needs at most: its rows, SQLite's page overhead (~10%), its WAL and
 * a fixed part (fixed overhead above). What the start-up check (volume-check.ts) holds a volume to.
 */
export const diskNeedFor = (maxBytes: number, largestWal = WAL_SIZE_LIMIT_BYTES): number =>
  maxBytes + Math.ceil(maxBytes / 10) + walLimitFor(maxBytes, largestWal) + FIXED_OVERHEAD_BYTES;
/** Pages cut off per reclaim step (4 MiB with 4 KiB pages): bounds the time one step holds the loop. */
const PAGES_PER_STEP = 1024;
/** Free space below this is left alone while rows remain (new rows reuse free pages anyway). */
const RECLAIM_THRESHOLD_BYTES = 8 * 1024 * 1024;

/** Sets the pragmas; call right after opening, before the tables are created. */
export function configureSpace(db: DatabaseSync, walLimitBytes = WAL_SIZE_LIMIT_BYTES): void {
  // Only takes effect on a database that has no tables yet; later it is a no-op. It still writes
  // the header, which fails on a full disk: set only when not set yet.
  if (pragmaValue(db, 'auto_vacuum') !== 2) db.exec('PRAGMA auto_vacuum = INCREMENTAL');
  db.exec(`PRAGMA journal_size_limit = ${walLimitBytes}`);
  const pageSize = pragmaValue(db, 'page_size') || 4096;
  db.exec(`PRAGMA wal_autocheckpoint = ${Math.max(16, Math.floor(walLimitBytes / pageSize))}`);
}

/**
 * One bounded step of giving space back. Returns true when there is more to do (call again on a
 * later turn). With rows left, only free space past the threshold is cut; an empty store is cut to
 * its last page and its WAL truncated.
 */
export function reclaimStep(db: DatabaseSync, empty: boolean): boolean {
  const pragma = (name: string): number => pragmaValue(db, name);
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

/** Bytes an unprivileged process may still write on the filesystem of `dir` (Infinity when unknown). */
export function freeBytes(dir: string): number {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}
