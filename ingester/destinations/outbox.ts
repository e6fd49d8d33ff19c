/**
 * Standalone delivery without the bus: the local spool directory holds an outbox (SQLite through
 * node:sqlite, WAL, synchronous=FULL, like the spool) with one row per event and destination.
 * As a hand-off sink it answers a request only after the rows are committed and fsynced, so an
 * acknowledged event survives kill -9. Each destination takes its due rows oldest first; a row
 * handed out is leased (its next attempt time moves past the delivery timeout), so a crash means
 * a redelivery after the lease, never a loss; the attempt count is stored with the row.
 *
 * The same database holds the dead letters, and the alert states of Alertmanager destinations
 * (through their own connection: sqlite-alert-store.ts).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { NormalisedEvent } from '../events.js';
import { GroupCommit } from '../sinks/group-commit.js';
import { StoreBudget } from '../sinks/store-budget.js';
import { SinkError, type DeliveryReport, type EventSink } from '../sinks/sink.js';
import type { DeadLetterItem, DeadLetterQuery, DeadLetterStore } from './dead-letters.js';
import type { Dispatcher } from './dispatcher.js';
import type { Routing } from './jetstream-queue.js';

/** Bytes a row costs beyond its strings (SQLite row and index overhead, roughly). */
const ROW_OVERHEAD = 96;
/** What a row counts against maxBytes. */
const rowBytes = (destination: string, id: string, payload: string): number => destination.length + id.length + Buffer.byteLength(payload) + ROW_OVERHEAD;
const IDLE_POLL_MS = 1000;

interface PendingAppend {
  rows: Array<{ destination: string; id: string; payload: string }>;
  bytes: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

interface OutboxRow {
  seq: number;
  destination: string;
  id: string;
  payload: string;
  attempts: number;
}

export interface OutboxDestination {
  name: string;
  dispatcher: Dispatcher;
  /** How long a handed-out row stays leased: longer than one delivery with its timeout. */
  leaseMs: number;
}

export class Outbox implements EventSink, DeadLetterStore {
  readonly name = 'outbox';
  private readonly db: DatabaseSync;
  private readonly st: Record<'insert' | 'due' | 'nextDue' | 'lease' | 'remove' | 'reschedule' | 'bury' | 'count' | 'deadList' | 'deadGet' | 'deadRemove' | 'total', StatementSync>;
  private readonly group = new GroupCommit<PendingAppend>((g) => this.commit(g));
  /** Acks, retries and dead letters of one turn share one transaction (one fsync). */
  private readonly settles = new GroupCommit<{ apply: () => void; resolve: () => void; reject: (err: Error) => void }>((g) => this.commitSettles(g));
  private readonly budget: StoreBudget;
  private readonly wakers = new Set<() => void>();
  private readonly loops = new Set<Promise<void>>();
  private closed = false;

