/**
 * The outbox's delivery side (outbox.ts): per destination, a loop takes its due rows oldest first
 * and hands their events to the destination's dispatcher. A row handed out is leased (its next
 * attempt time moves past the delivery timeout), so a crash means a redelivery after the lease,
 * never a loss; the attempt count is stored with the row. A row holds a request's events, each
 * settled on its own; the row is settled once all are (message-settlement.ts: removed, or
 * rescheduled with only the undelivered events sent again by this process). Removals and
 * reschedules of one turn share one transaction, not fsynced at its commit
 * (OutboxTable.relaxedTransaction: a crash that loses one delivers the events again).
 *
 * A namespace that holds its share of the destination's in-flight events while others send there
 * (protection/namespace-lanes.ts) has its rows left in the outbox, unleased, until it has room:
 * handed out, they would only be handed back for the share, every row of its backlog every
 * second. The loop then sleeps until an event is settled or another namespace's row is due.
 *
 * While the worker checkpoints the WAL nothing is written (commitHeld), yet the loop goes on
 * handing out rows: their leases are kept here and written once it is done, before any settle that
 * came after them, and the rows they lease are left out of the due rows meanwhile. Delivery does
 * not wait for the checkpoint: the destination prepares the next posts while the disk copies.
 */
import { deliveryLetterId, LetterTooLarge, type NewDeadLetter } from '../../dead-letters/model.js';
import { GroupCommit } from '../../storage/group-commit.js';
import { eventTextsOf } from '../../sinks/bus-messages.js';
import { packReceivedAt, parseStored } from '../destination.js';
import type { Dispatcher } from '../dispatcher.js';
import { DoneEvents, MessageEventDelivery, MessageSettlement } from '../message-settlement.js';
import type { OutboxRow, OutboxTable } from './outbox-table.js';
import { tracingOn } from '../../tracing/tracing.js';
import { carrierOfText } from '../../tracing/carrier.js';

const IDLE_POLL_MS = 1000;
/** An event whose dead letter could not be written is tried again after this long. */
const KEEP_FAILED_RETRY_MS = 1000;
/** Rows read at once when handing out (fewer when they hold many events). */
const MAX_ROWS_PER_READ = 256;
/** Rows per destination whose settled events are remembered while the rest wait for a retry. */
const REMEMBERED_ROWS = 4096;

export interface OutboxDestination {
  name: string;
  dispatcher: Dispatcher;
  /** How long a handed-out row stays leased: longer than one delivery with its timeout. */
  leaseMs: number;
}

type Settle = { apply: () => void; resolve: () => void; reject: (err: Error) => void };

export class OutboxLeaseLoops {
  private readonly settles = new GroupCommit<Settle>((g) => this.commitSettles(g));
  /** Settles waiting for the worker's checkpoint (commitSettles). */
  private heldSettles: Settle[] = [];
  /** Leases taken while the worker checkpoints, written before the held settles (commitHeld). */
  private heldLeases: Array<{ seq: number; until: number }> = [];
  /** Their rows: still due in the table until then, so left out when handing out. */
  private readonly leasedUnwritten = new Set<number>();
  /** Woken once the held leases are written (a loop that found only rows leased meanwhile). */
  private heldWritten: Array<() => void> = [];
  private readonly wakers = new Set<() => void>();
  private readonly loops = new Set<Promise<void>>();
  private readonly done = new Map<string, DoneEvents>();
  /** Events per row each destination's last lease found: how many rows the next one reads for its room. */
  private readonly eventsPerRow = new Map<string, number>();
  /** Each destination's loop, and whether it was told to stop (the destination removed while running). */
  private readonly running = new Map<string, { loop: Promise<void>; stopped: boolean }>();
  private closed = false;

  constructor(
    private readonly table: OutboxTable,
    /** Keeps an event a destination gave up on (the dead-letter store); resolves once it is durable. */
    private readonly bury: (letter: NewDeadLetter) => Promise<unknown>,
    /** Called when handing out rows failed (then retried after a second). */
    private readonly onError: (err: Error) => void,
  ) {}

