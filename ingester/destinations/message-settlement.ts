/**
 * A bus message holds a request's events (sinks/bus-messages.ts), and a destination settles each
 * event on its own: delivered, dead-lettered, or to be retried. The message is settled with the
 * bus once all of its events are:
 * - every event delivered or dead-lettered: acknowledged (terminated when every one was
 *   dead-lettered, as a message of one event always was);
 * - any event to be retried: nak'ed with the longest delay asked for (each event waits at least
 *   as long as its backoff or the receiver's Retry-After said), and this replica remembers
 *   which events are done, so the redelivery sends only the others. The memory is bounded (the
 *   oldest entries go first) and per replica: a redelivery that reaches another replica, or one
 *   whose entry was dropped, sends the done events again. That is a repeat, never a loss (the
 *   delivery guarantee is at least once).
 */
import { LRUCache } from 'lru-cache';

/** What the bus lets a consumer do with one message (a JsMsg). */
export interface SettleableMessage {
  ack(): void;
  nak(delayMs: number): void;
  term(reason: string): void;
}

/** Per message (by stream sequence): the indexes of its events already delivered or dead-lettered. */
export class DoneEvents {
  private readonly done: LRUCache<number, ReadonlySet<number>>;

  constructor(maxMessages: number) {
    this.done = new LRUCache({ max: Math.max(1, maxMessages) });
  }

  of(seq: number): ReadonlySet<number> | undefined {
    return this.done.get(seq);
  }

  remember(seq: number, indexes: ReadonlySet<number>): void {
    this.done.set(seq, indexes);
  }

  forget(seq: number): void {
    this.done.delete(seq);
  }

  get size(): number {
    return this.done.size;
  }
}

export class MessageSettlement {
  private open: number;
  private retryMs?: number;
  private deliveredCount = 0;
  private deadReason?: string;
  private readonly doneNow: number[] = [];

  /**
   * `pending`: how many of the message's events are being delivered this time; `doneBefore`: the
   * indexes an earlier attempt on this replica settled.
   */
  constructor(
    private readonly message: SettleableMessage,
    private readonly seq: number,
    pending: number,
    private readonly doneBefore: ReadonlySet<number> | undefined,
    private readonly memory: DoneEvents,
  ) {
    this.open = pending;
    if (pending === 0) this.finish();
  }

  delivered(index: number): void {
    this.deliveredCount++;
    this.doneNow.push(index);
    this.settled();
  }

  deadLettered(index: number, reason: string): void {
    this.deadReason ??= reason;
    this.doneNow.push(index);
    this.settled();
  }

  retry(delayMs: number): void {
    this.retryMs = Math.max(this.retryMs ?? 0, delayMs);
    this.settled();
  }

  private settled(): void {
    if (--this.open === 0) this.finish();
  }

  private finish(): void {
    if (this.retryMs !== undefined) {
      this.memory.remember(this.seq, new Set([...(this.doneBefore ?? []), ...this.doneNow]));
      this.message.nak(this.retryMs);
      return;
    }
    this.memory.forget(this.seq);
    const everyOneDeadLettered =
      this.deliveredCount === 0 && this.doneBefore === undefined && this.deadReason !== undefined;
    if (everyOneDeadLettered) this.message.term(this.deadReason as string);
    else this.message.ack();
  }
}
