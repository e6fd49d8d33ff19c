/**
 * What stands between a destination's dispatcher and its receiver: the circuit breakers and the
 * rate limit of one destination (protection/settings.ts). The dispatcher asks before each request
 * and reports each answer; the guard keeps the metrics of the circuit's state. Kind-agnostic: any
 * destination that sends requests and gets Outcomes uses it.
 *
 * One breaker per namespace whose events the destination carries (a request holds one namespace's
 * events: dispatcher.ts): a receiver that fails on one tenant's payloads (a 500 for what it cannot
 * read, a timeout on its large batches) opens that tenant's circuit, and the other tenants'
 * events to the same receiver go on. A receiver that is down for everyone opens every sending
 * namespace's circuit, each after its own failures, each probing on its own. The destination's
 * state (the gauge, holdMs) is open only when every namespace's is; the rate limit protects the
 * receiver and stays the destination's, shared by turns (the dispatcher serves namespaces in turn).
 * A pause (pause.ts) is the destination's: while it lasts every namespace's events are held.
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

/** Namespaces whose breaker is kept at most; past it, closed and idle ones are forgotten. */
const BREAKERS_SWEEP = 1024;

export class ReceiverGuard {
  private readonly breakers = new Map<string, CircuitBreaker>();
  private readonly bucket?: TokenBucket;
  /** The cool-off (0 without a breaker). */
  readonly openForMs: number;
  private readonly gauge: Gauge.Internal<'destination'>;

  constructor(
    readonly destination: string,
    private readonly settings: ProtectionSettings,
    private readonly metrics: GuardMetrics,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
    /** Pause and resume, auto-pause (none: never paused): the destination's as a whole, every namespace's events held. */
    readonly pause?: DestinationPause,
  ) {
    this.gauge = metrics.circuitState.labels({ destination });
    this.gauge.set(0);
    this.openForMs = settings.circuitBreaker?.openForMs ?? 0;
    if (settings.rateLimit)
      this.bucket = new TokenBucket(settings.rateLimit.eventsPerSecond, settings.rateLimit.burst, now());
  }

  /** The destination's state: open (or half-open) only when every namespace's circuit is. */
  get state(): CircuitState {
    let state: CircuitState | undefined;
    for (const b of this.breakers.values()) {
      const s = b.state;
      if (s === 'closed') return 'closed';
      if (state !== 'half-open') state = s;
    }
    return state ?? 'closed';
  }

  /** The state of one namespace's circuit on this destination. */
  stateOf(namespace: string): CircuitState {
    return this.breakers.get(namespace)?.state ?? 'closed';
  }

  /** Milliseconds every namespace's circuit stays open (0: some namespace's events may be handed out). */
  holdMs(): number {
    if (this.pause?.paused) return PAUSED_HOLD_MS;
    if (this.breakers.size === 0) return 0;
    let ms = Infinity;
    for (const b of this.breakers.values()) ms = Math.min(ms, b.holdMs());
    return ms;
  }

  /** Milliseconds this namespace's circuit stays open (0: its events may be sent). */
  holdMsOf(namespace: string): number {
    if (this.pause?.paused) return PAUSED_HOLD_MS;
    return this.breakers.get(namespace)?.holdMs() ?? 0;
  }

  /** Asks to send a request of `events` events of `namespace`. */
  admit(events: number, namespace = ''): GuardAnswer {
    if (this.pause?.paused) return { kind: 'hold', ms: PAUSED_HOLD_MS, paused: true };
    const breaker = this.breakerOf(namespace);
    if (breaker?.state === 'open') return { kind: 'hold', ms: breaker.holdMs() };
    if (this.bucket) {
      const ms = this.bucket.waitMs(events, this.now());
      if (ms > 0) return { kind: 'wait', ms: Math.ceil(ms) };
    }
    const gate = breaker?.admit() ?? { kind: 'send', probe: false };
    if (gate.kind === 'hold') return gate;
    if (gate.kind === 'wait-for-probe') return { kind: 'wait' };
    this.bucket?.take(events);
    return gate;
  }

  /** The answer to a request admit() let through. */
  answered(outcome: Outcome, probe: boolean, namespace = ''): void {
    const b = this.breakers.get(namespace);
    if (outcome.kind !== 'retry') {
      b?.success(probe);
      this.pause?.succeeded();
    } else if (isReceiverFailure(outcome.reason)) {
      b?.failure(probe);
      this.pause?.failed(outcome.reason, outcome.error);
    } else b?.neutral(probe);
  }

  private breakerOf(namespace: string): CircuitBreaker | undefined {
    const settings = this.settings.circuitBreaker;
    if (!settings) return undefined;
    let breaker = this.breakers.get(namespace);
    if (breaker) return breaker;
    if (this.breakers.size >= BREAKERS_SWEEP)
      for (const [ns, b] of this.breakers) if (b.state === 'closed') this.breakers.delete(ns);
    const { destination, metrics, logger } = this;
    const openForMs = settings.openForMs;
    breaker = new CircuitBreaker(settings, this.now, (from, to) => {
      this.gauge.set(CIRCUIT_STATE_VALUE[this.state]);
      metrics.circuitTransitions.inc({ destination, to });
      const log = { destination, namespace, from, to, ...(to === 'open' ? { openForMs } : {}) };
      if (to === 'open') {
        logger.warn(
          log,
          "circuit opened for this namespace's events: they wait in the queue, a probe is sent after the cool-off",
        );
        // The state turns half-open when next read: read it then, so the gauge says so even
        // while nothing is waiting to be sent.
        setTimeout(() => this.gauge.set(CIRCUIT_STATE_VALUE[this.state]), openForMs).unref();
      } else logger.info(log, `circuit ${to}`);
    });
    this.breakers.set(namespace, breaker);
    return breaker;
  }
}
