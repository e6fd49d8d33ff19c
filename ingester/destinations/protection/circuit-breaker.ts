/**
 * A circuit breaker for one destination: after `consecutiveFailures` failed requests in a row, or
 * a failure ratio above `failureRatio` over `window` (once at least `minRequests` were made in it),
 * it opens, and nothing is sent for `openFor`; then it is half-open: one request (the probe) goes,
 * and its answer closes it (success) or opens it again (failure). A receiver that is down then
 * sees one request per cool-off, not every held event's retries.
 *
 * Only failures that say the receiver is in trouble count (5xx, 408, 429, timeouts, connection
 * errors); a 4xx refusal is an answer from a working receiver and counts as a success. The clock
 * is injected, so the state machine is tested without waiting.
 */

export type CircuitState = 'closed' | 'half-open' | 'open';

/** The gauge's value per state: 0 closed, 1 half-open, 2 open. */
export const CIRCUIT_STATE_VALUE: Readonly<Record<CircuitState, number>> = { closed: 0, 'half-open': 1, open: 2 };

export interface CircuitBreakerSettings {
  /** Failed requests in a row that open the circuit (0: never on this count). */
  consecutiveFailures: number;
  /** Failed share of the requests within `windowMs` that opens it (1: never on the ratio). */
  failureRatio: number;
  windowMs: number;
  /** Requests within the window before the ratio is judged (one failure of one is not a ratio). */
  minRequests: number;
  /** How long the circuit stays open before the probe. */
  openForMs: number;
}

/** What a request may do now. */
export type Admission =
  /** Send it (`probe`: it is the half-open probe, whose answer decides). */
  | { kind: 'send'; probe: boolean }
  /** The circuit is open: hold the events this long (until the probe may go). */
  | { kind: 'hold'; ms: number }
  /** Half-open with the probe out: wait for its answer. */
  | { kind: 'wait-for-probe' };

/** The ratio window is cut into this many buckets, each forgotten as a whole. */
const BUCKETS = 10;

export class CircuitBreaker {
  private current: CircuitState = 'closed';
  private openedAt = 0;
  private consecutive = 0;
  private probeOut = false;
  private readonly bucketMs: number;
  private readonly buckets = Array.from({ length: BUCKETS }, () => ({ slot: -1, ok: 0, failed: 0 }));

  constructor(
    private readonly settings: CircuitBreakerSettings,
    private readonly now: () => number = Date.now,
    /** Told of every change of state (metrics, logs). */
    private readonly onTransition: (from: CircuitState, to: CircuitState) => void = () => undefined,
  ) {
    this.bucketMs = Math.max(1, settings.windowMs / BUCKETS);
  }

  /** The state now (an open circuit whose cool-off is over reads half-open). */
  get state(): CircuitState {
    if (this.current === 'open' && this.now() - this.openedAt >= this.settings.openForMs) this.moveTo('half-open');
    return this.current;
  }

  /** Milliseconds until the probe may go (0 unless open). */
  holdMs(): number {
    return this.state === 'open' ? Math.max(1, this.openedAt + this.settings.openForMs - this.now()) : 0;
  }

  /** Asks to send one request; a `send` must be answered with success(), failure() or neutral(). */
  admit(): Admission {
    const state = this.state;
    if (state === 'closed') return { kind: 'send', probe: false };
    if (state === 'open') return { kind: 'hold', ms: this.holdMs() };
    if (this.probeOut) return { kind: 'wait-for-probe' };
    this.probeOut = true;
    return { kind: 'send', probe: true };
  }

  /** The receiver answered (2xx, or a 4xx refusal: it works). */
  success(probe: boolean): void {
    this.consecutive = 0;
    this.count(false);
    if (probe) {
      this.probeOut = false;
      if (this.current === 'half-open') {
        this.resetWindow();
        this.moveTo('closed');
      }
    }
  }

  /** The request failed in a way that says the receiver is in trouble. */
  failure(probe: boolean): void {
    this.consecutive++;
    this.count(true);
    if (probe) this.probeOut = false;
    if (this.current === 'half-open' && probe) return this.open();
    if (this.current !== 'closed') return;
    const s = this.settings;
    if (s.consecutiveFailures > 0 && this.consecutive >= s.consecutiveFailures) return this.open();
    const { ok, failed } = this.totals();
    if (s.failureRatio < 1 && ok + failed >= s.minRequests && failed / (ok + failed) > s.failureRatio) this.open();
  }

  /** The request did not reach a verdict on the receiver (intake's own trouble): a probe may go again. */
  neutral(probe: boolean): void {
    if (probe) this.probeOut = false;
  }

  private open(): void {
    this.openedAt = this.now();
    this.consecutive = 0;
    this.moveTo('open');
  }

  private moveTo(to: CircuitState): void {
    const from = this.current;
    if (from === to) return;
    this.current = to;
    this.onTransition(from, to);
  }

  private count(failed: boolean): void {
    const slot = Math.floor(this.now() / this.bucketMs);
    const b = this.buckets[slot % BUCKETS] as { slot: number; ok: number; failed: number };
    if (b.slot !== slot) {
      b.slot = slot;
      b.ok = 0;
      b.failed = 0;
    }
    if (failed) b.failed++;
    else b.ok++;
  }

  private totals(): { ok: number; failed: number } {
    const oldest = Math.floor(this.now() / this.bucketMs) - BUCKETS + 1;
    let ok = 0;
    let failed = 0;
    for (const b of this.buckets) {
      if (b.slot < oldest) continue;
      ok += b.ok;
      failed += b.failed;
    }
    return { ok, failed };
  }

  private resetWindow(): void {
    for (const b of this.buckets) b.slot = -1;
  }
}

/** Whether a failed request's reason says the receiver is in trouble (counted by the breaker). */
export function isReceiverFailure(reason: string): boolean {
  return reason === 'timeout' || reason === 'network' || reason.startsWith('http_');
}
