/**
 * Between a durable queue and a destination: takes the events the queue hands out, sends them in
 * batches (what arrives within one turn of the event loop, up to the destination's batch size; while
 * the receiver has plenty being sent, a part of a batch waits to be filled: waitsToFill),
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
 *
 * Tenants apart (protection/namespace-lanes.ts): a request holds one namespace's events, the
 * namespaces' events are sent in turn, each namespace has its own circuit, and while several send
 * to the destination none may hold more than its share of maxInFlight: what a namespace submits
 * past it is held at once (back to the queue for SHARE_HOLD_MS), so that the queue goes on handing
 * out the other namespaces' events instead of waiting behind a receiver that hangs on one's. A
 * namespace that arrives while another (alone until then) holds everything gets its share on top
 * of the bounds (NamespaceLanes.borrowedEvents), so it never waits for the other's receiver.
 */
import type { Logger } from 'pino';
import type { Counter, Histogram } from 'prom-client';
import { LogLimiter } from '../core/log-limiter.js';
import { receivedAtMs, retryDelayMs, type Destination, type QueuedEvent } from './destination.js';
import { recordAttempts, type AttemptOutcome } from './delivery-attempts.js';
import type { Outcome } from '../outbound/outcome.js';
import type { DestinationMetrics } from './metrics.js';
import type { DestinationPause } from './protection/pause.js';
import { ReceiverGuard, type GuardAnswer } from './protection/receiver-guard.js';
import { NamespaceLanes, type Lane } from './protection/namespace-lanes.js';
import type { ProtectionSettings } from './protection/settings.js';
import type { DeliverySettings } from './settings.js';
import { traceDelivery } from '../tracing/tracing.js';
import type { DeliveryRecord } from './status/delivery-record.js';

/** One event handed out by a queue, and how to settle it there. */
export interface Delivery extends QueuedEvent {
  /** Whose event it is (the queue knows it without parsing: the bus subject, the outbox row); absent: ''. */
  readonly namespace?: string;
  /** 1 for the first delivery, counted by the queue (it survives restarts). */
  attempt: number;
  ack(): Promise<void>;
  retry(delayMs: number, error: string): Promise<void>;
  deadLetter(reason: string, error: string): Promise<void>;
  /** Hands it back unsent, to come back after delayMs; the attempt it was handed out for is not counted. */
  hold(delayMs: number, why: string): Promise<void>;
}

/** How long events a namespace submits past its share go back to the queue for. */
export const SHARE_HOLD_MS = 1000;