  /** Starts handing due rows to each destination's dispatcher. */
  start(destinations: readonly OutboxDestination[]): void {
    for (const d of destinations) this.add(d);
  }

  /** Starts handing due rows to one more destination (a team's, added while running). */
  add(d: OutboxDestination): void {
    this.done.set(d.name, new DoneEvents(REMEMBERED_ROWS));
    const state = { loop: Promise.resolve(), stopped: false };
    const loop = this.run(d, state).finally(() => this.loops.delete(loop));
    state.loop = loop;
    this.running.set(d.name, state);
    this.loops.add(loop);
  }

  /** Stops handing rows to a destination; resolves when its loop ended (its deliveries in flight settle through its dispatcher). */
  async remove(name: string): Promise<void> {
    const state = this.running.get(name);
    if (!state) return;
    this.running.delete(name);
    state.stopped = true;
    this.wake();
    await state.loop.catch(() => undefined);
  }

  /** New rows: every sleeping loop looks again. */
  wake(): void {
    for (const wake of this.wakers) wake();
  }

  stop(): void {
    this.closed = true;
    this.wake();
  }

  /** Stops, commits what is settled, and waits for the loops to end. */
  async close(): Promise<void> {
    this.stop();
    this.settles.flush();
    this.commitHeld();
    await Promise.allSettled([...this.loops]);
  }

  private async run(d: OutboxDestination, state: { stopped: boolean }): Promise<void> {
    while (!this.closed && !state.stopped) {
      try {
        await this.handOut(d, state);
      } catch (err) {
        // A database that cannot be written now (disk full, I/O error): try again shortly.
        this.onError(err as Error);
        await this.idle(IDLE_POLL_MS);
      }
    }
  }

  /** Hands the due rows (as many as the dispatcher has room for) to it, or sleeps until one is due. */
  private async handOut(d: OutboxDestination, state: { stopped: boolean }): Promise<void> {
    await d.dispatcher.waitForAnyRoom();
    if (this.closed || state.stopped) return;
    // The destination's circuit is open: its rows stay where they are, unleased, until the probe.
    const holdMs = d.dispatcher.holdMs();
    if (holdMs > 0) {
      await this.idle(holdMs);
      return;
    }
    const now = Date.now();
    const { rows, atShare } = this.leaseDue(d, now);
    if (rows.length === 0) {
      // Sleep until the next retry is due (an append wakes the loop earlier), of a namespace with
      // room; one at its share has room again once an event is settled.
      // Rows leased during a checkpoint are still due in the table: wait for their leases' write.
      const written = this.heldLeases.length > 0 ? this.untilHeldWritten() : undefined;
      // With every namespace holding rows at its share (or without room), the next due row waits
      // for a settle anyway; the query leaving them out would walk every row's record for nothing.
      const next = written || !this.table.holdsOthers(atShare) ? null : this.table.nextDue(d.name, atShare);
      const sleep = next === null ? IDLE_POLL_MS : Math.max(5, Math.min(IDLE_POLL_MS, next - now));
      const settled = atShare.length > 0 ? d.dispatcher.untilSettled() : undefined;
      await this.idle(sleep, written && settled ? Promise.race([written, settled]) : (written ?? settled));
      return;
    }
    for (const r of rows) this.submit(d, r.row, r.events);
  }

