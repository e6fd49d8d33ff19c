/**
 * A token bucket refilled lazily from a monotonic clock: no timers, a few arithmetic operations
 * per request. (rate-limiter-flexible counts fixed windows and answers through promises; a
 * request path that allocates a promise per check cost more than the whole check here.)
 *
 * A batch larger than the bucket is admitted when the bucket is full and leaves it in debt, so a
 * well-formed batch is never refused forever while the average rate still holds.
 */
export class TokenBucket {
  private tokens: number;
  private lastMs: number;
  private perMs: number;
  private capacity: number;

  constructor(perSecond: number, burst: number, nowMs: number) {
    this.perMs = perSecond / 1000;
    this.capacity = burst;
    this.tokens = burst;
    this.lastMs = nowMs;
  }

  /** New rate and size (a quota change, or a different number of replicas); the tokens held are kept, up to the new size. */
  configure(perSecond: number, burst: number, nowMs: number): void {
    this.refill(nowMs);
    this.perMs = perSecond / 1000;
    this.capacity = burst;
    if (this.tokens > burst) this.tokens = burst;
  }

  get perSecond(): number {
    return this.perMs * 1000;
  }

  get burst(): number {
    return this.capacity;
  }

  /** Milliseconds until `cost` tokens can be taken (0: now). A cost above the size needs a full bucket. */
  waitMs(cost: number, nowMs: number): number {
    this.refill(nowMs);
    const needed = cost < this.capacity ? cost : this.capacity;
    return this.tokens >= needed ? 0 : (needed - this.tokens) / this.perMs;
  }

  /** Takes tokens; call after waitMs answered 0 (or to charge a cost measured afterwards, which may leave a debt). */
  take(cost: number): void {
    this.tokens -= cost;
  }

  /**
   * Settles a reservation: `reserved` tokens were taken before the work, `used` is what it really
   * cost. The difference is given back (at most up to the bucket's size: what refilled while the
   * reservation was held is not counted twice) or, if the work cost more, taken (a debt).
   */
  settle(reserved: number, used: number, nowMs: number): void {
    this.refill(nowMs);
    const tokens = this.tokens + reserved - used;
    this.tokens = used <= reserved ? Math.min(this.capacity, tokens) : tokens;
  }

  /** Returns tokens taken for work that was then refused, at most up to the bucket's size. */
  giveBack(cost: number, nowMs: number): void {
    this.settle(cost, 0, nowMs);
  }

  /** Milliseconds until the bucket holds a positive balance again (0: it does). */
  debtMs(nowMs: number): number {
    this.refill(nowMs);
    return this.tokens > 0 ? 0 : (-this.tokens + Number.EPSILON) / this.perMs;
  }

  private refill(nowMs: number): void {
    const elapsed = nowMs - this.lastMs;
    if (elapsed <= 0) return;
    this.lastMs = nowMs;
    const tokens = this.tokens + elapsed * this.perMs;
    this.tokens = tokens > this.capacity ? this.capacity : tokens;
  }
}
