/**
 * Bulk replays: the dead letters a filter selects (integration, destination, time range, reason,
 * ...) replayed in the background, with progress that can be read, and cancellable.
 *
 * Bounded: a namespace's bulk replay takes that namespace's slot before it starts, and the
 * platform's (no namespace in its filter) the platform's (bulk-replay-slots.ts): one runs per
 * namespace, a bounded number of namespaces' at once, so one team's slow replay never refuses
 * another team's. Each hands on at most `maxRate` letters a second (its pace when none is given).
 * The last FINISHED_PER_NAMESPACE finished ones of each namespace (and of the platform) stay
 * readable, FINISHED_KEPT in all: a namespace's many quick replays never push another's out.
 *
 * Never all matches in memory: the replay walks the store's index in pages of PAGE letters'
 * metadata, from a cursor (the position of the last letter it took), and reads one letter's body
 * at a time, when it claims it. It covers the letters kept when it began (up to their newest
 * position): a letter that fails again after its replay is kept anew, after that position, and is
 * not replayed a second time by the same bulk replay.
 *
 * Nothing lost: each letter goes through the same claim, hand-on and removal as a single replay
 * (dead-letter-replay.ts), so it is either still a dead letter or handed on. Cancelling stops
 * before the next letter; the letter in hand is finished first. A process that stops half-way
 * leaves its letter as dead-letter-replay.ts describes (settled at the next start standalone,
 * taken over from its claim with the bus); the bulk replay itself is not resumed (start it again:
 * the letters replayed already are gone, so it takes the rest).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { BulkReplaySlots, type BulkReplayLimits } from './bulk-replay-slots.js';
import { baseOf, handOnAndRemove, type DeadLetterReplayers } from './dead-letter-replay.js';
import type { DeadLetterMetrics } from './metrics.js';
import type { DeadLetterQuery, DeadLetterStore } from './model.js';
import type { BulkReplayProgress, BulkReplayState } from '../../api/bulk-replay.js';

export type { BulkReplayProgress, BulkReplayState };

/** The filters of a bulk replay: a query without its paging. */
export type BulkReplayFilter = Omit<DeadLetterQuery, 'limit' | 'afterSeq' | 'maxSeq' | 'seqs'>;

const PAGE = 100;
const FINISHED_PER_NAMESPACE = 5;
const FINISHED_KEPT = 200;
const FAILURES_KEPT = 10;

export interface BulkReplayOptions {
  store: DeadLetterStore;
  replayers: DeadLetterReplayers;
  metrics: DeadLetterMetrics;
  leaseMs: number;
  logger: Logger;
  limits: BulkReplayLimits;
}

class BulkReplay {
  readonly progress: BulkReplayProgress;
  private cancelled = false;
  /** Ends the pause between two paced letters at once when cancelled. */
  private wake: () => void = () => undefined;
  readonly finished: Promise<void>;

  constructor(
    private readonly o: BulkReplayOptions,
    private readonly filter: BulkReplayFilter,
    rate: number,
  ) {
    const { matched, lastSeq } = o.store.census({ ...filter, limit: 1 });
    this.progress = {
      id: randomUUID(),
      state: 'running',
      filter: describeFilter(filter),
      rate,
      startedAt: new Date().toISOString(),
      matched,
      replayed: 0,
      failed: 0,
      skipped: 0,
      remaining: matched,
      failures: [],
    };
    this.finished = this.run(lastSeq, rate).catch((err: Error) => {
      // The store could not be read (the bus went away): the letters not taken stay kept.
      this.finish('failed', err.message);
    });
  }

  cancel(): void {
    this.cancelled = true;
    this.wake();
  }

  private async run(lastSeq: number, rate: number): Promise<void> {
    const p = this.progress;
    const minGapMs = 1000 / rate;
    let cursor = 0;
    let nextAt = Date.now();
    while (!this.cancelled && lastSeq > 0) {
      const page = this.o.store.select({ ...this.filter, afterSeq: cursor, maxSeq: lastSeq, limit: PAGE });
      if (page.length === 0) break;
      for (const meta of page) {
        if (this.cancelled) break;
        if (minGapMs > 0) {
          const wait = nextAt - Date.now();
          if (wait > 0)
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, wait);
              this.wake = () => {
                clearTimeout(timer);
                resolve();
              };
            });
          nextAt = Math.max(nextAt, Date.now() - minGapMs) + minGapMs;
          if (this.cancelled) break;
        }
        cursor = meta.seq;
        const letter = await this.o.store.claim(meta, this.o.leaseMs);
        let result: 'replayed' | 'failed' | 'skipped' = 'skipped';
        if (letter) {
          const r = await handOnAndRemove(this.o.store, letter, baseOf(letter), this.o.replayers);
          result = r.result;
          if (r.result === 'failed') {
            p.failures.push({ id: r.id, message: r.message ?? '' });
            if (p.failures.length > FAILURES_KEPT) p.failures.shift();
          }
        }
        p[result]++;
        p.remaining = Math.max(0, p.matched - p.replayed - p.failed - p.skipped);
        this.o.metrics.replayed.inc({
          kind: meta.kind,
          namespace: meta.namespace,
          integration: meta.integration,
          result,
        });
      }
    }
    if (!this.cancelled) {
      // Matched letters the walk never met left the store meanwhile (dropped, or replayed elsewhere).
      p.skipped += p.remaining;
      p.remaining = 0;
    }
    this.finish(this.cancelled ? 'cancelled' : 'done');
  }

  private finish(state: BulkReplayState, message?: string): void {
    const p = this.progress;
    p.state = state;
    p.finishedAt = new Date().toISOString();
    if (message !== undefined) p.message = message;
    this.o.logger.info(
      {
        bulkReplay: p.id,
        state,
        matched: p.matched,
        replayed: p.replayed,
        failed: p.failed,
        skipped: p.skipped,
        remaining: p.remaining,
      },
      'bulk replay of dead letters ended',
    );
  }
}

