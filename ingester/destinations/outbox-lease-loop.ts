/**
 * The outbox's delivery side (outbox.ts): per destination, a loop takes its due rows oldest first
 * and hands them to the destination's dispatcher. A row handed out is leased (its next attempt
 * time moves past the delivery timeout), so a crash means a redelivery after the lease, never a
 * loss; the attempt count is stored with the row. Acks, retries and dead letters of one turn share
 * one transaction, not fsynced at its commit (OutboxTable.relaxedTransaction: a crash that loses
 * one delivers the events again).
 */
import { LetterTooLarge, type NewDeadLetter } from '../dead-letters/model.js';
import { GroupCommit } from '../storage/group-commit.js';
import { parsedOnce } from './destination.js';
import type { Dispatcher } from './dispatcher.js';
import type { OutboxRow, OutboxTable } from './outbox-table.js';

const IDLE_POLL_MS = 1000;

export interface OutboxDestination {
  name: string;
  dispatcher: Dispatcher;
  /** How long a handed-out row stays leased: longer than one delivery with its timeout. */
  leaseMs: number;
}

type Settle = { apply: () => void; resolve: () => void; reject: (err: Error) => void };

export class OutboxLeaseLoops {
  private readonly settles = new GroupCommit<Settle>((g) => this.commitSettles(g));
  private readonly wakers = new Set<() => void>();
  private readonly loops = new Set<Promise<void>>();
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
    for (const d of destinations) {
      const loop = this.run(d).finally(() => this.loops.delete(loop));
      this.loops.add(loop);
    }
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
    await Promise.allSettled([...this.loops]);
  }

  private async run(d: OutboxDestination): Promise<void> {
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
    await d.dispatcher.waitForRoom();
    if (this.closed) return;
    const now = Date.now();
    const rows = this.table.due(d.name, now, d.dispatcher.free());
    if (rows.length === 0) {
      // Sleep until the next retry is due (an append wakes the loop earlier).
      const next = this.table.nextDue(d.name);
      await this.idle(next === null ? IDLE_POLL_MS : Math.max(5, Math.min(IDLE_POLL_MS, next - now)));
      return;
    }
    this.table.relaxedTransaction(() => {
      for (const r of rows) this.table.lease(r.seq, now + d.leaseMs);
    });
    for (const r of rows) this.submit(d, r);
  }

  private submit(d: OutboxDestination, r: OutboxRow): void {
    const event = parsedOnce(r.payload);
    d.dispatcher.submit({
      json: r.payload,
      event,
      attempt: r.attempts + 1,
      ack: () => this.settle(() => this.table.remove(r)),
      retry: (delayMs, error) => this.settle(() => this.table.reschedule(r.seq, Date.now() + delayMs, error)),
      deadLetter: async (reason, error) => {
        // Kept first, then the row goes: a crash between the two delivers the event again, never loses it.
        const e = event();
        await this.bury({
          kind: 'delivery',
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
        await this.settle(() => this.table.remove(r));
      },
    });
  }

  private settle(apply: () => void): Promise<void> {
    return new Promise((resolve, reject) => this.settles.add({ apply, resolve, reject }));
  }

  private commitSettles(group: Settle[]): void {
    const usedBefore = this.table.budget.used;
    try {
      this.table.relaxedTransaction(() => {
        for (const g of group) g.apply();
      });
    } catch (err) {
      this.table.budget.used = usedBefore;
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
}
