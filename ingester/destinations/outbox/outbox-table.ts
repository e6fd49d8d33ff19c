/**
 * The outbox's table (outbox.ts): SQLite through node:sqlite, WAL, synchronous=FULL like the
 * spool, one row per request and destination (its events, newline-joined), within a byte budget. The sink, the lease loop and the
 * dead-letter side all write through here; each write is one transaction. Inserts (accepting an
 * event) are fsynced at their commit; leases and acknowledgements are not (relaxedTransaction):
 * losing one in a crash only delivers an event again.
 *
 * On a full disk (the outbox filled it, or something else did), the writes that deliver and drain
 * (leases, removals, reschedules, alert states) still go through: they may use the disk reserve
 * (storage/disk-reserve.ts), and the WAL is bounded and restarted in place (sqlite-space.ts).
 * Accepting new rows needs the reserve in place, so it never takes the room draining needs.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { DISK_RESERVE_BYTES, DiskReserve } from '../../storage/disk-reserve.js';
import { configureSpace, OUTBOX_WAL_SIZE_LIMIT_BYTES, reclaimStep, walLimitFor } from '../../storage/sqlite-space.js';
import { WalCheckpointer } from '../../storage/wal-checkpointer.js';
import { StoreBudget } from '../../storage/store-budget.js';
import { TenantShares } from '../../storage/tenant-shares.js';

/** Bytes a row costs beyond its strings (SQLite row and index overhead, roughly). */
const ROW_OVERHEAD = 96;
/** What a row counts against maxBytes (its trace context too: a sender's tracestate may be 512 characters). */
export const rowBytes = (destination: string, id: string, payload: string, trace?: string | null): number =>
  destination.length + id.length + Buffer.byteLength(payload) + (trace?.length ?? 0) + ROW_OVERHEAD;

/**
 * The table's statements. The reads of what is due walk the index `outbox_due_by_namespace`:
 * (destination, next_at, seq) in the order rows are handed out, and the namespace too, so that a
 * read leaving namespaces out (those at their share of a destination) skips their rows in the
 * index alone instead of reading each row's record (the namespace column is stored after the
 * payload): with one namespace's 40,000 rows of 5 KB waiting, 6.7 ms a read instead of 126 ms,
 * on the event loop.
 */
export const OUTBOX_SQL = {
  insert: 'INSERT OR IGNORE INTO outbox (destination, id, payload, next_at, tenant, trace) VALUES (?, ?, ?, 0, ?, ?)',
  due: 'SELECT seq, destination, id, payload, attempts, tenant, trace FROM outbox WHERE destination = ? AND next_at <= ? ORDER BY next_at, seq LIMIT ?',
  nextDue: 'SELECT min(next_at) AS t FROM outbox WHERE destination = ?',
  // The same two, leaving out namespaces (a JSON array) that hold their share of the destination.
  dueExcept:
    'SELECT seq, destination, id, payload, attempts, tenant, trace FROM outbox WHERE destination = ? AND next_at <= ? AND tenant NOT IN (SELECT value FROM json_each(?)) ORDER BY next_at, seq LIMIT ?',
  nextDueExcept:
    'SELECT min(next_at) AS t FROM outbox WHERE destination = ? AND tenant NOT IN (SELECT value FROM json_each(?))',
  lease: 'UPDATE outbox SET next_at = ?, attempts = attempts + 1 WHERE seq = ?',
  remove: 'DELETE FROM outbox WHERE seq = ?',
  reschedule: 'UPDATE outbox SET next_at = ?, last_error = ? WHERE seq = ?',
  giveBack: 'UPDATE outbox SET next_at = ?, attempts = max(0, attempts - 1) WHERE seq = ?',
  count: 'SELECT count(*) AS n FROM outbox WHERE destination = ?',
  // The first event of the oldest row (a row holds one request's events, one a line, accepted together).
  oldest:
    "SELECT json_extract(substr(payload, 1, instr(payload || char(10), char(10)) - 1), '$.received_at') AS at FROM outbox WHERE destination = ? ORDER BY seq LIMIT 1",
  total:
    'SELECT tenant, coalesce(sum(length(destination) + length(id) + length(CAST(payload AS BLOB)) + coalesce(length(trace), 0)), 0) AS b, count(*) AS n FROM outbox GROUP BY tenant',
} as const;

export interface NewOutboxRow {
  destination: string;
  id: string;
  payload: string;
  /** The namespace whose share of the outbox the row counts against ('' when none). */
  tenant: string;
  /** The hand-off's trace context (tracing/carrier.ts carrierText), when tracing is on. */
  trace?: string | null;
}

export interface OutboxRow extends NewOutboxRow {
  seq: number;
  attempts: number;
}

