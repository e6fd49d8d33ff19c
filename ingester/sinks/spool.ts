/**
 * The local spool: events the bus could not take yet, held durably until the replayer hands them
 * on (docs/design.md §5). SQLite through Node's built-in node:sqlite, WAL journal with
 * synchronous=FULL, so a committed transaction survives a kill -9 of the process and (on honest
 * disks) a crash of the machine. No hand-written log format.
 *
 * Group commit: every append that arrives within one turn of the event loop goes into one
 * transaction, i.e. one fsync, and each caller is answered only after that commit returned.
 * An append that would take the spool past maxBytes is refused whole; so is every append of a
 * group whose commit failed (disk full, I/O error): nothing of it counts as held.
 *
 * One row per bus message (bus-messages.ts: one event, or a request's events), keyed by its
 * message id (UNIQUE): spooling the same message twice (a sender's retry during an outage) keeps
 * one row. Each row counts the events it holds, so depth is in events. Rows leave oldest first
 * (seq order).
 */
import { mkdirSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { GroupCommit } from '../storage/group-commit.js';
import { configureSpace, DiskReserve, isDiskFull, reclaimStep, WAL_SIZE_LIMIT_BYTES } from '../storage/sqlite-space.js';
import { StoreBudget } from '../storage/store-budget.js';

export interface SpoolRecord {
  id: string;
  subject: string;
  payload: string;
  /** Events the payload holds (1 when absent). */
  events?: number;
}

export interface SpooledRow extends SpoolRecord {
  events: number;
  seq: number;
  spooledAt: number;
}

/** Why an append was refused; the sink turns it into a 503. */
export class SpoolError extends Error {
  constructor(
    readonly reason: 'full' | 'unavailable' | 'write_failed',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SpoolError';
  }
}

/** Bytes a row costs beyond its strings (SQLite row and index overhead, roughly). */
const ROW_OVERHEAD = 64;
/** How often a spool that could not be opened is tried again. */
const REOPEN_INTERVAL_MS = 1000;

interface PendingAppend {
  records: readonly SpoolRecord[];
  bytes: number;
  resolve: () => void;
  reject: (err: SpoolError) => void;
}

interface Statements {
  insert: StatementSync;
  peek: StatementSync;
  remove: StatementSync;
  oldest: StatementSync;
}

export class Spool {
  private db?: DatabaseSync;
  private st?: Statements;
  private lastOpenAttempt = 0;
  private openError?: Error;
  private readonly group = new GroupCommit<PendingAppend>((group) => this.commit(group));
  /** Events held (every row holds at least one, so 0 means empty). */
  private held = 0;
  private readonly budget: StoreBudget;
  private readonly listeners: Array<() => void> = [];
  private closed = false;
  private reclaiming = false;
  /**
   * The last commit failed for lack of disk (or an I/O error): the spool refuses every request
   * until the disk has room for it again, so readiness must say so (another replica's disk may be
   * fine), and says ready again once the filesystem has room (checked with statfs).
   */
  private writeFailure?: { message: string; bytes: number };
  /** Space kept free so deletes can still be written when the disk filled up (see remove). */
  private readonly reserve: DiskReserve;

  constructor(
    readonly dir: string,
    readonly maxBytes: number,
  ) {
    this.budget = new StoreBudget(maxBytes);
    this.reserve = new DiskReserve(join(dir, 'spool.reserve'));
    this.tryOpen();
  }

  /** Opens (or creates) the database; failures are kept and tried again later, never thrown. */
  private tryOpen(): boolean {
    if (this.db) return true;
    if (this.closed) return false;
    const now = Date.now();
    if (now - this.lastOpenAttempt < REOPEN_INTERVAL_MS && this.openError) return false;
    this.lastOpenAttempt = now;
    let db: DatabaseSync | undefined;
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      db = new DatabaseSync(join(this.dir, 'spool.sqlite'));
      configureSpace(db);
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA synchronous = FULL');
      db.exec(`CREATE TABLE IF NOT EXISTS events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        subject TEXT NOT NULL,
        payload TEXT NOT NULL,
        spooled_at INTEGER NOT NULL,
        events INTEGER NOT NULL DEFAULT 1
      )`);
      // A spool written by a version that stored one event per row has no events column: each row is one event.
      const columns = db.prepare('PRAGMA table_info(events)').all() as Array<{ name: string }>;
      if (!columns.some((c) => c.name === 'events'))
        db.exec('ALTER TABLE events ADD COLUMN events INTEGER NOT NULL DEFAULT 1');
      const totals = db
        .prepare(
          `SELECT count(*) AS n, coalesce(sum(events), 0) AS e, coalesce(sum(length(id) + length(subject) + length(CAST(payload AS BLOB))), 0) AS b FROM events`,
        )
        .get() as { n: number; e: number; b: number };
      this.st = {
        insert: db.prepare(
          'INSERT OR IGNORE INTO events (id, subject, payload, spooled_at, events) VALUES (?, ?, ?, ?, ?)',
        ),
        peek: db.prepare(
          'SELECT seq, id, subject, payload, spooled_at AS spooledAt, events FROM events ORDER BY seq LIMIT ?',
        ),
        remove: db.prepare('DELETE FROM events WHERE seq = ?'),
        oldest: db.prepare('SELECT spooled_at AS t FROM events ORDER BY seq LIMIT 1'),
      };
      this.held = totals.e;
      this.budget.used = totals.b + totals.n * ROW_OVERHEAD;
      this.db = db;
      this.openError = undefined;
      this.reserve.ensure();
      this.scheduleReclaim();
      return true;
    } catch (err) {
      try {
        db?.close();
      } catch {
        // the open failure is the error worth keeping
      }
      this.openError = err as Error;
      return false;
    }
  }

  /** Why the spool cannot be used, or undefined when it is open and writable. */
  get unavailableReason(): string | undefined {
    if (!this.db) return `spool ${this.dir} cannot be opened: ${this.openError?.message ?? 'closed'}`;
    if (this.writeFailure) return `spool ${this.dir} cannot be written: ${this.writeFailure.message}`;
    return undefined;
  }

  /** Events held. */
  get depth(): number {
    return this.held;
  }

  get bytes(): number {
    return this.budget.used;
  }

  /** True while an append of a typical request could be held: open, below maxBytes, and writable. */
  canAccept(): boolean {
    return this.tryOpen() && this.budget.hasRoom() && this.writable();
  }

  /** After a failed write: whether the filesystem has room for that write again (then it is forgotten). */
  private writable(): boolean {
    if (!this.writeFailure) return true;
    // The rows go to the WAL, then to the database file: twice the bytes, plus a WAL's worth of margin.
    if (freeBytes(this.dir) < 2 * this.writeFailure.bytes + WAL_SIZE_LIMIT_BYTES) return false;
    this.writeFailure = undefined;
    return true;
  }

  /** Milliseconds since the oldest held event was spooled (0 when empty). */
  oldestAgeMs(now = Date.now()): number {
    if (!this.st || this.held === 0) return 0;
    const row = this.st.oldest.get() as { t: number } | undefined;
    return row ? Math.max(0, now - row.t) : 0;
  }

  /** Called after every commit that added rows (the replayer wakes up). */
  onAppend(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Resolves once the records are committed and fsynced; rejects with a SpoolError otherwise. */
  append(records: readonly SpoolRecord[]): Promise<void> {
    let bytes = 0;
    for (const r of records) bytes += r.id.length + r.subject.length + Buffer.byteLength(r.payload) + ROW_OVERHEAD;
    return new Promise((resolve, reject) => {
      this.group.add({ records, bytes, resolve, reject });
    });
  }

  private commit(group: PendingAppend[]): void {
    if (!this.tryOpen()) {
      const err = new SpoolError('unavailable', this.unavailableReason as string, { cause: this.openError });
      for (const p of group) p.reject(err);
      return;
    }
    const db = this.db as DatabaseSync;
    const st = this.st as Statements;
    // Admission first: a request that does not fit is refused whole, before anything is written.
    const admitted = this.budget.admit(group, (p) =>
      p.reject(new SpoolError('full', `spool is full (${this.budget.used} of ${this.maxBytes} bytes used)`)),
    );
    if (admitted.length === 0) return;
    let addedEvents = 0;
    let addedBytes = 0;
    const now = Date.now();
    try {
      db.exec('BEGIN IMMEDIATE');
      for (const p of admitted) {
        for (const r of p.records) {
          const events = Math.max(1, r.events ?? 1);
          const { changes } = st.insert.run(r.id, r.subject, r.payload, now, events);
          if (Number(changes) > 0) {
            addedEvents += events;
            addedBytes += r.id.length + r.subject.length + Buffer.byteLength(r.payload) + ROW_OVERHEAD;
          }
        }
      }
      db.exec('COMMIT');
    } catch (err) {
      rollback(db);
      this.writeFailure = { message: (err as Error).message, bytes: admitted.reduce((sum, p) => sum + p.bytes, 0) };
      const failure = new SpoolError('write_failed', `writing to the spool failed: ${(err as Error).message}`, {
        cause: err,
      });
      for (const p of admitted) p.reject(failure);
      return;
    }
    this.writeFailure = undefined;
    this.held += addedEvents;
    this.budget.used += addedBytes;
    for (const p of admitted) p.resolve();
    if (addedEvents > 0) for (const l of this.listeners) l();
  }

  /** The oldest rows (messages), at most `limit`. */
  peek(limit: number): SpooledRow[] {
    if (!this.st || this.held === 0) return [];
    return this.st.peek.all(limit) as unknown as SpooledRow[];
  }

  /**
   * Deletes rows the bus has acknowledged, in one transaction. A delete is a write too (WAL
   * frames): on a full disk it fails like an append would, and the spool could never drain. Then
   * the reserve file is given up and the delete tried once more; the reserve comes back once the
   * spool is empty and its space reclaimed.
   */
  remove(rows: readonly SpooledRow[]): void {
    try {
      this.removeOnce(rows);
    } catch (err) {
      if (!isDiskFull(err) || !this.reserve.release()) throw err;
      this.removeOnce(rows);
    }
  }

  private removeOnce(rows: readonly SpooledRow[]): void {
    if (!this.db || !this.st || rows.length === 0) return;
    const db = this.db;
    const st = this.st;
    db.exec('BEGIN IMMEDIATE');
    try {
      let removedEvents = 0;
      let freed = 0;
      for (const r of rows) {
        if (Number(st.remove.run(r.seq).changes) > 0) {
          removedEvents += r.events;
          freed += r.id.length + r.subject.length + Buffer.byteLength(r.payload) + ROW_OVERHEAD;
        }
      }
      db.exec('COMMIT');
      this.held -= removedEvents;
      this.budget.used -= freed;
    } catch (err) {
      rollback(db);
      throw err;
    }
    this.scheduleReclaim();
  }

  /** Gives disk space back in bounded steps, one per turn of the event loop (sqlite-space.ts). */
  private scheduleReclaim(): void {
    if (this.reclaiming) return;
    this.reclaiming = true;
    setImmediate(() => {
      this.reclaiming = false;
      if (!this.db) return;
      try {
        if (reclaimStep(this.db, this.held === 0)) this.scheduleReclaim();
        else if (this.held === 0) this.reserve.ensure();
      } catch {
        // Disk full or busy: the space is given back after a later removal.
      }
    });
  }

  close(): void {
    this.group.flush();
    this.closed = true;
    this.db?.close();
    this.db = undefined;
    this.st = undefined;
  }
}

/** Bytes an unprivileged process may still write on the filesystem of `dir` (Infinity when unknown). */
function freeBytes(dir: string): number {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

function rollback(db: DatabaseSync): void {
  try {
    if (db.isTransaction) db.exec('ROLLBACK');
  } catch {
    // the original error is what the caller reports
  }
}
