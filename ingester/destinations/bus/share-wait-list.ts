/**
 * Bus messages of a namespace at its share of a destination's in-flight events
 * (protection/namespace-lanes.ts), or for which the dispatcher has no room (a namespace alone took
 * every slot: the consumer reads on past its messages, so that a namespace arriving behind them
 * gets its share at once), kept on this replica until the namespace has room, instead of
 * being submitted, handed back to the bus for the share and redelivered a second later, again and
 * again: round trips to the bus and CPU while nothing can progress. A kept message is told to the
 * server to be in progress (`working()`) so its ack_wait does not run out, and it is not redelivered
 * meanwhile: its delivery count, the attempt number, does not grow.
 *
 * Per namespace in the order fetched; a namespace whose events settle gets its messages submitted
 * first in, so the other namespaces' messages behind them in the stream are never waited for here.
 * Bounded in bytes (and, by the consumer's max_ack_pending, in messages), shared fairly between
 * the namespaces waiting: when it is full, a namespace holding less than the one holding the most
 * takes room from that one's newest message (submitted, and so handed back for the share as
 * before), so one slow receiver's namespace cannot leave another's messages to bounce. A message
 * that finds no room is submitted and handed back for the share as before. Stopping (a new connection, a removed
 * destination, shutdown) hands every kept message back unsent, which is not an attempt either.
 */
import type { Delivery } from '../dispatcher.js';

/** What the wait list needs of a destination's dispatcher. */
export interface ShareRoom {
  /** How many more of the namespace's events may be submitted before it holds its share. */
  roomOf(namespace: string): number;
  /** Whether the dispatcher takes `events` of the namespace now (its bounds, and what others hold past their shares). */
  hasRoom(events: number, namespace: string): boolean;
  submit(d: Delivery): void;
  /** Resolves when the next submitted event is settled. */
  untilSettled(): Promise<void>;
}

/** A fetched message: its events still to deliver, and how to tell the server it is in progress. */
export interface WaitingMessage {
  readonly deliveries: readonly Delivery[];
  /** Its payload's size: what it holds in memory here. */
  readonly bytes: number;
  working(): void;
}

/** How often the wait list looks again without a settled event (a namespace may have gone quiet). */
const RECHECK_MS = 1000;

export class ShareWaitList {
  private readonly waiting = new Map<string, WaitingMessage[]>();
  /** Bytes kept per namespace, for the fair share when full. */
  private readonly bytesOf = new Map<string, number>();
  private bytes = 0;
  private count = 0;
  private pumping = false;
  private stopped = false;
  private lastWorkingMs: number;
  private wake: () => void = () => undefined;

  constructor(
    private readonly room: ShareRoom,
    /** The most bytes of messages kept at once. */
    private readonly maxBytes: number,
    /** How often kept messages are told to be in progress: well within the consumer's ack_wait. */
    private readonly workingEveryMs: number,
    private readonly now: () => number = Date.now,
    /** Told the number of messages kept each time it changes (the gauge of messages waiting for a share). */
    private readonly onSize: (size: number) => void = () => undefined,
  ) {
    this.lastWorkingMs = now();
    onSize(0);
  }

  /** Messages kept now. */
  get size(): number {
    return this.count;
  }

  /**
   * Keeps the message when its namespace holds its share (or has messages kept already, which go
   * first): true. False: submit it now (it has room, or it does not fit here).
   */
  keep(message: WaitingMessage): boolean {
    if (this.stopped || message.deliveries.length === 0) return false;
    const namespace = namespaceOf(message);
    const queue = this.waiting.get(namespace);
    // Kept too when the dispatcher is full for it (it took every slot while alone): the consumer
    // reads on, and a namespace that arrives behind it gets its share at once.
    if (!queue && this.room.roomOf(namespace) > 0 && this.room.hasRoom(message.deliveries.length, namespace))
      return false;
    if (this.bytes + message.bytes > this.maxBytes && this.count > 0 && !this.makeRoom(namespace, message.bytes))
      return false;
    const kept = this.waiting.get(namespace);
    if (kept) kept.push(message);
    else this.waiting.set(namespace, [message]);
    this.bytesOf.set(namespace, (this.bytesOf.get(namespace) ?? 0) + message.bytes);
    this.bytes += message.bytes;
    this.count++;
    this.onSize(this.count);
    if (!this.pumping) void this.pump();
    return true;
  }

