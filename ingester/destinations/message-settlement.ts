/**
 * A bus message, or an outbox row, holds a request's events (sinks/bus-messages.ts), and a
 * destination settles each event on its own: delivered, dead-lettered, or to be retried. The
 * message is settled with its queue once all of its events are:
 * - every event delivered or dead-lettered: acknowledged (terminated when every one was
 *   dead-lettered, as a message of one event always was);
 * - any event to be retried: nak'ed with the longest delay asked for (each event waits at least
 *   as long as its backoff or the receiver's Retry-After said), and this replica remembers
 *   which events are done, so the redelivery sends only the others. The memory is bounded (the
 *   oldest entries go first) and per replica: a redelivery that reaches another replica, or one
 *   whose entry was dropped, sends the done events again. That is a repeat, never a loss (the
 *   delivery guarantee is at least once).
 */
import type { LRUCache } from 'lru-cache';
import type { NormalisedEvent } from '../core/event.js';
import { oneLine } from '../dead-letters/bus-store.js';
import { parseStored } from './destination.js';
import type { Delivery } from './dispatcher.js';
import { growingLru } from '../../common/growing-lru.js';
import type { TraceCarrier } from '../tracing/carrier.js';

/** What a queue lets a consumer do with one message (a JsMsg, an outbox row). */
export interface SettleableMessage {
  ack(): void;
  /** Deliver it again after delayMs; `error` is the last failure, for the queue to keep. */
  nak(delayMs: number, error: string): void;
  term(reason: string): void;
  /**
   * Deliver it again after delayMs, unsent this time (the circuit was open): the attempt it was
   * handed out for is not counted. A queue without it naks.
   */
  hold?(delayMs: number, error: string): void;
}

/** Per message (by stream sequence): the indexes of its events already delivered or dead-lettered. */
export class DoneEvents {
  private readonly done: LRUCache<number, ReadonlySet<number>>;

  constructor(maxMessages: number) {
    this.done = growingLru(maxMessages);
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
  /** Whether any event of this attempt was really tried and failed (else every open one was held). */
  private tried = false;
  private lastError = '';
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

  retry(delayMs: number, error = ''): void {
    this.tried = true;
    this.retryMs = Math.max(this.retryMs ?? 0, delayMs);
    if (error) this.lastError = error;
    this.settled();
  }

  /** Handed back unsent (the circuit is open); the message is held unless another event was tried. */
  hold(delayMs: number, error: string): void {
    this.retryMs = Math.max(this.retryMs ?? 0, delayMs);
    if (!this.lastError) this.lastError = error;
    this.settled();
  }

  private settled(): void {
    if (--this.open === 0) this.finish();
  }

  private finish(): void {
    if (this.retryMs !== undefined) {
      this.memory.remember(this.seq, new Set([...(this.doneBefore ?? []), ...this.doneNow]));
      if (!this.tried && this.message.hold) this.message.hold(this.retryMs, this.lastError);
      else this.message.nak(this.retryMs, this.lastError);
      return;
    }
    this.memory.forget(this.seq);
    const everyOneDeadLettered =
      this.deliveredCount === 0 && this.doneBefore === undefined && this.deadReason !== undefined;
    if (everyOneDeadLettered) this.message.term(this.deadReason as string);
    else this.message.ack();
  }
}

const SETTLED = Promise.resolve();

/** One event of a message, as the dispatcher settles it (a class: no closures per event). */
export class MessageEventDelivery implements Delivery {
  private parsed?: NormalisedEvent;

  constructor(
    readonly json: Uint8Array | string,
    readonly attempt: number,
    private readonly index: number,
    private readonly settlement: MessageSettlement,
    /** Keeps the event in the dead-letter store. */
    private readonly keep: (json: Uint8Array | string, index: number, reason: string, error: string) => Promise<void>,
    /** When it could not be kept: retried after this long. */
    private readonly keepFailedRetryMs: number,
    /** The received_at its message's events share, read once for all of them. */
    readonly sharedReceivedAtMs?: () => number,
    /** Whose event it is: its message's (a message or row holds one request's events). */
    readonly namespace?: string,
    /** The trace context its message carried (tracing on). */
    readonly trace?: TraceCarrier,
  ) {}

  event(): NormalisedEvent {
    return (this.parsed ??= parseStored(this.json));
  }

  ack(): Promise<void> {
    this.settlement.delivered(this.index);
    return SETTLED;
  }

  retry(delayMs: number, error: string): Promise<void> {
    this.settlement.retry(delayMs, error);
    return SETTLED;
  }

  hold(delayMs: number, why: string): Promise<void> {
    this.settlement.hold(delayMs, why);
    return SETTLED;
  }

  async deadLetter(reason: string, error: string): Promise<void> {
    try {
      await this.keep(this.json, this.index, reason, error);
    } catch (err) {
      // Not kept: the event must come back, so it is retried like a failed delivery.
      this.settlement.retry(this.keepFailedRetryMs);
      throw err;
    }
    this.settlement.deadLettered(this.index, oneLine(reason, 128));
  }
}
