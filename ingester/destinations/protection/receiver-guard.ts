/**
 * What stands between a destination's dispatcher and its receiver: the circuit breaker and the
 * rate limit of one destination (protection/settings.ts). The dispatcher asks before each request
 * and reports each answer; the guard keeps the metrics of the circuit's state. Kind-agnostic: any
 * destination that sends requests and gets Outcomes uses it.
 */
import type { Logger } from 'pino';
import type { Counter, Gauge } from 'prom-client';
import { TokenBucket } from '../../limits/token-bucket.js';
import type { Outcome } from '../../outbound/outcome.js';
import { CIRCUIT_STATE_VALUE, CircuitBreaker, isReceiverFailure, type CircuitState } from './circuit-breaker.js';
import type { DestinationPause } from './pause.js';
import type { ProtectionSettings } from './settings.js';

export interface GuardMetrics {
  circuitState: Gauge<'destination'>;
  circuitTransitions: Counter<'destination' | 'to'>;
}

/** What one request may do now. */
export type GuardAnswer =
  /** Send it; report its outcome with answered(outcome, probe). */
  | { kind: 'send'; probe: boolean }
  /** The circuit is open, or the destination paused: hand the events back to the queue, to come back after `ms`. */
  | { kind: 'hold'; ms: number; paused?: true }
  /** Keep the events and ask again after `ms` (the rate limit), or once the probe is answered (no ms). */
  | { kind: 'wait'; ms?: number };

/**
 * How long a paused destination's events are handed back for: the queue asks again this often
 * (the outbox loop looks once a second; a bus consumer stops pulling until the resume), so a
 * resume takes effect within about this long.
 */
export const PAUSED_HOLD_MS = 1000;

export class ReceiverGuard {
  private readonly breaker?: CircuitBreaker;
  private readonly bucket?: TokenBucket;
  /** The cool-off (0 without a breaker). */
  readonly openForMs: number;

  constructor(
    readonly destination: string,
    settings: ProtectionSettings,
    metrics: GuardMetrics,
    logger: Logger,
    private readonly now: () => number = Date.now,
    /** Pause and resume, auto-pause (none: never paused). */
    readonly pause?: DestinationPause,
  ) {
    const gauge = metrics.circuitState.labels({ destination });
    gauge.set(0);
    this.openForMs = settings.circuitBreaker?.openForMs ?? 0;
    if (settings.circuitBreaker) {
      const openForMs = settings.circuitBreaker.openForMs;
      this.breaker = new CircuitBreaker(settings.circuitBreaker, now, (from, to) => {
        gauge.set(CIRCUIT_STATE_VALUE[to]);
        metrics.circuitTransitions.inc({ destination, to });
        const log = { destination, from, to, ...(to === 'open' ? { openForMs } : {}) };
        if (to === 'open') {
          logger.warn(log, 'circuit opened: events wait in the queue, a probe is sent after the cool-off');
          // The state turns half-open when next read: read it then, so the gauge says so even
          // while nothing is waiting to be sent.
          setTimeout(() => this.breaker?.state, openForMs).unref();
        } else logger.info(log, `circuit ${to}`);
      });
    }
    if (settings.rateLimit)
      this.bucket = new TokenBucket(settings.rateLimit.eventsPerSecond, settings.rateLimit.burst, now());
  }

  get state(): CircuitState {
    return this.breaker?.state ?? 'closed';
  }

  /** Milliseconds the circuit stays open, or the pause's recheck (0: events may be handed out). */
  holdMs(): number {
    if (this.pause?.paused) return PAUSED_HOLD_MS;
    return this.breaker?.holdMs() ?? 0;
  }

  /** Asks to send a request of `events` events. */
  admit(events: number): GuardAnswer {
    if (this.pause?.paused) return { kind: 'hold', ms: PAUSED_HOLD_MS, paused: true };
    const state = this.state;
    if (state === 'open') return { kind: 'hold', ms: this.holdMs() };
    if (this.bucket) {
      const ms = this.bucket.waitMs(events, this.now());
      if (ms > 0) return { kind: 'wait', ms: Math.ceil(ms) };
    }
    const gate = this.breaker?.admit() ?? { kind: 'send', probe: false };
    if (gate.kind === 'hold') return gate;
    if (gate.kind === 'wait-for-probe') return { kind: 'wait' };
    this.bucket?.take(events);
    return gate;
  }

  /** The answer to a request admit() let through. */
  answered(outcome: Outcome, probe: boolean): void {
    const b = this.breaker;
    if (outcome.kind !== 'retry') {
      b?.success(probe);
      this.pause?.succeeded();
    } else if (isReceiverFailure(outcome.reason)) {
      b?.failure(probe);
      this.pause?.failed(outcome.reason, outcome.error);
    } else b?.neutral(probe);
  }
}