  /**
   * Leases due rows until their events fill the dispatcher's room or their bytes its room in bytes
   * (at least one row); then, when a namespace holds more than its share (it took every slot while
   * alone), the rows of the others, which may use that on top (NamespaceLanes.borrowedEvents),
   * with the namespaces that have no room left out of the read.
   * A row holds a request's events, so rows are read a few at a time, as many as the events per row
   * seen so far (in this lease, else in the last) say are needed, instead of reading `free` rows of
   * which most would go back; the rows read past the room stay due. (Leasing every row read handed
   * a released backlog of 100-event rows ten times maxInFlight at once, and the loop spent 90 ms
   * handing them to the dispatcher while Alertmanager had nothing to do.) Rows of
   * a namespace at its share (`atShare`) are left due, and the next reads leave it out. While the
   * worker checkpoints, the leases wait in memory (commitHeld) and their rows are skipped.
   */
  private leaseDue(
    d: OutboxDestination,
    now: number,
  ): { rows: Array<{ row: OutboxRow; events: string[] }>; atShare: string[] } {
    const rows: Array<{ row: OutboxRow; events: string[] }> = [];
    const atShare: string[] = [];
    /** Events each namespace seen may still be handed, as the dispatcher's shares say. */
    const room = new Map<string, number>();
    let events = 0;
    let bytes = 0;
    const until = now + d.leaseMs;
    // Settles held too: a lease written now would come before their writes, and overtake the checkpoint.
    const holding = this.heldLeases.length > 0 || this.heldSettles.length > 0 || this.holdForCheckpoint();
    const lease = holding
      ? (seq: number): void => {
          this.heldLeases.push({ seq, until });
          this.leasedUnwritten.add(seq);
        }
      : (seq: number): void => this.table.lease(seq, until);
    const read = (free: number, freeBytes: number): void => {
      while (events < free && bytes < freeBytes) {
        const perRow = rows.length === 0 ? (this.eventsPerRow.get(d.name) ?? 1) : events / rows.length;
        const want = Math.max(1, Math.min(MAX_ROWS_PER_READ, Math.ceil((free - events) / perRow)));
        // Rows leased but not yet written come first (they are the oldest due): read past them.
        const limit = want + this.leasedUnwritten.size;
        const due = this.table.due(d.name, now, limit, atShare);
        for (const row of due) {
          if (events >= free) break;
          if (this.leasedUnwritten.has(row.seq)) continue;
          // Its share, and what the dispatcher has room for: for a namespace that arrives while
          // another holds more than its share, that one's excess too (NamespaceLanes.borrowedEvents).
          const left =
            room.get(row.tenant) ?? Math.min(d.dispatcher.roomOf(row.tenant), d.dispatcher.free(row.tenant) - events);
          if (left <= 0) {
            if (!atShare.includes(row.tenant)) atShare.push(row.tenant);
            continue;
          }
          lease(row.seq);
          const pieces = eventTextsOf(row.payload);
          rows.push({ row, events: pieces });
          room.set(row.tenant, left - pieces.length);
          events += pieces.length;
          bytes += row.payload.length;
          if (bytes >= freeBytes) break;
        }
        if (due.length < limit) break;
      }
    };
    const readAll = (): void => {
      read(d.dispatcher.free(), d.dispatcher.freeBytes());
      const most = d.dispatcher.mostFree();
      if (most <= d.dispatcher.free()) return;
      for (const [namespace, left] of room) if (left <= 0 && !atShare.includes(namespace)) atShare.push(namespace);
      for (const namespace of d.dispatcher.namespacesWithoutRoom())
        if (!atShare.includes(namespace)) atShare.push(namespace);
      // Only when another namespace holds rows: the read leaving namespaces out goes through every
      // due row's record (the namespace is stored after the payload), a backlog's worth of pages.
      if (this.table.holdsOthers(atShare)) read(most, d.dispatcher.mostFreeBytes());
    };
    // Reads only while holding: a transaction of the leases read and written together otherwise.
    if (holding) readAll();
    else this.table.relaxedTransaction(readAll);
    if (rows.length > 0) this.eventsPerRow.set(d.name, events / rows.length);
    return { rows, atShare };
  }

