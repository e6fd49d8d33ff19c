/**
 * A keyed work queue after client-go's workqueue: a key is queued at most once, is never handled
 * by two workers at once (a key added while in flight is run again afterwards), backs off per key
 * on error (reset by forget on success) and can be requeued after a delay.
 */

export interface WorkQueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export type ReconcileResult = { requeueAfterMs?: number } | void;

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly dirtyWhileProcessing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly waiters: Array<() => void> = [];
  private stopped = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(options: WorkQueueOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 50;
    this.maxDelayMs = options.maxDelayMs ?? 60_000;
    if (this.baseDelayMs <= 0 || this.maxDelayMs < this.baseDelayMs)
      throw new RangeError('WorkQueue: need 0 < baseDelayMs <= maxDelayMs');
  }

  get length(): number {
    return this.queue.length;
  }

  add(key: string): void {
    if (this.stopped) return;
    if (this.processing.has(key)) {
      this.dirtyWhileProcessing.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.queue.push(key);
    this.waiters.shift()?.();
  }

  /** Adds the key after a delay; an earlier pending delay for the key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.stopped) return;
    if (delayMs <= 0) return this.add(key);
    if (this.timers.has(key)) return;
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.timers.set(key, timer);
  }

  /** Exponential backoff with jitter, per key. */
  addRateLimited(key: string): number {
    const n = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, n);
    const delay = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (n - 1)) * (0.8 + Math.random() * 0.4);
    this.addAfter(key, delay);
    return delay;
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Runs `workers` loops until shutdown; errors back the key off, results may requeue it. */
  run(
    workers: number,
    handler: (key: string) => Promise<ReconcileResult>,
    onError: (key: string, err: unknown) => void,
  ): Promise<void> {
    const loop = async (): Promise<void> => {
      for (;;) {
        const key = await this.next();
        if (key === undefined) return;
        try {
          const result = await handler(key);
          this.forget(key);
          if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
        } catch (err) {
          onError(key, err);
          this.addRateLimited(key);
        } finally {
          this.done(key);
        }
      }
    };
    return Promise.all(Array.from({ length: workers }, loop)).then(() => undefined);
  }

  private async next(): Promise<string | undefined> {
    while (!this.stopped && this.queue.length === 0) await new Promise<void>((resolve) => this.waiters.push(resolve));
    if (this.stopped) return undefined;
    const key = this.queue.shift() as string;
    this.queued.delete(key);
    this.processing.add(key);
    return key;
  }

  private done(key: string): void {
    this.processing.delete(key);
    if (this.dirtyWhileProcessing.delete(key)) this.add(key);
  }

  shutdown(): void {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const wake of this.waiters.splice(0)) wake();
  }
}
