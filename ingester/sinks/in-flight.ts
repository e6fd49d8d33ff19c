/**
 * Back-pressure for the bus: at most `max` events are being published at once. A request that
 * finds no room waits (first come, first served) for at most its wait time, then gets nothing and
 * goes to the spool or is answered 503. Plain JetStream publishes have no flow control of their
 * own, so this cap is what keeps memory bounded when the bus slows down.
 */
interface Waiter {
  slots: number;
  resolve: (slots: number) => void;
  timer?: NodeJS.Timeout;
}

export class InFlightLimit {
  private used = 0;
  private readonly waiters: Waiter[] = [];

  constructor(readonly max: number) {}

  get inUse(): number {
    return this.used;
  }

  /**
   * Resolves to the number of slots taken (a request larger than the cap takes the whole cap),
   * or 0 when none became free within waitMs. Release exactly what was taken.
   */
  acquire(wanted: number, waitMs: number): Promise<number> {
    const slots = Math.min(wanted, this.max);
    if (this.waiters.length === 0 && this.used + slots <= this.max) {
      this.used += slots;
      return Promise.resolve(slots);
    }
    if (waitMs <= 0) return Promise.resolve(0);
    return new Promise((resolve) => {
      const waiter: Waiter = { slots, resolve };
      waiter.timer = setTimeout(() => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
        resolve(0);
        // A large waiter that gave up may have been blocking smaller ones behind it.
        this.wakeWaiters();
      }, waitMs);
      this.waiters.push(waiter);
    });
  }

  release(slots: number): void {
    this.used -= slots;
    this.wakeWaiters();
  }

  private wakeWaiters(): void {
    while (this.waiters.length > 0) {
      const next = this.waiters[0] as Waiter;
      if (this.used + next.slots > this.max) return;
      this.waiters.shift();
      clearTimeout(next.timer);
      this.used += next.slots;
      next.resolve(next.slots);
    }
  }
}