  /** Hands every kept message back to the bus unsent and keeps no more. */
  stop(why: string): void {
    this.stopped = true;
    this.wake();
    for (const queue of this.waiting.values())
      for (const message of queue)
        for (const d of message.deliveries) {
          try {
            void d.hold(0, why).catch(() => undefined);
          } catch {
            // The connection is gone (a new one is why this stops): the server redelivers it after ack_wait.
          }
        }
    this.waiting.clear();
    this.bytesOf.clear();
    this.bytes = 0;
    this.count = 0;
    this.onSize(0);
  }

  /** While messages are kept: submits those whose namespace has room, each time an event settles. */
  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (!this.stopped && this.count > 0) {
        // Asked before looking: an event settled while this pass runs wakes the next one.
        const settled = this.room.untilSettled();
        this.submitWithRoom();
        if (this.stopped || this.count === 0) return;
        if (this.now() - this.lastWorkingMs >= this.workingEveryMs) this.touch();
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, RECHECK_MS);
          timer.unref();
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
          void settled.then(this.wake);
        });
      }
    } finally {
      this.pumping = false;
    }
  }

  private submitWithRoom(): void {
    for (const [namespace, queue] of [...this.waiting]) {
      while (queue.length > 0 && !this.stopped && this.room.roomOf(namespace) > 0) {
        const message = queue[0] as WaitingMessage;
        // No room for it now: the next settle tries again; the other namespaces' go on meanwhile.
        if (!this.room.hasRoom(message.deliveries.length, namespace)) break;
        queue.shift();
        this.forget(namespace, message);
        for (const d of message.deliveries) this.room.submit(d);
      }
      if (queue.length === 0 && this.waiting.get(namespace) === queue) this.waiting.delete(namespace);
    }
  }

  /**
   * Room for `bytes` more of `namespace`, taken from the namespace holding the most while it holds
   * more than `namespace` would: its newest messages are submitted (the dispatcher hands them back
   * for the share, as for a message that does not fit). False when `namespace` would hold the most.
   */
  private makeRoom(namespace: string, bytes: number): boolean {
    const wanted = (this.bytesOf.get(namespace) ?? 0) + bytes;
    while (this.bytes + bytes > this.maxBytes) {
      let largest: string | undefined;
      for (const [other, held] of this.bytesOf)
        if (other !== namespace && held > (largest === undefined ? 0 : (this.bytesOf.get(largest) ?? 0)))
          largest = other;
      const queue = largest === undefined ? undefined : this.waiting.get(largest);
      if (largest === undefined || !queue || (this.bytesOf.get(largest) ?? 0) <= wanted) return false;
      const newest = queue.pop() as WaitingMessage;
      if (queue.length === 0) this.waiting.delete(largest);
      this.forget(largest, newest);
      for (const d of newest.deliveries) this.room.submit(d);
    }
    return true;
  }

  private forget(namespace: string, message: WaitingMessage): void {
    const left = (this.bytesOf.get(namespace) ?? 0) - message.bytes;
    if (left > 0) this.bytesOf.set(namespace, left);
    else this.bytesOf.delete(namespace);
    this.bytes -= message.bytes;
    this.count--;
    this.onSize(this.count);
  }

  /** Tells the server every kept message is in progress (its ack_wait starts again). */
  private touch(): void {
    this.lastWorkingMs = this.now();
    for (const queue of this.waiting.values())
      for (const message of queue) {
        try {
          message.working();
        } catch {
          // The connection is gone: the server redelivers it after ack_wait, as for any message.
        }
      }
  }
}

const namespaceOf = (message: WaitingMessage): string => message.deliveries[0]?.namespace ?? '';
