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
  private readonly wakers = new Set<() => void>();
  private readonly loops = new Set<Promise<void>>();
  private readonly done = new Map<string, DoneEvents>();
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
    this.commitHeldSettles();
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
    await d.dispatcher.waitForRoom();
    // Leasing writes: not while the worker checkpoints the WAL (see commitSettles).
    await this.afterCheckpoint();
    if (this.closed || state.stopped) return;
    // The destination's circuit is open: its rows stay where they are, unleased, until the probe.
    const holdMs = d.dispatcher.holdMs();
    if (holdMs > 0) {
      await this.idle(holdMs);
      return;
    }
    const now = Date.now();
    const { rows, atShare } = this.leaseDue(d, now, d.dispatcher.free(), d.dispatcher.freeBytes());
    if (rows.length === 0) {
      // Sleep until the next retry is due (an append wakes the loop earlier), of a namespace with
      // room; one at its share has room again once an event is settled.
      const next = this.table.nextDue(d.name, atShare);
      const sleep = next === null ? IDLE_POLL_MS : Math.max(5, Math.min(IDLE_POLL_MS, next - now));
      await this.idle(sleep, atShare.length > 0 ? d.dispatcher.untilSettled() : undefined);
      return;
    }
    for (const r of rows) this.submit(d, r.row, r.events);
  }

  /**
   * Leases due rows until their events fill `free` or their bytes `freeBytes` (at least one row).
   * A row holds a request's events, so rows are read a few at a time, as many as the events per row
   * seen so far say are needed, instead of reading `free` rows of which most would go back. Rows of
   * a namespace at its share (`atShare`) are left due, and the next reads leave it out.
   */
  private leaseDue(
    d: OutboxDestination,
    now: number,
    free: number,
    freeBytes: number,
  ): { rows: Array<{ row: OutboxRow; events: string[] }>; atShare: string[] } {
    const rows: Array<{ row: OutboxRow; events: string[] }> = [];
    const atShare: string[] = [];
    /** Events each namespace seen may still be handed, as the dispatcher's shares say. */
    const room = new Map<string, number>();
    let events = 0;
    let bytes = 0;
    this.table.relaxedTransaction(() => {
      while (events < free && bytes < freeBytes) {
        const perRow = rows.length === 0 ? 1 : events / rows.length;
        const want = Math.max(1, Math.min(MAX_ROWS_PER_READ, Math.ceil((free - events) / perRow)));
        const due = this.table.due(d.name, now, want, atShare);
        for (const row of due) {
          const left = room.get(row.tenant) ?? d.dispatcher.roomOf(row.tenant);
          if (left <= 0) {
            if (!atShare.includes(row.tenant)) atShare.push(row.tenant);
            continue;
          }
          this.table.lease(row.seq, now + d.leaseMs);
          const pieces = eventTextsOf(row.payload);
          rows.push({ row, events: pieces });
          room.set(row.tenant, left - pieces.length);
          events += pieces.length;
          bytes += row.payload.length;
          if (bytes >= freeBytes) break;
        }
        if (due.length < want) break;
      }
    });
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
    if (this.heldSettles.length > 0 || this.table.checkpointer.holdWrites(() => this.commitHeldSettles())) {
      this.heldSettles.push(...group);
      return;
    }
    this.commitSettlesNow(group);
  }

  private commitHeldSettles(): void {
    const group = this.heldSettles;
    this.heldSettles = [];
    if (group.length > 0) this.commitSettlesNow(group);
  }

  /** Resolves at once, or when the worker's checkpoint is over (at most its wait: wal-checkpointer.ts). */
  private afterCheckpoint(): Promise<void> | undefined {
    let resume: (() => void) | undefined;
    const over = new Promise<void>((resolve) => (resume = resolve));
    return this.table.checkpointer.holdWrites(resume as () => void) ? over : undefined;
  }

  private commitSettlesNow(group: Settle[]): void {
    try {
      this.table.relaxedTransaction(() => {
        for (const g of group) g.apply();
      });
    } catch (err) {
      for (const g of group) g.reject(err as Error);
      return;
    }
    for (const g of group) g.resolve();
    this.table.scheduleReclaim();
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