const describeFilter = (f: BulkReplayFilter): Record<string, unknown> => ({
  ...(f.kind !== undefined ? { kind: f.kind } : {}),
  ...(f.namespace !== undefined ? { namespace: f.namespace } : {}),
  ...(f.integration !== undefined ? { integration: f.integration } : {}),
  ...(f.destination !== undefined ? { destination: f.destination } : {}),
  ...(f.reason !== undefined ? { reason: f.reason } : {}),
  ...(f.since !== undefined ? { since: new Date(f.since).toISOString() } : {}),
  ...(f.until !== undefined ? { until: new Date(f.until).toISOString() } : {}),
  ...(f.ids !== undefined ? { ids: f.ids.length } : {}),
});

export class BulkReplays {
  private readonly replays: BulkReplay[] = [];
  private readonly slots: BulkReplaySlots<BulkReplayProgress>;

  constructor(private readonly o: BulkReplayOptions) {
    this.slots = new BulkReplaySlots(o.limits);
  }

  /** The most letters a second a bulk replay may be given. */
  get maxRate(): number {
    return this.o.limits.maxRate;
  }

  /**
   * Starts one at `rate` (default maxRate); throws the limit it meets (429, Retry-After) when its
   * namespace's slot, or the platform's, is taken (bulk-replay-slots.ts).
   */
  start(filter: BulkReplayFilter, rate = this.o.limits.maxRate): BulkReplayProgress {
    // Admitted before the store is counted: a refused start costs no store read. Nothing between
    // admit and hold awaits, so no other start comes in between.
    this.slots.admit(filter.namespace);
    const replay = new BulkReplay(this.o, filter, Math.min(rate, this.o.limits.maxRate));
    this.slots.hold(filter.namespace, replay.progress);
    this.replays.push(replay);
    void replay.finished.then(() => {
      this.slots.release(filter.namespace, replay.progress);
      this.forgetOldest();
    });
    this.o.logger.info(
      { bulkReplay: replay.progress.id, filter: replay.progress.filter, matched: replay.progress.matched },
      'bulk replay of dead letters started',
    );
    return replay.progress;
  }

  get(id: string): BulkReplayProgress | undefined {
    return this.replays.find((r) => r.progress.id === id)?.progress;
  }

  /** Newest first. */
  list(): BulkReplayProgress[] {
    return this.replays.map((r) => r.progress).reverse();
  }

  /** Stops the replay before its next letter; resolves once the letter in hand is finished. */
  async cancel(id: string): Promise<BulkReplayProgress | undefined> {
    const replay = this.replays.find((r) => r.progress.id === id);
    if (!replay) return undefined;
    replay.cancel();
    await replay.finished;
    return replay.progress;
  }

  /** At shutdown: the running ones stop after their letter in hand (before the destinations close). */
  async close(): Promise<void> {
    const running = this.replays.filter((r) => r.progress.state === 'running');
    for (const r of running) r.cancel();
    await Promise.all(running.map((r) => r.finished));
  }

  /**
   * Past FINISHED_PER_NAMESPACE finished of one namespace, its oldest goes; past FINISHED_KEPT in
   * all, the oldest of the namespace holding the most (this.replays is oldest first).
   */
  private forgetOldest(): void {
    const finished = new Map<string | undefined, BulkReplay[]>();
    for (const r of this.replays) {
      if (r.progress.state === 'running') continue;
      const namespace = r.progress.filter.namespace as string | undefined;
      const own = finished.get(namespace);
      if (own) own.push(r);
      else finished.set(namespace, [r]);
    }
    const forgotten = new Set<BulkReplay>();
    for (const own of finished.values())
      while (own.length > FINISHED_PER_NAMESPACE) forgotten.add(own.shift() as BulkReplay);
    let kept = [...finished.values()].reduce((n, own) => n + own.length, 0);
    for (; kept > FINISHED_KEPT; kept--) {
      const most = [...finished.values()].reduce((a, b) => (b.length > a.length ? b : a));
      forgotten.add(most.shift() as BulkReplay);
    }
    if (forgotten.size === 0) return;
    for (let i = this.replays.length - 1; i >= 0; i--)
      if (forgotten.has(this.replays[i] as BulkReplay)) this.replays.splice(i, 1);
  }
}
