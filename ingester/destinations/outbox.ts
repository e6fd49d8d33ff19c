/**
 * Standalone delivery without the bus: the local spool directory holds an outbox (SQLite through
 * node:sqlite, WAL, synchronous=FULL, like the spool) with one row per event and destination.
 * As a hand-off sink it answers a request only after the rows are committed and fsynced, so an
 * acknowledged event survives kill -9. Each destination takes its due rows oldest first; a row
 * handed out is leased (its next attempt time moves past the delivery timeout), so a crash means
 * a redelivery after the lease, never a loss; the attempt count is stored with the row.
 *
 * Events a destination gives up on go to the dead-letter store (dead-letters/, its own file in
 * the same directory, bounded per namespace) before their row is removed. The same database holds
 * the alert states of Alertmanager destinations (through their own connection: sqlite-alert-store.ts).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { NormalisedEvent } from '../core/event.js';
import { GroupCommit } from '../storage/group-commit.js';
import { StoreBudget } from '../storage/store-budget.js';
import { SinkError, type HandOffReport, type EventSink } from '../sinks/sink.js';
import { LetterTooLarge, type DeliveryDeadLetter, type NewDeadLetter } from '../dead-letters/model.js';
import type { Dispatcher } from './dispatcher.js';
import type { Routing } from './jetstream-deliveries.js';

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

/** A dead letter of an earlier version, kept in this database's `dead_letters` table. */
export type LegacyDeadLetter = Extract<NewDeadLetter, { kind: 'delivery' }> & { seq: number };

export class Outbox implements EventSink {
  readonly name = 'outbox';
  private readonly db: DatabaseSync;
  private readonly st: Record<'insert' | 'due' | 'nextDue' | 'lease' | 'remove' | 'reschedule' | 'count' | 'total', StatementSync>;
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
    /** Keeps an event a destination gave up on (the dead-letter store); resolves once it is durable. */
    private readonly bury: (letter: NewDeadLetter) => Promise<unknown>,
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
      CREATE INDEX IF NOT EXISTS outbox_due ON outbox (destination, next_at);`);
    const p = (sql: string): StatementSync => this.db.prepare(sql);
    this.st = {
      insert: p('INSERT OR IGNORE INTO outbox (destination, id, payload, next_at) VALUES (?, ?, ?, 0)'),
      due: p('SELECT seq, destination, id, payload, attempts FROM outbox WHERE destination = ? AND next_at <= ? ORDER BY next_at, seq LIMIT ?'),
      nextDue: p('SELECT min(next_at) AS t FROM outbox WHERE destination = ?'),
      lease: p('UPDATE outbox SET next_at = ?, attempts = attempts + 1 WHERE seq = ?'),
      remove: p('DELETE FROM outbox WHERE seq = ?'),
      reschedule: p('UPDATE outbox SET next_at = ?, last_error = ? WHERE seq = ?'),
      count: p('SELECT count(*) AS n FROM outbox WHERE destination = ?'),
      total: p('SELECT coalesce(sum(length(destination) + length(id) + length(CAST(payload AS BLOB))), 0) AS b, count(*) AS n FROM outbox'),
    };
    const t = this.st.total.get() as { b: number; n: number };
    this.budget = new StoreBudget(maxBytes);
    this.budget.used = t.b + t.n * ROW_OVERHEAD;
  }

  // ---- the hand-off side (EventSink) ----

  /** Every event is held once per destination it goes to; events with no destination are done. */
  async handOff(events: readonly NormalisedEvent[]): Promise<HandOffReport> {
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
    return { processed: events.length, cached: 0 };
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
        deadLetter: async (reason, error) => {
          // Kept first, then the row goes: a crash between the two delivers the event again, never loses it.
          await this.bury({ kind: 'delivery', namespace: event.namespace, integration: event.integration, destination: r.destination, reason, error, attempts: r.attempts + 1, event }).catch((err: Error) => {
            // Larger than a namespace's share: it can never be kept (the store counted the drop).
            if (!(err instanceof LetterTooLarge)) throw err;
          });
          await this.settle(() => this.removeRow(r));
        },
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

  /**
   * A replayed dead letter: a fresh row for its destination (attempts start again). The row is
   * counted only when it was inserted: several dead letters of one event and destination (it
   * failed, was replayed and failed again) become one row, and were once counted five times.
   */
  requeue(letter: DeliveryDeadLetter): void {
    const payload = JSON.stringify(letter.event);
    if (Number(this.st.insert.run(letter.destination, letter.event.id, payload).changes) > 0) this.budget.used += rowBytes(letter.destination, letter.event.id, payload);
    for (const wake of this.wakers) wake();
  }

  /** Dead letters an earlier version kept in this database (moved to the dead-letter store at startup). */
  legacyDeadLetters(): LegacyDeadLetter[] {
    if (!this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'dead_letters'").get()) return [];
    type Row = { seq: number; destination: string; payload: string; reason: string; error: string; attempts: number; failedAt: string };
    const rows = this.db.prepare('SELECT seq, destination, payload, reason, error, attempts, failed_at AS failedAt FROM dead_letters ORDER BY seq').all() as unknown as Row[];
    return rows.map((r) => {
      const event = JSON.parse(r.payload) as NormalisedEvent;
      return { seq: r.seq, kind: 'delivery', id: `outbox-${r.seq}`, at: r.failedAt, namespace: event.namespace, integration: event.integration, destination: r.destination, reason: r.reason, error: r.error, attempts: r.attempts, event };
    });
  }

  /** Once they are in the dead-letter store. */
  dropLegacyDeadLetters(): void {
    this.db.exec('DROP TABLE IF EXISTS dead_letters');
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
