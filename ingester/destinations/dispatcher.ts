/**
 * Between a durable queue and a destination: takes the events the queue hands out, sends them in
 * batches (what arrives within one turn of the event loop, up to the destination's batch size),
 * sends at most maxInFlight events at a time (a queue hands out a message's events together, which
 * may be more: the rest wait here), holds at most maxInFlightBytes of them (plus one message's),
 * and settles each event with the queue: acknowledged
 * when delivered; retried after exponential backoff with full jitter (or the receiver's
 * Retry-After); dead-lettered with the reason when the receiver refused it or the attempts ran out.
 * Nothing is settled before the destination answered, so a crash means a redelivery, not a loss.
 *
 * Each request first asks the destination's guard (protection/receiver-guard.ts): beyond the rate
 * limit, events wait here (never dropped); while the circuit is open they are held, i.e. handed
 * back to the queue unsent, to come back after the cool-off without spending an attempt; and a
 * request that fails once the circuit is open is held too, not dead-lettered.
 */
import type { Logger } from 'pino';
import type { Counter, Histogram } from 'prom-client';
import { LogLimiter } from '../core/log-limiter.js';
import { receivedAtMs, retryDelayMs, type Destination, type QueuedEvent } from './destination.js';
import { recordAttempts, type AttemptOutcome } from './delivery-attempts.js';
import type { Outcome } from '../outbound/outcome.js';
import type { DestinationMetrics } from './metrics.js';
import { ReceiverGuard } from './protection/receiver-guard.js';
import type { ProtectionSettings } from './protection/settings.js';
import type { DeliverySettings } from './settings.js';

/** One event handed out by a queue, and how to settle it there. */
export interface Delivery extends QueuedEvent {
  /** 1 for the first delivery, counted by the queue (it survives restarts). */
  attempt: number;
  ack(): Promise<void>;
  retry(delayMs: number, error: string): Promise<void>;
  deadLetter(reason: string, error: string): Promise<void>;
  /** Hands it back unsent, to come back after delayMs; the attempt it was handed out for is not counted. */
  hold(delayMs: number, why: string): Promise<void>;
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
  /** The circuit breaker and the rate limit in front of the receiver. */
  readonly guard: ReceiverGuard;
  /** A flush waiting for the rate limit's tokens. */
  private later?: NodeJS.Timeout;
  private closing = false;

  constructor(
    readonly destination: Destination,
    private readonly options: DeliverySettings,
    private readonly metrics: DestinationMetrics,
    logger: Logger,
    protection: ProtectionSettings = {},
  ) {
    this.logs = new LogLimiter(logger);
    this.guard = new ReceiverGuard(destination.name, protection, metrics, logger);
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

  /**
   * Resolves when every submitted event is settled (shutdown): events still waiting for the rate
   * limit or a probe's answer are handed back to the queue unsent.
   */
  async idle(): Promise<void> {
    this.flush();
    while (this.running.size > 0) {
      await Promise.allSettled([...this.running]);
      this.flush();
    }
    if (this.batch.length === 0) return;
    this.closing = true;
    clearTimeout(this.later);
    this.flush();
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /** Milliseconds the circuit stays open: a queue hands out nothing meanwhile (0: it may). */
  holdMs(): number {
    return this.guard.holdMs();
  }

  private flush(): void {
    this.scheduled = false;
    while (this.batch.length > 0 && this.sending < this.options.maxInFlight) {
      const size = Math.min(this.destination.maxBatch, this.options.maxInFlight - this.sending, this.batch.length);
      const gate = this.closing ? ({ kind: 'hold', ms: 0 } as const) : this.guard.admit(size);
      if (gate.kind === 'wait') {
        // Beyond the rate limit, or a probe is out: the events wait here, and the queue with them.
        if (gate.ms !== undefined && this.later === undefined)
          this.later = setTimeout(() => {
            this.later = undefined;
            this.flush();
          }, gate.ms);
        return;
      }
      const batch = this.batch.splice(0, gate.kind === 'hold' ? this.batch.length : size);
      this.sending += batch.length;
      const work =
        gate.kind === 'hold'
          ? this.hold(batch, gate.ms, this.closing ? 'shutdown' : 'circuit_open')
          : this.deliver(batch, gate.probe);
      const run = work.finally(() => {
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

  /** Hands events back to the queue unsent (the circuit is open, or shutting down). */
  private async hold(batch: Delivery[], ms: number, why: 'circuit_open' | 'shutdown'): Promise<void> {
    this.metrics.held.inc({ destination: this.destination.name, reason: why }, batch.length);
    await this.settle(batch, (d) => d.hold(ms, why === 'circuit_open' ? 'the circuit is open' : 'shutting down'));
  }

  private async deliver(batch: Delivery[], probe: boolean): Promise<void> {
    const name = this.destination.name;
    let outcome: Outcome;
    const startedAtMs = Date.now();
    try {
      outcome = await this.destination.send(batch);
    } catch (err) {
      outcome = { kind: 'retry', reason: 'internal', error: (err as Error).message };
    }
    this.guard.answered(outcome, probe);
    recordAttempts(name, batch, outcome, startedAtMs, (i) => this.attemptOutcome(outcome, batch[i] as Delivery));
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
    // The circuit is open (this failure opened it, or a failed probe): the events wait out the
    // cool-off in the queue and are not dead-lettered meanwhile. A failed probe's events wait one
    // cool-off more than the others, so the next probe is other events: one event the receiver
    // always fails on (while it takes the rest) does not keep the circuit open for everyone.
    const holdMs = this.guard.holdMs();
    if (holdMs > 0) {
      await this.hold(batch, probe ? holdMs + this.guard.openForMs : holdMs, 'circuit_open');
      return;
    }
    await this.settle(batch, (d) => {
      if (d.attempt >= this.options.maxAttempts) {
        this.metrics.deadLettered.inc({ destination: name, reason: 'attempts_exhausted' });
        return d.deadLetter('attempts_exhausted', `${d.attempt} attempts, the last: ${outcome.error}`);
      }
      return d.retry(retryDelayMs(d.attempt, this.options, outcome.retryAfterMs), outcome.error);
    });
  }

  /** What the settling below does with one event after this outcome, for the event inspector. */
  private attemptOutcome(outcome: Outcome, d: Delivery): AttemptOutcome {
    if (outcome.kind === 'accepted') return 'delivered';
    if (outcome.kind === 'reject') return 'dead-letter';
    return this.guard.holdMs() === 0 && d.attempt >= this.options.maxAttempts ? 'dead-letter' : 'retry';
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