export class Dispatcher {
  /** Submitted events waiting to be sent, by namespace. */
  private readonly lanes: NamespaceLanes<Delivery>;
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
    /** Pause and resume (protection/pause.ts); while paused every event is held. */
    pause?: DestinationPause,
    /** What the deliveries came to, for the destination's status (status/delivery-record.ts). */
    private readonly record?: DeliveryRecord,
  ) {
    this.logs = new LogLimiter(logger);
    this.guard = new ReceiverGuard(destination.name, protection, metrics, logger, Date.now, pause);
    this.lanes = new NamespaceLanes(options.maxInFlight, Date.now, options.maxInFlightBytes);
    this.delivered = metrics.delivered.labels({ destination: destination.name });
    this.latency = metrics.latency.labels({ destination: destination.name });
  }

  /**
   * How many more events may be submitted now (none while their bytes are at maxInFlightBytes).
   * Of `namespace`: also what the other namespaces hold past their shares, which it may use on top
   * (NamespaceLanes.borrowedEvents).
   */
  free(namespace?: string): number {
    if (namespace === undefined) return this.freeWith(0, 0);
    return this.freeWith(this.lanes.borrowedEvents(namespace), this.lanes.borrowedBytes(namespace));
  }

  /** How many more bytes of events may be submitted now. */
  freeBytes(): number {
    return Math.max(0, this.options.maxInFlightBytes - this.inFlightBytes);
  }

  /**
   * The most some namespace may submit now: with what every namespace holds past its share (a
   * queue that hands out several namespaces' events asks each one's free(namespace) too).
   */
  mostFree(): number {
    return this.freeWith(this.lanes.borrowedEvents(), this.lanes.borrowedBytes());
  }

  /** The most bytes some namespace may submit now, as mostFree() counts. */
  mostFreeBytes(): number {
    return Math.max(0, this.options.maxInFlightBytes + this.lanes.borrowedBytes() - this.inFlightBytes);
  }

  private freeWith(borrowedEvents: number, borrowedBytes: number): number {
    if (this.inFlightBytes >= this.options.maxInFlightBytes + borrowedBytes) return 0;
    return Math.max(0, this.options.maxInFlight + borrowedEvents - this.inFlight);
  }

  /**
   * Resolves once `events` (of `namespace`, as free() counts) may be submitted (a message's events
   * go together): when that many are free, or for more than maxInFlight, when nothing is in flight.
   * Bytes are checked before, not after: the events of one message (at most the bus's max_payload
   * or an outbox row) may pass maxInFlightBytes, and nothing more is taken until they are settled.
   */
  async waitForRoom(events = 1, namespace?: string): Promise<void> {
    while (!this.hasRoom(events, namespace)) await this.untilSettled();
  }

  /** Whether `events` (of `namespace`) may be submitted now, as waitForRoom() waits for. */
  hasRoom(events: number, namespace?: string): boolean {
    return this.free(namespace) >= Math.min(Math.max(1, events), this.options.maxInFlight);
  }

  /** The namespaces that may submit nothing now (free(namespace) is 0): a queue need not read their events. */
  namespacesWithoutRoom(): string[] {
    const full: string[] = [];
    for (const namespace of this.lanes.holding()) if (this.free(namespace) < 1) full.push(namespace);
    return full;
  }

  /** Resolves once some namespace may submit an event (mostFree()). */
  async waitForAnyRoom(): Promise<void> {
    while (this.mostFree() < 1) await this.untilSettled();
  }

  /** How many more of a namespace's events may be submitted before it holds its share (protection/namespace-lanes.ts). */
  roomOf(namespace: string): number {
    return this.lanes.roomOf(namespace);
  }

  /** Resolves when the next submitted event is settled (a namespace at its share may have room again). */
  untilSettled(): Promise<void> {
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  submit(d: Delivery): void {
    this.inFlight++;
    this.inFlightBytes += d.json.length;
    const lane = this.lanes.lane(d.namespace ?? '');
    if (this.lanes.overShare(lane)) {
      // Past its share while other namespaces send here: back to the queue, which hands out theirs.
      this.track(this.hold([d], SHARE_HOLD_MS, 'namespace_share'), [d]);
      return;
    }
    this.lanes.add(lane, d, d.json.length);
    if (lane.pending.length >= this.destination.maxBatch) this.flush();
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
    if (this.lanes.pendingCount === 0) return;
    this.closing = true;
    clearTimeout(this.later);
    this.flush();
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /** Milliseconds the circuit stays open or the pause's recheck: a queue hands out nothing meanwhile (0: it may). */
  holdMs(): number {
    return this.guard.holdMs();
  }

  /**
   * Sends what waits, namespace by namespace in turn, each request one namespace's events, while
   * there are sending slots: a namespace at its share, or waiting for its circuit's probe, waits
   * its next turn; the rate limit (the destination's) stops the round.
   */
  private flush(): void {
    this.scheduled = false;
    const maxInFlight = this.options.maxInFlight;
    while (this.lanes.pendingCount > 0) {
      let sent = false;
      for (const lane of this.lanes.waiting()) {
        if (this.sending >= maxInFlight + this.lanes.sendingOverShares) return;
        // What the others are sending past their shares (sent while alone) is this lane's to use too.
        const bound = maxInFlight + this.lanes.sendingBorrowedByOthers(lane);
        if (this.sending >= bound) continue;
        const room = Math.min(bound - this.sending, this.lanes.limitOf(lane) - lane.sending);
        if (room <= 0 && !this.closing) continue;
        const size = Math.min(this.destination.maxBatch, Math.max(1, room), lane.pending.length);
        if (this.waitsToFill(size, lane)) continue;
        const gate: GuardAnswer = this.closing ? { kind: 'hold', ms: 0 } : this.guard.admit(size, lane.namespace);
        if (gate.kind === 'wait') {
          // Beyond the rate limit (every namespace waits: the round ends), or this namespace's probe is out.
          if (gate.ms === undefined) continue;
          if (this.later === undefined)
            this.later = setTimeout(() => {
              this.later = undefined;
              this.flush();
            }, gate.ms);
          return;
        }
        const batch = this.lanes.take(lane, gate.kind === 'hold' ? lane.pending.length : size);
        sent = true;
        if (gate.kind === 'hold') {
          const why = this.closing ? 'shutdown' : gate.paused ? 'paused' : 'circuit_open';
          this.track(this.hold(batch, gate.ms, why), batch, lane);
          continue;
        }
        this.sending += batch.length;
        this.lanes.sendingChanged(lane, batch.length);
        this.track(
          this.deliver(batch, gate.probe, lane.namespace).finally(() => {
            this.sending -= batch.length;
            this.lanes.sendingChanged(lane, -batch.length);
          }),
          batch,
          lane,
        );
      }
      if (!sent) return;
    }
  }

  /**
   * Whether a batch of `size` events, fewer than the destination's batch size (all its namespace
   * has waiting, or all the room there is), waits for more instead of going now: while half of
   * maxInFlight, and at least two full batches, are being sent, the receiver has work queued, and
   * the batch fills as answers free room; the namespace's own next answer flushes again (so it
   * waits only while some of its events are being sent). Sent at once, a backlog's batches shrank
   * to the room each answer freed (Alertmanager: 104-158 alerts a post on average, not 256): more
   * posts for the same alerts, and less work queued at the receiver while the ingester's loop is busy.
   */
  private waitsToFill(size: number, lane: Lane<Delivery>): boolean {
    const maxBatch = this.destination.maxBatch;
    if (size >= maxBatch || this.closing || lane.sending === 0) return false;
    return this.sending >= Math.max(2 * maxBatch, this.options.maxInFlight / 2);
  }

  /** Counts `work` (sending or handing back `batch`) as running; once done its events are settled. */
  private track(work: Promise<void>, batch: readonly Delivery[], lane?: Lane<Delivery>): void {
    const run = work.finally(() => {
      this.running.delete(run);
      this.inFlight -= batch.length;
      let bytes = 0;
      for (const d of batch) bytes += d.json.length;
      this.inFlightBytes -= bytes;
      if (lane) this.lanes.settled(lane, batch.length, bytes);
      if (this.lanes.pendingCount > 0) this.flush();
      for (const w of this.waiters.splice(0)) w();
    });
    this.running.add(run);
  }

  /** Hands events back to the queue unsent (the circuit is open, the destination paused, its namespace at its share, or shutting down). */
  private async hold(batch: Delivery[], ms: number, why: keyof typeof HOLD_REASONS): Promise<void> {
    this.metrics.held.inc({ destination: this.destination.name, reason: why }, batch.length);
    await this.settle(batch, (d) => d.hold(ms, HOLD_REASONS[why]));
  }

  private async deliver(batch: Delivery[], probe: boolean, namespace: string): Promise<void> {
    const name = this.destination.name;
    let outcome: Outcome;
    // Tracing (tracing/tracing.ts): a span per attempt, its traceparent sent with the request.
    const trace = traceDelivery(this.destination, batch);
    const startedAtMs = Date.now();
    try {
      outcome = await this.destination.send(batch, trace?.carrier);
    } catch (err) {
      outcome = { kind: 'retry', reason: 'internal', error: (err as Error).message };
    }
    trace?.end(outcome);
    this.guard.answered(outcome, probe, namespace);
    recordAttempts(name, batch, outcome, startedAtMs, (i) => this.attemptOutcome(outcome, batch[i] as Delivery));
    if (outcome.kind === 'accepted') {
      const now = Date.now();
      this.delivered.inc(batch.length);
      this.record?.delivered(batch.length, outcome);
      for (const d of batch) this.latency.observe(Math.max(0, now - receivedAtMs(d)) / 1000);
      await this.settle(batch, (d) => d.ack());
      return;
    }
    this.record?.failed(batch.length, outcome);
    if (outcome.kind === 'reject') {
      this.metrics.deadLettered.inc({ destination: name, reason: outcome.reason }, batch.length);
      this.record?.deadLettered(batch.length);
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
    // This failure may have auto-paused it: then the events are held like any paused one's.
    if (this.guard.pause?.paused) {
      await this.hold(batch, this.guard.holdMs(), 'paused');
      return;
    }
    const holdMs = this.guard.holdMsOf(namespace);
    if (holdMs > 0) {
      await this.hold(batch, probe ? holdMs + this.guard.openForMs : holdMs, 'circuit_open');
      return;
    }
    await this.settle(batch, (d) => {
      if (d.attempt >= this.options.maxAttempts) {
        this.metrics.deadLettered.inc({ destination: name, reason: 'attempts_exhausted' });
        this.record?.deadLettered(1);
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

const HOLD_REASONS = {
  circuit_open: 'the circuit is open',
  paused: 'the destination is paused',
  shutdown: 'shutting down',
  namespace_share: "the namespace holds its share of the destination's in-flight events",
} as const;
