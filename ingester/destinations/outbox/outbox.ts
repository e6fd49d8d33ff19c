/**
 * Standalone delivery without the bus: the storage directory (`spool.path`) holds an outbox with one row per
 * request and destination (the request's events, as on the bus: sinks/bus-messages.ts). Its
 * roles, one file each:
 *   - the hand-off sink (this file): a request is answered only after its rows are committed and
 *     fsynced, so an acknowledged event survives kill -9;
 *   - the table (outbox-table.ts): SQLite, the byte budget;
 *   - the lease loop (outbox-lease-loop.ts): each destination takes its due rows, leased;
 *   - dead letters (outbox-dead-letters.ts): replayed ones come back as rows.
 * Events a destination gives up on go to the dead-letter store (dead-letters/, its own file in
 * the same directory, bounded per namespace) before their row is removed. The same database holds
 * the alert states of Alertmanager destinations (through their own connection: sqlite-alert-store.ts).
 */
import type { NormalisedEvent } from '../../core/event.js';
import type { DeliveryDeadLetter, NewDeadLetter } from '../../dead-letters/model.js';
import { packEvents } from '../../sinks/bus-messages.js';
import { outboxShareFull } from '../../core/errors.js';
import { SinkError, type DecidedDestinations, type EventSink, type HandOffResult } from '../../sinks/sink.js';
import type { DiskReserve } from '../../storage/disk-reserve.js';
import { GroupCommit } from '../../storage/group-commit.js';
import type { Routing } from '../destination.js';
import { ReplayedLetters, type ReplayedLetter } from './outbox-dead-letters.js';
import { OutboxLeaseLoops, type OutboxDestination } from './outbox-lease-loop.js';
import type { WalCheckpointer } from '../../storage/wal-checkpointer.js';
import { OutboxTable, rowBytes, type NewOutboxRow } from './outbox-table.js';
import { carrierText, type TraceCarrier } from '../../tracing/carrier.js';

export type { OutboxDestination } from './outbox-lease-loop.js';

const OUTBOX_DISK_FULL =
  "the outbox's disk is full: held events are still delivered, new ones are refused until it has room";

/** A request's events for one destination are cut into rows of at most this much JSON. */
const MAX_ROW_BYTES = 1024 * 1024;

interface PendingAppend {
  rows: NewOutboxRow[];
  bytes: number;
  /** The request's namespace (a request's events are one namespace's): its share is charged. */
  tenant: string;
  resolve: () => void;
  reject: (err: Error) => void;
}

export class Outbox implements EventSink {
  readonly name = 'outbox';
  private readonly table: OutboxTable;
  private readonly leaseLoops: OutboxLeaseLoops;
  private readonly replayed: ReplayedLetters;
  private readonly appends = new GroupCommit<PendingAppend>((g) => this.commit(g));

  constructor(
    dir: string,
    private readonly maxBytes: number,
    private readonly routing: Routing,
    /** Keeps an event a destination gave up on (the dead-letter store); resolves once it is durable. */
    bury: (letter: NewDeadLetter) => Promise<unknown>,
    /** Called when handing out rows failed (then retried after a second). */
    onError: (err: Error) => void = () => undefined,
    /** Told each time the disk filled and the room kept for draining is used (outbox-table.ts). */
    onDiskFull: () => void = () => undefined,
    /** The most one namespace may hold (spool.maxBytesPerNamespace); all of maxBytes when not given. */
    maxBytesPerTenant = maxBytes,
  ) {
    this.table = new OutboxTable(dir, maxBytes, onDiskFull, maxBytesPerTenant);
    this.leaseLoops = new OutboxLeaseLoops(this.table, bury, onError);
    this.replayed = new ReplayedLetters(this.table);
  }

  // ---- the hand-off sink (EventSink) ----

  /**
   * Every event is held once per destination it goes to (as its routing rules chose at acceptance,
   * `decided`; without rules, its integration's destinations); events with no destination are done.
   */
  async handOff(
    events: readonly NormalisedEvent[],
    decided?: DecidedDestinations,
    trace?: TraceCarrier,
  ): Promise<HandOffResult> {
    const byDestination = new Map<string, NormalisedEvent[]>();
    for (let i = 0; i < events.length; i++) {
      const e = events[i] as NormalisedEvent;
      for (const destination of decided?.[i] ?? this.routing.destinationsOf(e, () => e)) {
        const list = byDestination.get(destination);
        if (list) list.push(e);
        else byDestination.set(destination, [e]);
      }
    }
    const rows: NewOutboxRow[] = [];
    let bytes = 0;
    const tenant = events[0]?.namespace ?? '';
    // The hand-off's trace context, kept with each row for the delivery attempts (tracing on).
    const traceText = trace ? carrierText(trace) : null;
    for (const [destination, list] of byDestination) {
      for (const m of packEvents(list, MAX_ROW_BYTES)) {
        rows.push({ destination, id: m.id, payload: m.payload, tenant, trace: traceText });
        bytes += rowBytes(destination, m.id, m.payload, traceText);
      }
    }
    if (rows.length > 0) {
      await new Promise<void>((resolve, reject) => this.appends.add({ rows, bytes, tenant, resolve, reject }));
    }
    return { processed: events.length, cached: 0 };
  }