export class OutboxTable {
  readonly db: DatabaseSync;
  readonly budget: StoreBudget;
  /** Each namespace's share of maxBytes (spool.maxBytesPerNamespace), reserved before a row is written. */
  readonly shares: TenantShares;
  /** Rows removed in the transaction under way: their bytes go back once it commits. */
  private removed: Array<{ tenant: string; bytes: number }> = [];
  /** Room for settling rows on a full disk; shared with the alert states in this database. */
  readonly reserve: DiskReserve;
  /** Checkpoints this file's WAL off the event loop; the alert states' connection uses it too. */
  readonly checkpointer: WalCheckpointer;
  private reclaiming = false;
  private readonly statements: Record<
    | 'insert'
    | 'due'
    | 'dueExcept'
    | 'nextDue'
    | 'nextDueExcept'
    | 'lease'
    | 'remove'
    | 'reschedule'
    | 'giveBack'
    | 'count'
    | 'oldest'
    | 'total',
    StatementSync
  >;

  constructor(
    dir: string,
    readonly maxBytes: number,
    onDiskFull: () => void = () => undefined,
    maxBytesPerTenant = maxBytes,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.reserve = new DiskReserve(join(dir, 'outbox.reserve'), DISK_RESERVE_BYTES, onDiskFull);
    // A restart on a full disk: opening needs a WAL and a shared-memory index, i.e. room.
    const walLimit = walLimitFor(maxBytes, OUTBOX_WAL_SIZE_LIMIT_BYTES);
    this.db = openWithRoom(this.reserve, join(dir, 'outbox.sqlite'), walLimit);
    this.checkpointer = new WalCheckpointer(join(dir, 'outbox.sqlite'), walLimit);
    this.checkpointer.attach(this.db);
    const p = (sql: string): StatementSync => this.db.prepare(sql);
    this.statements = {
      insert: p(OUTBOX_SQL.insert),
      due: p(OUTBOX_SQL.due),
      nextDue: p(OUTBOX_SQL.nextDue),
      dueExcept: p(OUTBOX_SQL.dueExcept),
      nextDueExcept: p(OUTBOX_SQL.nextDueExcept),
      lease: p(OUTBOX_SQL.lease),
      remove: p(OUTBOX_SQL.remove),
      reschedule: p(OUTBOX_SQL.reschedule),
      giveBack: p(OUTBOX_SQL.giveBack),
      count: p(OUTBOX_SQL.count),
      oldest: p(OUTBOX_SQL.oldest),
      total: p(OUTBOX_SQL.total),
    };
    this.budget = new StoreBudget(maxBytes);
    this.shares = new TenantShares(Math.min(maxBytesPerTenant, maxBytes));
    for (const t of this.statements.total.all() as Array<{ tenant: string; b: number; n: number }>)
      this.shares.add(t.tenant, t.b + t.n * ROW_OVERHEAD);
    this.budget.used = this.shares.total();
  }

  /** Runs `fn` in one write transaction; rolls back and rethrows if it fails. */
  transaction(fn: () => void): void {
    try {
      this.db.exec('BEGIN IMMEDIATE');
      fn();
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw err;
    }
    this.checkpointer.afterCommit(this.db);
  }

  /**
   * Runs `fn` in one transaction that is not fsynced at its commit, for writes a crash may lose
   * without losing an event: a lease or an attempt count (the row is handed out again), an
   * acknowledgement (the event is delivered again: at least once). WAL frames reach the disk in
   * order, so the next durable commit makes these durable too, and a crash never keeps a later
   * frame without the earlier ones (an alert state written before its event's acknowledgement).
   * One fsync per turn of the lease loop was the outbox's largest cost when delivering.
   */
  relaxedTransaction(fn: () => void): void {
    this.db.exec('PRAGMA synchronous = NORMAL');
    try {
      // Settling never adds to the outbox: it may use the reserve when the disk is full.
      this.reserve.withRoom(this.db, () => {
        this.removed = [];
        this.transaction(fn);
      });
      for (const r of this.removed) {
        this.budget.used -= r.bytes;
        this.shares.release(r.tenant, r.bytes);
      }
    } finally {
      this.removed = [];
      this.db.exec('PRAGMA synchronous = FULL');
    }
  }

  /** Gives disk space back in bounded steps after removals, one per turn of the event loop (sqlite-space.ts). */
  scheduleReclaim(): void {
    if (this.reclaiming || !this.db.isOpen) return;
    this.reclaiming = true;
    setImmediate(() => {
      // Not while the worker checkpoints the WAL: a write overtaking it keeps the WAL from restarting.
      const resume = (): void => {
        this.reclaiming = false;
        this.scheduleReclaim();
      };
      if (this.db.isOpen && this.checkpointer.holdWrites(resume)) return;
      this.reclaiming = false;
      if (!this.db.isOpen) return;
      try {
        const more = reclaimStep(this.db, this.budget.used === 0);
        this.checkpointer.afterCommit(this.db);
        if (more) this.scheduleReclaim();
      } catch {
        // Disk full or busy: the space is given back after a later removal.
      }
      this.reserve.refill();
    });
  }

