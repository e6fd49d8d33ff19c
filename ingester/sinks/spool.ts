/**
 * The local spool: events the bus could not take yet, held durably until the replayer hands them
 * on (docs/design.md §5). SQLite through Node's built-in node:sqlite, WAL journal, no
 * hand-written log format. An append is answered once its transaction is committed and the WAL
 * fdatasynced, so it survives a kill -9 of the process and (on honest disks) a crash of the
 * machine. The fdatasync runs in libuv's thread pool (storage/wal-flush.ts, synchronous=NORMAL),
 * not in SQLite's commit on the request thread: while the bus is down every request spools, and a
 * flush on the loop (2-8 ms here, more on a busy disk) held every other request for each.
 *
 * Group commit: every append that arrives within one turn of the event loop goes into one
 * transaction, i.e. one flush, and each caller is answered only after that flush returned.
 * An append that would take the spool past maxBytes is refused whole; so is every append of a
 * group whose commit failed (disk full, I/O error): nothing of it counts as held.
 *
 * One row per bus message (bus-messages.ts: one event, or a request's events), keyed by its
 * message id (UNIQUE): spooling the same message twice (a sender's retry during an outage) keeps
 * one row. Each row counts the events it holds, so depth is in events. Rows leave oldest first
 * (seq order).
 *
 * Each namespace may hold at most its share of maxBytes (reserved at admission, like maxBytes):
 * one tenant's burst while the bus is down cannot take the whole spool from the others.
 *
 * Draining never needs disk space. A delete is a write (WAL frames), and on a full disk it fails;
 * then the replay cursor (storage/replay-cursor.ts, a file overwritten in place) moves past the
 * rows the bus acknowledged instead, and once it is past every row the database's files are
 * removed and created anew, which gives all their space back.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { Logger } from 'pino';
import { GroupCommit } from '../storage/group-commit.js';
import { ReplayCursor } from '../storage/replay-cursor.js';
import { configureSpace, freeBytes, reclaimStep, walLimitFor } from '../storage/sqlite-space.js';
import { StoreBudget } from '../storage/store-budget.js';
import { TenantShares } from '../storage/tenant-shares.js';
import { WalFlush } from '../storage/wal-flush.js';
import { carrierOfText, carrierText, type TraceCarrier } from '../tracing/carrier.js';

export interface SpoolRecord {
  id: string;
  subject: string;
  payload: string;
  /** Events the payload holds (1 when absent). */
  events?: number;
  /** The namespace whose share of the spool the record counts against ('' when none). */
  tenant?: string;
  /**
   * The hand-off's trace context, sent in the message's headers; spooled with the row, so a
   * message that waited here for the bus is still delivered in its sender's trace.
   */
  trace?: TraceCarrier;
}

export interface SpooledRow extends SpoolRecord {
  events: number;
  tenant: string;
  seq: number;
  spooledAt: number;
}