  /** Hands a row's events not yet settled to the dispatcher; the row is settled once they all are. */
  private submit(d: OutboxDestination, r: OutboxRow, events: readonly string[]): void {
    const done = this.done.get(d.name) as DoneEvents;
    const doneBefore = done.of(r.seq);
    const indexes = events.map((_, i) => i).filter((i) => !doneBefore?.has(i));
    const settle = (apply: () => void): void =>
      void this.settle(apply).catch((err: Error) => {
        // Not written: the row's lease runs out and its events are handed out again.
        this.onError(err);
      });
    const settlement = new MessageSettlement(
      {
        ack: () => settle(() => this.table.remove(r)),
        term: () => settle(() => this.table.remove(r)),
        nak: (delayMs, error) => settle(() => this.table.reschedule(r.seq, Date.now() + delayMs, error)),
        hold: (delayMs) => settle(() => this.table.giveBack(r.seq, Date.now() + delayMs)),
      },
      r.seq,
      indexes.length,
      doneBefore,
      done,
    );
    const keep = async (json: Uint8Array | string, _index: number, reason: string, error: string): Promise<void> => {
      // Kept first, then the row goes once its other events are settled: a crash between the two
      // delivers the event again, never loses it.
      const e = parseStored(json);
      await this.bury({
        kind: 'delivery',
        // One letter per event and destination, however often a sender re-sends it.
        id: deliveryLetterId(r.destination, e.id),
        namespace: e.namespace,
        integration: e.integration,
        destination: r.destination,
        reason,
        error,
        attempts: r.attempts + 1,
        event: e,
      }).catch((err: Error) => {
        // Larger than a namespace's share: it can never be kept (the store counted the drop).
        if (!(err instanceof LetterTooLarge)) throw err;
      });
    };
    const receivedAt = packReceivedAt(events);
    // The hand-off's trace context, kept with the row (read only while tracing is on).
    const trace = tracingOn() ? carrierOfText(r.trace) : undefined;
    for (const i of indexes)
      d.dispatcher.submit(
        new MessageEventDelivery(
          events[i] as string,
          r.attempts + 1,
          i,
          settlement,
          keep,
          KEEP_FAILED_RETRY_MS,
          receivedAt,
          r.tenant,
          trace,
        ),
      );
  }

  private settle(apply: () => void): Promise<void> {
    return new Promise((resolve, reject) => this.settles.add({ apply, resolve, reject }));
  }

  /**
   * Settles wait while the worker checkpoints the WAL, as the alert states' writes do
   * (wal-checkpointer.ts): the WAL restarts from its first frame only when no write overtook the
   * checkpoint, and a WAL that never restarts grows to its limit, where the loop checkpoints it
   * itself (the worker's fsyncs on the loop, about a tenth of delivery's time from the outbox).
   * Waiting only delays acknowledgements, never gives one early.
   */
  private commitSettles(group: Settle[]): void {
    if (this.heldSettles.length > 0 || this.heldLeases.length > 0 || this.holdForCheckpoint()) {
      this.heldSettles.push(...group);
      return;
    }
    this.commitNow([], group);
  }

  /** Whether writes wait for the worker's checkpoint now; if so, commitHeld runs once it is over (at most its wait: wal-checkpointer.ts). */
  private holdForCheckpoint(): boolean {
    return this.table.checkpointer.holdWrites(() => this.commitHeld());
  }

  /** The leases and settles held for the checkpoint, in the order they were taken: the leases first. */
  private commitHeld(): void {
    const leases = this.heldLeases;
    const settles = this.heldSettles;
    this.heldLeases = [];
    this.heldSettles = [];
    if (leases.length > 0 || settles.length > 0) this.commitNow(leases, settles);
    for (const l of leases) this.leasedUnwritten.delete(l.seq);
    for (const wake of this.heldWritten.splice(0)) wake();
  }

  private untilHeldWritten(): Promise<void> {
    return new Promise((resolve) => this.heldWritten.push(resolve));
  }

  /**
   * One transaction. Leases that cannot be written leave their rows due, handed out again (a
   * repeat, never a loss); settles that cannot be, their rows' leases run out.
   */
  private commitNow(leases: ReadonlyArray<{ seq: number; until: number }>, group: Settle[]): void {
    try {
      this.table.relaxedTransaction(() => {
        for (const l of leases) this.table.lease(l.seq, l.until);
        for (const g of group) g.apply();
      });
    } catch (err) {
      for (const g of group) g.reject(err as Error);
      if (group.length === 0) this.onError(err as Error);
      return;
    }
    for (const g of group) g.resolve();
    if (group.length > 0) this.table.scheduleReclaim();
  }

  /** Sleeps `ms`, or less: until woken (new rows, stop), or until `orUntil` resolves. */
  private idle(ms: number, orUntil?: Promise<void>): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
      void orUntil?.then(done);
    });
  }
}