  constructor(
    dir: string,
    private readonly maxBytes: number,
    private readonly routing: Routing,
    /** Called when handing out rows failed (then retried after a second). */
    private readonly onError: (err: Error) => void = () => undefined,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.db = new DatabaseSync(join(dir, 'outbox.sqlite'));
    this.db.exec('PRAGMA journal_mode = WAL');
    this.db.exec('PRAGMA synchronous = FULL');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS outbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        destination TEXT NOT NULL,
        id TEXT NOT NULL,
        payload TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at INTEGER NOT NULL,
        last_error TEXT,
        UNIQUE (destination, id)
      );
      CREATE INDEX IF NOT EXISTS outbox_due ON outbox (destination, next_at);
      CREATE TABLE IF NOT EXISTS dead_letters (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        destination TEXT NOT NULL,
        payload TEXT NOT NULL,
        reason TEXT NOT NULL,
        error TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        failed_at TEXT NOT NULL
      );`);
    const p = (sql: string): StatementSync => this.db.prepare(sql);
    this.st = {
      insert: p('INSERT OR IGNORE INTO outbox (destination, id, payload, next_at) VALUES (?, ?, ?, 0)'),
      due: p('SELECT seq, destination, id, payload, attempts FROM outbox WHERE destination = ? AND next_at <= ? ORDER BY next_at, seq LIMIT ?'),
      nextDue: p('SELECT min(next_at) AS t FROM outbox WHERE destination = ?'),
      lease: p('UPDATE outbox SET next_at = ?, attempts = attempts + 1 WHERE seq = ?'),
      remove: p('DELETE FROM outbox WHERE seq = ?'),
      reschedule: p('UPDATE outbox SET next_at = ?, last_error = ? WHERE seq = ?'),
      bury: p('INSERT INTO dead_letters (destination, payload, reason, error, attempts, failed_at) VALUES (?, ?, ?, ?, ?, ?)'),
      count: p('SELECT count(*) AS n FROM outbox WHERE destination = ?'),
      deadList: p('SELECT seq, destination, payload, reason, error, attempts, failed_at AS failedAt FROM dead_letters WHERE (? IS NULL OR destination = ?) ORDER BY seq LIMIT ?'),
      deadGet: p('SELECT seq, destination, payload, reason, error, attempts, failed_at AS failedAt FROM dead_letters WHERE seq = ?'),
      deadRemove: p('DELETE FROM dead_letters WHERE seq = ?'),
      total: p('SELECT coalesce(sum(length(destination) + length(id) + length(CAST(payload AS BLOB))), 0) AS b, count(*) AS n FROM outbox'),
    };
    const t = this.st.total.get() as { b: number; n: number };
    this.budget = new StoreBudget(maxBytes);
    this.budget.used = t.b + t.n * ROW_OVERHEAD;
  }

  // ---- the hand-off side (EventSink) ----

  /** Every event is held once per destination it goes to; events with no destination are done. */
  async deliver(events: readonly NormalisedEvent[]): Promise<DeliveryReport> {
    const rows: PendingAppend['rows'] = [];
    let bytes = 0;
    for (const e of events) {
      const destinations = this.routing.destinationsOf(e);
      if (destinations.length === 0) continue;
      const payload = JSON.stringify(e);
      for (const destination of destinations) {
        rows.push({ destination, id: e.id, payload });
        bytes += rowBytes(destination, e.id, payload);
      }
    }
    if (rows.length > 0) {
      await new Promise<void>((resolve, reject) => this.group.add({ rows, bytes, resolve, reject }));
    }
    return { delivered: events.length, cached: 0 };
  }

  unavailable(): string | undefined {
    return this.budget.hasRoom() ? undefined : `the outbox is full (${this.budget.used} of ${this.maxBytes} bytes): destinations are not keeping up`;
  }

  async flush(): Promise<void> {
    this.group.flush();
  }

  private commit(group: PendingAppend[]): void {
    const admitted = this.budget.admit(group, (p) => p.reject(new SinkError(this.name, `the outbox is full (${this.budget.used} of ${this.maxBytes} bytes used)`)));
    if (admitted.length === 0) return;
    let added = 0;
    try {
      this.db.exec('BEGIN IMMEDIATE');
      for (const p of admitted) for (const r of p.rows) if (Number(this.st.insert.run(r.destination, r.id, r.payload).changes) > 0) added += rowBytes(r.destination, r.id, r.payload);
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      const failure = new SinkError(this.name, `writing to the outbox failed: ${(err as Error).message}`, { cause: err });
      for (const p of admitted) p.reject(failure);
      return;
    }
    this.budget.used += added;
    for (const p of admitted) p.resolve();
    for (const wake of this.wakers) wake();
  }

  // ---- the delivery side ----

  /** Starts handing due rows to each destination's dispatcher. */
  start(destinations: readonly OutboxDestination[]): void {
    for (const d of destinations) {
      const loop = this.deliverLoop(d).finally(() => this.loops.delete(loop));
      this.loops.add(loop);
    }
  }

  /** Rows held for destinations not in `configured` (a destination removed from the config), by name. */
  orphans(configured: readonly string[]): Record<string, number> {
    const rows = this.db.prepare('SELECT destination, count(*) AS n FROM outbox GROUP BY destination').all() as Array<{ destination: string; n: number }>;
    return Object.fromEntries(rows.filter((r) => !configured.includes(r.destination)).map((r) => [r.destination, r.n]));
  }

  /** Rows waiting for a destination (the lag gauge). */
  depth(destination: string): number {
    return (this.st.count.get(destination) as { n: number }).n;
  }

  private async deliverLoop(d: OutboxDestination): Promise<void> {
    while (!this.closed) {
      try {
        await this.handOut(d);
      } catch (err) {
        // A database that cannot be written now (disk full, I/O error): try again shortly.
        this.onError(err as Error);
        await this.idle(IDLE_POLL_MS);
      }
    }
  }

  /** Hands the due rows (as many as the dispatcher has room for) to it, or sleeps until one is due. */
  private async handOut(d: OutboxDestination): Promise<void> {
    await d.dispatcher.waitForSlot();
    if (this.closed) return;
    const now = Date.now();
    const rows = this.st.due.all(d.name, now, d.dispatcher.free()) as unknown as OutboxRow[];
    if (rows.length === 0) {
      // Sleep until the next retry is due (an append wakes the loop earlier).
      const next = (this.st.nextDue.get(d.name) as { t: number | null }).t;
      await this.idle(next === null ? IDLE_POLL_MS : Math.max(5, Math.min(IDLE_POLL_MS, next - now)));
      return;
    }
    try {
      this.db.exec('BEGIN IMMEDIATE');
      for (const r of rows) this.st.lease.run(now + d.leaseMs, r.seq);
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw err;
    }
    for (const r of rows) {
      const event = JSON.parse(r.payload) as NormalisedEvent;
      d.dispatcher.submit({
        event,
        attempt: r.attempts + 1,
        ack: () => this.settle(() => this.removeRow(r)),
        retry: (delayMs, error) => this.settle(() => void this.st.reschedule.run(Date.now() + delayMs, error, r.seq)),
        deadLetter: (reason, error) =>
          this.settle(() => {
            this.st.bury.run(r.destination, r.payload, reason, error, r.attempts + 1, new Date().toISOString());
            this.removeRow(r);
          }),
      });
    }
  }

  private removeRow(r: OutboxRow): void {
    if (Number(this.st.remove.run(r.seq).changes) > 0) this.budget.used -= rowBytes(r.destination, r.id, r.payload);
  }

  private settle(apply: () => void): Promise<void> {
    return new Promise((resolve, reject) => this.settles.add({ apply, resolve, reject }));
  }

  private commitSettles(group: Array<{ apply: () => void; resolve: () => void; reject: (err: Error) => void }>): void {
    const freedBefore = this.budget.used;
    try {
      this.db.exec('BEGIN IMMEDIATE');
      for (const g of group) g.apply();
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      this.budget.used = freedBefore;
      for (const g of group) g.reject(err as Error);
      return;
    }
    for (const g of group) g.resolve();
  }

  private idle(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
    });
  }

  // ---- dead letters ----

  async list(q: DeadLetterQuery): Promise<DeadLetterItem[]> {
    type Row = { seq: number; destination: string; payload: string; reason: string; error: string; attempts: number; failedAt: string };
    const rows = q.seqs
      ? q.seqs.map((s) => this.st.deadGet.get(s) as Row | undefined).filter((r): r is Row => r !== undefined && (!q.destination || r.destination === q.destination))
      : (this.st.deadList.all(q.destination ?? null, q.destination ?? null, q.limit) as unknown as Row[]);
    return rows.map(({ payload, ...r }) => ({ ...r, event: JSON.parse(payload) as NormalisedEvent }));
  }

  async replay(q: DeadLetterQuery): Promise<number> {
    const items = await this.list(q);
    this.db.exec('BEGIN IMMEDIATE');
    try {
      for (const item of items) {
        const payload = JSON.stringify(item.event);
        // A fresh row (the old one was removed when it was buried): attempts start again.
        this.st.insert.run(item.destination, item.event.id, payload);
        this.st.deadRemove.run(item.seq);
        this.budget.used += rowBytes(item.destination, item.event.id, payload);
      }
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw err;
    }
    for (const wake of this.wakers) wake();
    return items.length;
  }

  /** Stops handing out rows; those in flight settle through their dispatchers (the wiring waits for them). */
  stop(): void {
    this.closed = true;
    for (const wake of this.wakers) wake();
  }

  /** Idempotent; call once the dispatchers are idle, so nothing touches the database any more. */
  async close(): Promise<void> {
    if (!this.db.isOpen) return;
    this.stop();
    this.group.flush();
    this.settles.flush();
    await Promise.allSettled([...this.loops]);
    this.db.close();
  }
}