/** Why an append was refused; the sink turns it into a 503 (`tenant_full`: for that namespace only). */
export class SpoolError extends Error {
  constructor(
    readonly reason: 'full' | 'tenant_full' | 'unavailable' | 'write_failed',
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
const DATABASE_FILES = ['spool.sqlite', 'spool.sqlite-wal', 'spool.sqlite-shm'] as const;

/** The trace column's text (tracing/carrier.ts carrierText), or null. */
const traceText = (r: SpoolRecord): string | null => (r.trace ? carrierText(r.trace) : null);

/** What a row counts against maxBytes and its namespace's share; its trace context too (a tracestate may be 512 characters). */
const recordBytes = (r: SpoolRecord): number =>
  r.id.length + r.subject.length + Buffer.byteLength(r.payload) + (traceText(r)?.length ?? 0) + ROW_OVERHEAD;

interface PendingAppend {
  records: readonly SpoolRecord[];
  bytes: number;
  tenant: string;
  resolve: () => void;
  reject: (err: SpoolError) => void;
}

interface Statements {
  insert: StatementSync;
  peek: StatementSync;
  liveSeqs: StatementSync;
  remove: StatementSync;
  removeThrough: StatementSync;
  oldest: StatementSync;
}

export interface SpoolOptions {
  /** The most one namespace may hold (default: all of maxBytes). */
  maxBytesPerTenant?: number;
  /** Says when the disk is full and the spool drains by its cursor, and when its files are renewed. */
  logger?: Pick<Logger, 'warn' | 'info'>;
}

export class Spool {
  private db?: DatabaseSync;
  private st?: Statements;
  private lastOpenAttempt = 0;
  private openError?: Error;
  private readonly group = new GroupCommit<PendingAppend>((group) => this.commit(group));
  private readonly wal: WalFlush;
  /** Events held, not yet handed on (every row holds at least one, so 0 means empty). */
  private held = 0;
  /** Bytes of every row on disk, handed on or not (a full disk may keep handed-on rows for a while). */
  private readonly budget: StoreBudget;
  /** Bytes each namespace holds, not yet handed on. */
  private readonly shares: TenantShares;
  private readonly listeners: Array<() => void> = [];
  private closed = false;
  private reclaiming = false;
  /**
   * The last commit failed for lack of disk (or an I/O error): the spool refuses every request
   * until the disk has room for it again, so readiness must say so (another replica's disk may be
   * fine), and says ready again once the filesystem has room (checked with statfs).
   */
  private writeFailure?: { message: string; bytes: number };
  /** Rows up to this seq were handed on (see remove): lets a spool drain on a full disk. */
  private readonly cursor: ReplayCursor;
  /** Rows the cursor passed are still in the database (deleted once there is room, or renewed away). */
  private handedOnLeft = false;
  private readonly walLimit: number;
  private readonly logger?: SpoolOptions['logger'];

  constructor(
    readonly dir: string,
    readonly maxBytes: number,
    options: SpoolOptions = {},
  ) {
    this.budget = new StoreBudget(maxBytes);
    this.shares = new TenantShares(Math.min(options.maxBytesPerTenant ?? maxBytes, maxBytes));
    this.cursor = new ReplayCursor(join(dir, 'spool.cursor'));
    this.wal = new WalFlush(join(dir, 'spool.sqlite'));
    this.walLimit = walLimitFor(maxBytes);
    if (options.logger) this.logger = options.logger;
    this.tryOpen();
  }

  /** The most one namespace may hold. */
  get maxBytesPerTenant(): number {
    return this.shares.max;
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
      this.cursor.open();
      // The files were being removed (everything in them handed on) when the process stopped.
      if (this.cursor.available && this.cursor.resetPending) this.removeDatabaseFiles();
      db = new DatabaseSync(join(this.dir, 'spool.sqlite'));
      configureSpace(db, this.walLimit);
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA synchronous = NORMAL');
      db.exec(`CREATE TABLE IF NOT EXISTS events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        subject TEXT NOT NULL,
        payload TEXT NOT NULL,
        spooled_at INTEGER NOT NULL,
        events INTEGER NOT NULL DEFAULT 1,
        tenant TEXT NOT NULL DEFAULT '',
        trace TEXT
      )`);
      continueSequence(db, this.cursor.position);
      if (this.cursor.available) this.cursor.endReset();
      const from = this.cursor.position;
      const rowBytesSql =
        'coalesce(sum(length(id) + length(subject) + length(CAST(payload AS BLOB)) + coalesce(length(trace), 0)), 0)';
      const all = db.prepare(`SELECT count(*) AS n, ${rowBytesSql} AS b FROM events`).get() as { n: number; b: number };
      const live = db
        .prepare(
          `SELECT tenant, count(*) AS n, coalesce(sum(events), 0) AS e, ${rowBytesSql} AS b FROM events WHERE seq > ? GROUP BY tenant`,
        )
        .all(from) as Array<{ tenant: string; n: number; e: number; b: number }>;
      this.st = {
        insert: db.prepare(
          'INSERT OR IGNORE INTO events (id, subject, payload, spooled_at, events, tenant, trace) VALUES (?, ?, ?, ?, ?, ?, ?)',
        ),
        peek: db.prepare(
          'SELECT seq, id, subject, payload, spooled_at AS spooledAt, events, tenant, trace FROM events WHERE seq > ? ORDER BY seq LIMIT ?',
        ),
        liveSeqs: db.prepare('SELECT seq FROM events WHERE seq > ? ORDER BY seq LIMIT ?'),
        remove: db.prepare('DELETE FROM events WHERE seq = ?'),
        removeThrough: db.prepare('DELETE FROM events WHERE seq <= ?'),
        oldest: db.prepare('SELECT spooled_at AS t FROM events WHERE seq > ? ORDER BY seq LIMIT 1'),
      };
      this.held = 0;
      this.shares.clear();
      let liveRows = 0;
      for (const t of live) {
        this.held += t.e;
        liveRows += t.n;
        this.shares.add(t.tenant, t.b + t.n * ROW_OVERHEAD);
      }
      this.handedOnLeft = all.n > liveRows;
      this.budget.used = all.b + all.n * ROW_OVERHEAD;
      this.db = db;
      this.openError = undefined;
      // Opened on a full disk (after a restart): unready while the bus is down, until there is room.
      const free = freeBytes(this.dir);
      if (free < this.walLimit) this.writeFailure = { message: `its filesystem has ${free} bytes free`, bytes: 0 };
      if (this.handedOnLeft) this.removeHandedOn();
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
    if (freeBytes(this.dir) < 2 * this.writeFailure.bytes + this.walLimit) return false;
    this.writeFailure = undefined;
    return true;
  }

  /** Milliseconds since the oldest held event was spooled (0 when empty). */
  oldestAgeMs(now = Date.now()): number {
    if (!this.st || this.held === 0) return 0;
    const row = this.st.oldest.get(this.cursor.position) as { t: number } | undefined;
    return row ? Math.max(0, now - row.t) : 0;
  }

  /** Called after every commit that added rows (the replayer wakes up). */
  onAppend(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Resolves once the records are committed and fsynced; rejects with a SpoolError otherwise. */
  append(records: readonly SpoolRecord[]): Promise<void> {
    let bytes = 0;
    for (const r of records) bytes += recordBytes(r);
    const tenant = records[0]?.tenant ?? '';
    return new Promise((resolve, reject) => {
      this.group.add({ records, bytes, tenant, resolve, reject });
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
    // Admission first: a request that does not fit its namespace's share, or the spool, is refused
    // whole, before anything is written. A namespace over its share says nothing about the spool
    // (not counted as the spool's refusal, so readiness is not touched).
    const withinShares =
      this.shares.max >= this.maxBytes
        ? group
        : this.shares.admit(group, (p) =>
            p.reject(
              new SpoolError(
                'tenant_full',
                `namespace ${p.tenant}'s share of the spool is full (${this.shares.usedBy(p.tenant)} of ${this.shares.max} bytes held)`,
              ),
            ),
          );
    const admitted = this.budget.admit(withinShares, (p) =>
      p.reject(new SpoolError('full', `spool is full (${this.budget.used} of ${this.maxBytes} bytes used)`)),
    );
    if (admitted.length === 0) return;
    let addedEvents = 0;
    let addedBytes = 0;
    const addedByTenant = new Map<string, number>();
    const now = Date.now();
    try {
      db.exec('BEGIN IMMEDIATE');
      for (const p of admitted) {
        for (const r of p.records) {
          const events = Math.max(1, r.events ?? 1);
          const { changes } = st.insert.run(r.id, r.subject, r.payload, now, events, p.tenant, traceText(r));
          if (Number(changes) > 0) {
            addedEvents += events;
            addedBytes += recordBytes(r);
            addedByTenant.set(p.tenant, (addedByTenant.get(p.tenant) ?? 0) + recordBytes(r));
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
    for (const [tenant, bytes] of addedByTenant) this.shares.add(tenant, bytes);
    // The rows are in the database and counted from here on: the replayer may hand them on while
    // the flush runs; only the senders' answers wait for it.
    if (addedEvents > 0) for (const l of this.listeners) l();
    this.wal.flush().then(
      () => {
        for (const p of admitted) p.resolve();
      },
      // Committed, but not known to be on the disk: the senders are refused and retry; the rows
      // stay and are handed on (a retry is the same message id: one row, and one event in the stream).
      (err: Error) => {
        this.writeFailure = { message: err.message, bytes: admitted.reduce((sum, p) => sum + p.bytes, 0) };
        const failure = new SpoolError('write_failed', `flushing the spool to disk failed: ${err.message}`, {
          cause: err,
        });
        for (const p of admitted) p.reject(failure);
      },
    );
  }

  /** The oldest rows (messages) not handed on yet, at most `limit`. */
  peek(limit: number): SpooledRow[] {
    if (!this.st || this.held === 0) return [];
    const rows = this.st.peek.all(this.cursor.position, limit) as unknown as Array<
      Omit<SpooledRow, 'trace'> & { trace: string | null }
    >;
    return rows.map(({ trace, ...row }) => {
      const carrier = carrierOfText(trace);
      return carrier ? { ...row, trace: carrier } : row;
    });
  }

  /**
   * The bus acknowledged these rows: they leave the spool. Deleted in one transaction; but a
   * delete is a write too (WAL frames), and on a full disk it fails, so then the replay cursor
   * moves past them instead (a file overwritten in place, no new space), as far as they are the
   * oldest rows (an acknowledged row after one that was not is published again later, and the
   * stream's duplicate window drops it). Once the cursor is past every row, the database's files
   * are removed and created anew: all their space comes back. Throws only when neither worked.
   */
  remove(rows: readonly SpooledRow[]): void {
    if (!this.db || !this.st || rows.length === 0) return;
    try {
      this.removeOnce(rows);
    } catch (err) {
      if (!this.cursor.available) throw err;
      this.passOver(rows);
    }
  }

  private removeOnce(rows: readonly SpooledRow[]): void {
    const db = this.db as DatabaseSync;
    const st = this.st as Statements;
    db.exec('BEGIN IMMEDIATE');
    try {
      let removedEvents = 0;
      let freed = 0;
      const released: SpooledRow[] = [];
      for (const r of rows) {
        if (r.seq <= this.cursor.position) continue;
        if (Number(st.remove.run(r.seq).changes) > 0) {
          removedEvents += r.events;
          freed += recordBytes(r);
          released.push(r);
        }
      }
      db.exec('COMMIT');
      this.held -= removedEvents;
      this.budget.used -= freed;
      for (const r of released) this.shares.release(r.tenant, recordBytes(r));
    } catch (err) {
      rollback(db);
      throw err;
    }
    if (this.handedOnLeft) this.removeHandedOn();
    this.scheduleReclaim();
  }

  /** Moves the replay cursor past the oldest of `rows` (the delete failed); see remove. */
  private passOver(rows: readonly SpooledRow[]): void {
    const st = this.st as Statements;
    const acked = new Map(rows.map((r) => [r.seq, r]));
    const oldest = st.liveSeqs.all(this.cursor.position, rows.length) as Array<{ seq: number }>;
    let through = this.cursor.position;
    const passed: SpooledRow[] = [];
    for (const { seq } of oldest) {
      const row = acked.get(seq);
      if (!row) break;
      through = seq;
      passed.push(row);
    }
    if (passed.length === 0) return;
    this.cursor.advance(through);
    if (!this.handedOnLeft)
      this.logger?.warn(
        { spool: this.dir, cursor: through },
        'the spool cannot delete what the bus acknowledged (its disk is full): the replay cursor moves past it instead',
      );
    this.handedOnLeft = true;
    for (const r of passed) {
      this.held -= r.events;
      this.shares.release(r.tenant, recordBytes(r));
    }
    if (this.held === 0) this.renew();
  }

  /** Deletes rows the cursor has passed (after a restart, or once the disk has room again). */
  private removeHandedOn(): void {
    try {
      (this.st as Statements).removeThrough.run(this.cursor.position);
      this.budget.used = this.shares.total();
      this.handedOnLeft = false;
    } catch {
      // Still no room: once the cursor is past every row, the files are created anew (renew).
      if (this.held === 0) this.renew();
    }
  }

  /**
   * Everything in the database was handed on, but its rows could not be deleted: remove its
   * files (all their space comes back) and create them anew. The cursor says so first, so a crash
   * in between removes the rest at the next start instead of opening half a database.
   */
  private renew(): void {
    this.logger?.info({ spool: this.dir }, 'spool handed on in full: its files are removed and created anew');
    this.cursor.beginReset();
    this.wal.release();
    this.db?.close();
    this.db = undefined;
    this.st = undefined;
    this.removeDatabaseFiles();
    this.budget.used = 0;
    this.handedOnLeft = false;
    this.writeFailure = undefined;
    this.openError = undefined;
    this.lastOpenAttempt = 0;
    this.tryOpen();
  }

  private removeDatabaseFiles(): void {
    for (const f of DATABASE_FILES) rmSync(join(this.dir, f), { force: true });
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
      } catch {
        // Disk full or busy: the space is given back after a later removal.
      }
    });
  }

  close(): void {
    this.group.flush();
    this.closed = true;
    this.wal.release();
    this.db?.close();
    this.db = undefined;
    this.st = undefined;
  }
}

/**
 * A new database continues the sequence where the cursor stands, so that its rows are never
 * taken for rows the cursor has passed. Writes only then (an existing database is already past it).
 */
function continueSequence(db: DatabaseSync, from: number): void {
  const row = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'events'").get() as { seq: number } | undefined;
  if ((row?.seq ?? 0) >= from) return;
  if (row) db.prepare("UPDATE sqlite_sequence SET seq = ? WHERE name = 'events'").run(from);
  else db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES ('events', ?)").run(from);
}

function rollback(db: DatabaseSync): void {
  try {
    if (db.isTransaction) db.exec('ROLLBACK');
  } catch {
    // the original error is what the caller reports
  }
}