  /**
   * Inserts a row unless the event is already held for that destination; returns the bytes added
   * (0 when it was). The caller counts them (budget and share) once the transaction committed.
   */
  insert(r: NewOutboxRow): number {
    return Number(this.statements.insert.run(r.destination, r.id, r.payload, r.tenant, r.trace ?? null).changes) > 0
      ? rowBytes(r.destination, r.id, r.payload, r.trace)
      : 0;
  }

  /** Counts committed rows against the budget and their namespace's share. */
  count(tenant: string, bytes: number): void {
    this.budget.used += bytes;
    this.shares.add(tenant, bytes);
  }

  /** Whether a namespace not in `except` holds rows (for any destination): without one, a read leaving `except` out finds nothing. */
  holdsOthers(except: readonly string[]): boolean {
    for (const tenant of this.shares.tenants()) if (!except.includes(tenant)) return true;
    return false;
  }

  due(destination: string, now: number, limit: number, except: readonly string[] = []): OutboxRow[] {
    if (except.length > 0)
      return this.statements.dueExcept.all(destination, now, JSON.stringify(except), limit) as unknown as OutboxRow[];
    return this.statements.due.all(destination, now, limit) as unknown as OutboxRow[];
  }

  /** When the destination's next row (of a namespace not in `except`) is due, or null when it has none. */
  nextDue(destination: string, except: readonly string[] = []): number | null {
    const row =
      except.length > 0
        ? this.statements.nextDueExcept.get(destination, JSON.stringify(except))
        : this.statements.nextDue.get(destination);
    return (row as { t: number | null }).t;
  }

  lease(seq: number, until: number): void {
    this.statements.lease.run(until, seq);
  }

  reschedule(seq: number, at: number, error: string): void {
    this.statements.reschedule.run(at, error, seq);
  }

  /** Reschedules a row handed out but not sent (the circuit was open): its lease's attempt is not counted. */
  giveBack(seq: number, at: number): void {
    this.statements.giveBack.run(at, seq);
  }

  /** Removes a row; its bytes go back to the budget and its share once the (relaxed) transaction commits. */
  remove(r: OutboxRow): void {
    if (Number(this.statements.remove.run(r.seq).changes) > 0)
      this.removed.push({ tenant: r.tenant, bytes: rowBytes(r.destination, r.id, r.payload, r.trace) });
  }

  depth(destination: string): number {
    return (this.statements.count.get(destination) as { n: number }).n;
  }

  /** When the oldest event waiting for `destination` was accepted (epoch ms); undefined when none waits. */
  oldestReceivedAtMs(destination: string): number | undefined {
    const at = (this.statements.oldest.get(destination) as { at: string | null } | undefined)?.at;
    const ms = at ? Date.parse(at) : Number.NaN;
    return Number.isNaN(ms) ? undefined : ms;
  }

  /** Events held for destinations not in `configured`, by name (a row holds one per line). */
  orphans(configured: readonly string[]): Record<string, number> {
    const rows = this.db
      .prepare(
        "SELECT destination, sum(1 + length(payload) - length(replace(payload, char(10), ''))) AS n FROM outbox GROUP BY destination",
      )
      .all() as Array<{
      destination: string;
      n: number;
    }>;
    return Object.fromEntries(rows.filter((r) => !configured.includes(r.destination)).map((r) => [r.destination, r.n]));
  }
}

/**
 * Opens the outbox database: WAL, a bounded WAL (sqlite-space.ts), the table. On a full disk the
 * reserve is given up for it (a restart needs a WAL and a shared-memory index).
 */
function openWithRoom(reserve: DiskReserve, file: string, walLimit: number): DatabaseSync {
  const open = (): DatabaseSync => {
    const db = new DatabaseSync(file);
    try {
      configureSpace(db, walLimit);
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA synchronous = FULL');
      db.exec(`
      CREATE TABLE IF NOT EXISTS outbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        destination TEXT NOT NULL,
        id TEXT NOT NULL,
        payload TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at INTEGER NOT NULL,
        last_error TEXT,
        tenant TEXT NOT NULL DEFAULT '',
        trace TEXT,
        UNIQUE (destination, id)
      );
      -- Replaces outbox_due (destination, next_at) of older versions: it serves every read that did.
      CREATE INDEX IF NOT EXISTS outbox_due_by_namespace ON outbox (destination, next_at, seq, tenant);
      DROP INDEX IF EXISTS outbox_due;`);
      return db;
    } catch (err) {
      db.close();
      throw err;
    }
  };
  try {
    return open();
  } catch (err) {
    // Not only SQLITE_FULL: a shared-memory index that cannot be sized is an I/O error.
    if (!reserve.held) throw err;
    reserve.release();
    return open();
  }
}
