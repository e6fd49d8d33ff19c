/**
 * Between a durable queue and a destination: takes the events the queue hands out, sends them in
 * batches (what arrives within one turn of the event loop, up to the destination's batch size),
 * sends at most maxInFlight events at a time (a queue hands out a message's events together, which
 * may be more: the rest wait here), holds at most maxInFlightBytes of them (plus one message's),
 * and settles each event with the queue: acknowledged
 * when delivered; retried after exponential backoff with full jitter (or the receiver's
 * Retry-After); dead-lettered with the reason when the receiver refused it or the attempts ran out.
 * Nothing is settled before the destination answered, so a crash means a redelivery, not a loss.
 */
import type { Logger } from 'pino';
import type { Counter, Histogram } from 'prom-client';
import { LogLimiter } from '../core/log-limiter.js';
import { receivedAtMs, retryDelayMs, type Destination, type QueuedEvent } from './destination.js';
import type { Outcome } from '../outbound/outcome.js';
import type { DestinationMetrics } from './metrics.js';
import type { DeliverySettings } from './settings.js';

/** One event handed out by a queue, and how to settle it there. */
export interface Delivery extends QueuedEvent {
  /** 1 for the first delivery, counted by the queue (it survives restarts). */
  attempt: number;
  ack(): Promise<void>;
  retry(delayMs: number, error: string): Promise<void>;
  deadLetter(reason: string, error: string): Promise<void>;
}

export class Dispatcher {
  private batch: Delivery[] = [];
  private scheduled = false;
  /** Submitted and not yet settled. */
  private inFlight = 0;
  /** Their stored JSON's length: what they hold in memory, bounded by maxInFlightBytes. */
  private inFlightBytes = 0;
  /** Handed to the destination and not yet answered (at most maxInFlight). */
  private sending = 0;
  private waiters: Array<() => void> = [];
  private readonly running = new Set<Promise<void>>();
  private readonly logs: LogLimiter;
  /** This destination's series, bound once: finding a child by its labels costs every batch a hash. */
  private readonly delivered: Counter.Internal;
  private readonly latency: Histogram.Internal<'destination'>;

  constructor(
    readonly destination: Destination,
    private readonly options: DeliverySettings,
    private readonly metrics: DestinationMetrics,
    logger: Logger,
  ) {
    this.logs = new LogLimiter(logger);
    this.delivered = metrics.delivered.labels({ destination: destination.name });
    this.latency = metrics.latency.labels({ destination: destination.name });
  }

  /** How many more events may be submitted now (none while their bytes are at maxInFlightBytes). */
  free(): number {
    if (this.inFlightBytes >= this.options.maxInFlightBytes) return 0;
    return Math.max(0, this.options.maxInFlight - this.inFlight);
  }

  /** How many more bytes of events may be submitted now. */
  freeBytes(): number {
    return Math.max(0, this.options.maxInFlightBytes - this.inFlightBytes);
  }

  /**
   * Resolves once `events` may be submitted (a message's events go together): when that many are
   * free, or for more than maxInFlight, when nothing is in flight. Bytes are checked before, not
   * after: the events of one message (at most the bus's max_payload or an outbox row) may pass
   * maxInFlightBytes, and nothing more is taken until they are settled.
   */
  async waitForRoom(events = 1): Promise<void> {
    const wanted = Math.min(Math.max(1, events), this.options.maxInFlight);
    while (this.free() < wanted) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  submit(d: Delivery): void {
    this.inFlight++;
    this.inFlightBytes += d.json.length;
    this.batch.push(d);
    if (this.batch.length >= this.destination.maxBatch) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Resolves when every submitted event is settled (shutdown). */
  async idle(): Promise<void> {
    this.flush();
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private flush(): void {
    this.scheduled = false;
    while (this.batch.length > 0 && this.sending < this.options.maxInFlight) {
      const batch = this.batch.splice(0, Math.min(this.destination.maxBatch, this.options.maxInFlight - this.sending));
      this.sending += batch.length;
      const run = this.deliver(batch).finally(() => {
        this.running.delete(run);
        this.sending -= batch.length;
        this.inFlight -= batch.length;
        for (const d of batch) this.inFlightBytes -= d.json.length;
        if (this.batch.length > 0) this.flush();
        for (const w of this.waiters.splice(0)) w();
      });
      this.running.add(run);
    }
  }

  private async deliver(batch: Delivery[]): Promise<void> {
    const name = this.destination.name;
    let outcome: Outcome;
    try {
      outcome = await this.destination.send(batch);
    } catch (err) {
      outcome = { kind: 'retry', reason: 'internal', error: (err as Error).message };
    }
    if (outcome.kind === 'accepted') {
      const now = Date.now();
      this.delivered.inc(batch.length);
      for (const d of batch) this.latency.observe(Math.max(0, now - receivedAtMs(d)) / 1000);
      await this.settle(batch, (d) => d.ack());
      return;
    }
    if (outcome.kind === 'reject') {
      this.metrics.deadLettered.inc({ destination: name, reason: outcome.reason }, batch.length);
      this.logs.error(
        `reject:${outcome.reason}`,
        new Error(outcome.error),
        { destination: name, events: batch.length },
        'destination refused events; they are in the dead letter',
      );
      await this.settle(batch, (d) => d.deadLetter(outcome.reason, outcome.error));
      return;
    }
    this.metrics.retries.inc({ destination: name, reason: outcome.reason }, batch.length);
    this.logs.error(
      `retry:${outcome.reason}`,
      new Error(outcome.error),
      { destination: name, events: batch.length },
      'delivery failed; retrying with backoff',
    );
    await this.settle(batch, (d) => {
      if (d.attempt >= this.options.maxAttempts) {
        this.metrics.deadLettered.inc({ destination: name, reason: 'attempts_exhausted' });
        return d.deadLetter('attempts_exhausted', `${d.attempt} attempts, the last: ${outcome.error}`);
      }
      return d.retry(retryDelayMs(d.attempt, this.options, outcome.retryAfterMs), outcome.error);
    });
  }

  /** A settle that fails (the bus went away) is left to the queue: the event comes back. */
  private async settle(batch: Delivery[], how: (d: Delivery) => Promise<void>): Promise<void> {
    let failed = 0;
    let first: unknown;
    if (batch.length === 1) {
      // One event (batchSize 1): no array of results to build and filter.
      try {
        await how(batch[0] as Delivery);
      } catch (err) {
        failed = 1;
        first = err;
      }
    } else {
      for (const r of await Promise.allSettled(batch.map(how))) {
        if (r.status === 'rejected' && failed++ === 0) first = r.reason;
      }
    }
    if (failed > 0) {
      this.logs.error(
        'settle',
        first,
        { destination: this.destination.name, events: failed },
        'could not settle deliveries with the queue; they will be delivered again',
      );
    }
  }
}
