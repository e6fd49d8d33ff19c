/**
 * What one destination's deliveries came to on this replica, for its status (api/delivery-status.ts):
 * events delivered, failed and dead-lettered per minute over the last hour, and the receiver's
 * last answer of each kind (its status code and a bounded, inert excerpt of what it said).
 *
 * Called by the dispatcher once per answered request (not per event): a success is a few number
 * writes (no allocation, and the clock is read by a timer, not per request: delivery with
 * batchSize 1 calls this for every event); a failure also keeps one short string, made inert here
 * (common/sender-text.ts): it ends up in `kubectl describe`, the console and the CLI.
 */
import { MAX_EXCERPT, toDeliveryMinutes, type ReportedDelivery } from '../../../api/delivery-status.js';
import type { DeliveryAnswer } from '../../../api/v1alpha1/types.js';
import { coarseNow } from '../../../common/coarse-clock.js';
import { inertText } from '../../../common/sender-text.js';
import { MINUTES, MinuteRing, minuteOf } from '../../activity/minute-ring.js';
import type { Outcome } from '../../outbound/outcome.js';

interface Answer {
  atMs: number;
  statusCode?: number;
  excerpt?: string;
}

export type RecordedDelivery = Pick<
  ReportedDelivery,
  'lastSuccess' | 'lastFailure' | 'deliveredLastHour' | 'failedLastHour' | 'deadLetteredLastHour' | 'minutes'
>;

export class DeliveryRecord {
  private readonly deliveredRing = new MinuteRing();
  private readonly failedRing = new MinuteRing();
  private readonly deadLetteredRing = new MinuteRing();
  /** The last success as two numbers (-1: never; 0: no status, e.g. an Alertmanager batch with nothing to send). */
  private lastSuccessAtMs = -1;
  private lastSuccessStatus = 0;
  private lastFailure?: Answer;

  constructor(private readonly now: () => number = coarseNow) {}

  /** `events` accepted by the receiver in one request. */
  delivered(events: number, outcome: Outcome): void {
    const atMs = this.now();
    this.deliveredRing.add(minuteOf(atMs), events);
    this.lastSuccessAtMs = atMs;
    this.lastSuccessStatus = outcome.status ?? 0;
  }

  /** A request of `events` events that failed (retried later, held, or dead-lettered: deadLettered says). */
  failed(events: number, outcome: Outcome): void {
    const atMs = this.now();
    this.failedRing.add(minuteOf(atMs), events);
    const error = outcome.kind === 'accepted' ? '' : outcome.error;
    this.lastFailure = {
      atMs,
      ...(outcome.status !== undefined ? { statusCode: outcome.status } : {}),
      ...(error ? { excerpt: inertText(error, MAX_EXCERPT) } : {}),
    };
  }

  /** `events` given up on and kept as dead letters. */
  deadLettered(events: number): void {
    this.deadLetteredRing.add(minuteOf(this.now()), events);
  }

  /** Whether anything was ever recorded (a quiet destination's report stays small). */
  get active(): boolean {
    return this.lastSuccessAtMs >= 0 || this.lastFailure !== undefined;
  }

  snapshot(nowMs = this.now()): RecordedDelivery {
    const minute = minuteOf(nowMs);
    const delivered: number[] = new Array<number>(MINUTES).fill(0);
    const failed: number[] = new Array<number>(MINUTES).fill(0);
    this.deliveredRing.addInto(delivered, minute);
    this.failedRing.addInto(failed, minute);
    const minutes = toDeliveryMinutes(minute - MINUTES + 1, delivered, failed);
    return {
      deliveredLastHour: this.deliveredRing.sum(minute),
      failedLastHour: this.failedRing.sum(minute),
      deadLetteredLastHour: this.deadLetteredRing.sum(minute),
      ...(minutes ? { minutes } : {}),
      ...(this.lastSuccessAtMs >= 0
        ? {
            lastSuccess: answer({
              atMs: this.lastSuccessAtMs,
              ...(this.lastSuccessStatus > 0 ? { statusCode: this.lastSuccessStatus } : {}),
            }),
          }
        : {}),
      ...(this.lastFailure ? { lastFailure: answer(this.lastFailure) } : {}),
    };
  }
}

const answer = (a: Answer): DeliveryAnswer => ({
  time: new Date(a.atMs).toISOString(),
  ...(a.statusCode !== undefined ? { statusCode: a.statusCode } : {}),
  ...(a.excerpt !== undefined ? { excerpt: a.excerpt } : {}),
});

/** Every destination's record, by the ingesters' name; a removed team destination's goes with it. */
export class DeliveryRecords {
  private readonly records = new Map<string, DeliveryRecord>();

  constructor(private readonly now: () => number = coarseNow) {}

  /** The destination's record (kept when a team destination is replaced by a new version). */
  of(name: string): DeliveryRecord {
    let r = this.records.get(name);
    if (!r) this.records.set(name, (r = new DeliveryRecord(this.now)));
    return r;
  }

  get(name: string): DeliveryRecord | undefined {
    return this.records.get(name);
  }

  remove(name: string): void {
    this.records.delete(name);
  }
}
