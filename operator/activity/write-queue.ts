/**
 * Status writes, at most `perSecond` a second across every resource, evenly spaced (a token
 * bucket that holds one token: no burst, so no second ever sees more than the cap plus one):
 * 1,000 busy integrations must not flood the API server. One write at a time;
 * a resource waiting for its turn holds only its latest value (a newer merge replaces it in
 * place), so the queue is never longer than the number of resources.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export class WriteQueue<T> {
  private readonly pending = new Map<string, T>();
  private tokens: number;
  private lastMs: number;
  private wake?: () => void;
  private stopped = false;
  private readonly idle = new AbortController();

  constructor(
    private readonly perSecond: number,
    private readonly write: (key: string, value: T) => Promise<void>,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = 1;
    this.lastMs = now();
  }

  get size(): number {
    return this.pending.size;
  }

  /** Queues (or replaces) the value to write for `key`. */
  set(key: string, value: T): void {
    this.pending.set(key, value);
    this.wake?.();
  }

  delete(key: string): void {
    this.pending.delete(key);
  }

  has(key: string): boolean {
    return this.pending.has(key);
  }

  /** Writes until stop(); a failed write is not retried here (the next merge queues it again). */
  async run(): Promise<void> {
    while (!this.stopped) {
      if (this.pending.size === 0) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      const waitMs = this.untilToken();
      if (waitMs > 0) {
        await sleep(waitMs, undefined, { signal: this.idle.signal }).catch(() => {});
        continue;
      }
      this.tokens -= 1;
      const [key, value] = this.pending.entries().next().value as [string, T];
      this.pending.delete(key);
      await this.write(key, value).catch(() => {});
    }
  }

  stop(): void {
    this.stopped = true;
    this.idle.abort();
    this.wake?.();
  }

  private untilToken(): number {
    const nowMs = this.now();
    this.tokens = Math.min(1, this.tokens + ((nowMs - this.lastMs) * this.perSecond) / 1000);
    this.lastMs = nowMs;
    return this.tokens >= 1 ? 0 : ((1 - this.tokens) * 1000) / this.perSecond;
  }
}
