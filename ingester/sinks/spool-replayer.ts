/**
 * Spool replay (not dead-letter replay, dead-letters/dead-letter-replay.ts): hands spooled events to the bus, oldest first, with the same msg ids they were spooled with (so
 * an event the bus took before its request timed out is stored once), and deletes them only after
 * their PubAck. While the bus is down or refuses, it backs off exponentially with jitter.
 */
import type { Logger } from 'pino';
import type { HandoffMetrics } from './handoff-metrics.js';
import type { Spool, SpooledRow } from './spool.js';

export interface SpoolReplayOptions {
  batch: number;
  backoffMinMs: number;
  backoffMaxMs: number;
}

export interface SpoolReplayTarget {
  /** Connected and the stream verified. */
  isUp(): boolean;
  /** One flag per row: true on PubAck; never rejects. */
  publish(rows: SpooledRow[]): Promise<boolean[]>;
}

/** How long an idle replayer sleeps when nothing wakes it (a safety net, not the signal). */
const IDLE_POLL_MS = 1000;

export class SpoolReplayer {
  private stopped = false;
  private backoffMs: number;
  private wakeUp?: () => void;
  private loop?: Promise<void>;
  private undeleted: SpooledRow[] = [];

  constructor(
    private readonly spool: Spool,
    private readonly target: SpoolReplayTarget,
    private readonly options: SpoolReplayOptions,
    private readonly metrics: HandoffMetrics,
    private readonly logger: Logger,
  ) {
    this.backoffMs = options.backoffMinMs;
    spool.onAppend(() => this.wake());
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Something changed (events spooled, bus back): look now instead of after the sleep. */
  wake(): void {
    this.wakeUp?.();
  }

  /** Waits until the spool is empty or the deadline passed; true when empty. */
  async drain(deadlineMs: number): Promise<boolean> {
    while (this.spool.depth > 0 && Date.now() < deadlineMs) {
      this.wake();
      await sleep(Math.min(50, Math.max(0, deadlineMs - Date.now())));
    }
    return this.spool.depth === 0;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (!this.target.isUp() || this.spool.depth === 0) {
        await this.pause(this.spool.depth === 0 ? IDLE_POLL_MS : this.backoffMs);
        continue;
      }
      let complete = false;
      try {
        complete = await this.round();
      } catch (err) {
        this.logger.error({ err: { message: (err as Error).message } }, 'spool replay failed; backing off');
      }
      if (complete) {
        this.backoffMs = this.options.backoffMinMs;
        continue;
      }
      await this.pause(jitter(this.backoffMs));
      this.backoffMs = Math.min(this.options.backoffMaxMs, this.backoffMs * 2);
    }
  }

  /** One batch; true when the bus acknowledged all of it. */
  private async round(): Promise<boolean> {
    // Rows the bus acknowledged but that could not be deleted (a full disk): delete them first and
    // publish nothing until that worked, rather than send the same batch again every backoff.
    if (this.undeleted.length > 0) {
      this.spool.remove(this.undeleted);
      this.undeleted = [];
    }
    const rows = this.spool.peek(this.options.batch);
    const acked = await this.target.publish(rows);
    const done = rows.filter((_, i) => acked[i]);
    this.metrics.replayed.inc(done.reduce((events, r) => events + r.events, 0));
    try {
      this.spool.remove(done);
    } catch (err) {
      this.undeleted = done;
      throw err;
    }
    if (done.length < rows.length)
      this.logger.warn(
        { replayedMessages: done.length, failedMessages: rows.length - done.length, depth: this.spool.depth },
        'spool replay incomplete; backing off',
      );
    return done.length === rows.length;
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = done;
    });
  }
}

/** Full jitter between half and the whole delay: replicas coming back do not stampede the bus. */
const jitter = (ms: number): number => ms / 2 + Math.random() * (ms / 2);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