  unavailable(): string | undefined {
    if (!this.table.budget.hasRoom())
      return `the outbox is full (${this.table.budget.used} of ${this.maxBytes} bytes): destinations are not keeping up`;
    // Every tenant's events would be refused here, and another replica's disk may have room.
    if (!this.table.reserve.held) return OUTBOX_DISK_FULL;
    return undefined;
  }

  async flush(): Promise<void> {
    this.appends.flush();
  }

  private commit(group: PendingAppend[]): void {
    const budget = this.table.budget;
    // The disk is full: the room left is for delivering and draining what is held (outbox-table.ts).
    if (!this.table.reserve.held) {
      const failure = new SinkError(this.name, OUTBOX_DISK_FULL);
      for (const p of group) p.reject(failure);
      return;
    }
    // Each namespace's share first: one tenant whose destination is down cannot take the outbox
    // from the others. Refused for that namespace alone; readiness is not touched.
    const shares = this.table.shares;
    const withinShares =
      shares.max >= this.maxBytes
        ? group
        : shares.admit(group, (p) => p.reject(outboxShareFull(p.tenant, shares.max, shares.usedBy(p.tenant))));
    const admitted = budget.admit(withinShares, (p) =>
      p.reject(new SinkError(this.name, `the outbox is full (${budget.used} of ${this.maxBytes} bytes used)`)),
    );
    if (admitted.length === 0) return;
    const added = new Map<PendingAppend, number>();
    try {
      this.table.transaction(() => {
        added.clear();
        for (const p of admitted) for (const r of p.rows) added.set(p, (added.get(p) ?? 0) + this.table.insert(r));
      });
    } catch (err) {
      const failure = new SinkError(this.name, `writing to the outbox failed: ${(err as Error).message}`, {
        cause: err,
      });
      for (const p of admitted) p.reject(failure);
      return;
    }
    for (const [p, bytes] of added) this.table.count(p.tenant, bytes);
    for (const p of admitted) p.resolve();
    this.leaseLoops.wake();
  }

  /** Room kept for settling on a full disk (outbox-table.ts); the alert states in this database use it too. */
  get diskReserve(): DiskReserve {
    return this.table.reserve;
  }

  /** The database's WAL checkpointer (wal-checkpointer.ts): the alert states' connection reports its commits to it. */
  get walCheckpointer(): WalCheckpointer {
    return this.table.checkpointer;
  }

  // ---- the delivery side (outbox-lease-loop.ts) ----

  /** Starts handing due rows to each destination's dispatcher. */
  start(destinations: readonly OutboxDestination[]): void {
    this.leaseLoops.start(destinations);
  }

  /** Starts delivering to a destination added while running (a team's). */
  addDestination(d: OutboxDestination): void {
    this.leaseLoops.add(d);
  }

  /** Stops handing rows to a destination; its deliveries in flight settle through its dispatcher (the wiring waits for them). */
  async removeDestination(name: string): Promise<void> {
    await this.leaseLoops.remove(name);
  }

  /**
   * Removes the rows held for a destination (a team deleted its `Destination`: held for nobody,
   * they would take the namespace's share for good); call once its dispatcher is idle.
   */
  discardRows(name: string): number {
    let removed = 0;
    for (;;) {
      const rows = this.table.due(name, Number.MAX_SAFE_INTEGER, 256);
      if (rows.length === 0) break;
      // Relaxed: a crash that loses this removal delivers nothing, the destination being gone.
      this.table.relaxedTransaction(() => {
        for (const r of rows) this.table.remove(r);
      });
      removed += rows.length;
    }
    if (removed > 0) this.table.scheduleReclaim();
    return removed;
  }

  /** Events held for destinations not in `configured` (a destination removed from the config), by name. */
  orphans(configured: readonly string[]): Record<string, number> {
    return this.table.orphans(configured);
  }

  /** Rows waiting for a destination (the lag gauge). */
  depth(destination: string): number {
    return this.table.depth(destination);
  }

  /** When the oldest event waiting for `destination` was accepted (the oldest-pending gauge). */
  oldestReceivedAtMs(destination: string): number | undefined {
    return this.table.oldestReceivedAtMs(destination);
  }

  // ---- dead letters (outbox-dead-letters.ts) ----

  /** A replayed letter back in the outbox, with the record that it was handed on (once, even if replayed again). */
  requeue(letter: DeliveryDeadLetter): void {
    this.replayed.requeue(letter);
    this.leaseLoops.wake();
  }

  /** The replayed letter is gone from the dead-letter store. */
  forgetReplayed(seq: number): void {
    this.replayed.forget(seq);
  }

  /** Letters handed on by a replay that may have stopped before removing them. */
  replayedLetters(): ReplayedLetter[] {
    return this.replayed.all();
  }

  /** Stops handing out rows; those in flight settle through their dispatchers (the wiring waits for them). */
  stop(): void {
    this.leaseLoops.stop();
  }

  /** Idempotent; call once the dispatchers are idle, so nothing touches the database any more. */
  async close(): Promise<void> {
    if (!this.table.db.isOpen) return;
    this.leaseLoops.stop();
    this.appends.flush();
    await this.leaseLoops.close();
    this.table.checkpointer.close();
    this.table.db.close();
  }
}
