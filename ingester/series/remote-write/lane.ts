/**
 * One ordered lane of a tenant: samples collect into a batch, batches are sent one at a time, in
 * order, each retried until the receiver takes or refuses it. A series always uses the same lane,
 * so its samples reach the receiver in time order even with several requests in flight per tenant
 * (one per lane), as Prometheus' own sender does with its shards.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { SendOutcome } from './client.js';
import type { RemoteWriteMetrics } from './metrics.js';
import { encode, v2BodyAsV1, type Labels, type Protocol } from './wire.js';

/** What the writer keeps per series. */
export interface SeriesState {
  readonly labelBytes: Uint8Array;
  readonly labels: Labels;
  /** The latest description and unit given for the series (2.0 sends them as metadata). */
  help: string;
  unit: string;
  readonly lane: Lane;
  /** Newest timestamp accepted for the series (ms); nothing older or equal is sent after it. */
  lastTs: number;
  /** The series' entry in its lane's unsent batch, while there is one. */
  pending: { values: number[]; timestamps: number[] } | undefined;
  lastSeenMs: number;
}

export interface LaneOptions {
  tenant: string;
  batchSize: number;
  flushIntervalMs: number;
  minBackoffMs: number;
  maxBackoffMs: number;
  send(body: Buffer, tenant: string, attempt: number, signal: AbortSignal, protocol: Protocol): Promise<SendOutcome>;
  /** Shared by all lanes: starts as the configured protocol, becomes 1.0 for good if the receiver refuses 2.0. */
  protocol: { current: Protocol };
  /** A batch is settled (sent or dropped): its samples and bytes leave the queue. */
  settled(samples: number, bytes: number): void;
  /**
   * A batch was cut: what was reserved for its samples (an upper bound) becomes what it really
   * holds, its compressed request; `delta` is the difference (usually negative).
   */
  resized(delta: number): void;
  metrics: RemoteWriteMetrics;
  logger: Logger;
  signal: AbortSignal;
  receiver: string;
}

/** A batch waiting for the receiver: nothing but its compressed request, which is what it is charged. */
interface Batch {
  /** Held in memory of its own, never handed to a socket (each attempt sends a copy): freed when settled. */
  body: Uint8Array;
  samples: number;
  /** What it is charged against remoteWrite.maxQueuedBytes: its body and BATCH_BYTES. */
  bytes: number;
  protocol: Protocol;
}

/**
 * What a sample reserves while its batch is being built: its value and time in the series'
 * arrays (with their growth), and more than it can add to the batch's request, compressed or not.
 */
export const SAMPLE_BYTES = 48;
/** A series' entry in the batch being built: its labels in the request, and the entry's objects. */
export function seriesEntryBytes(state: { labelBytes: Uint8Array }): number {
  return state.labelBytes.length + 160;
}
/** A cut batch's own objects and its buffer's header, besides the body's bytes. */
export const BATCH_BYTES = 256;

/** The duration histogram's `result` values: remote write sends (an accepted request is `sent`). */
const RESULT_LABEL: Record<SendOutcome['kind'], string> = {
  accepted: 'sent',
  retry: 'retry',
  reject: 'rejected',
  unsupported: 'unsupported',
};

/** Retry-After values beyond this are treated as this: a receiver's typo must not park a lane for days. */
const MAX_RETRY_AFTER_MS = 5 * 60_000;

export class Lane {
  private building: Array<{ state: SeriesState; samples: { values: number[]; timestamps: number[] } }> = [];
  private buildingSamples = 0;
  private buildingBytes = 0;
  private readonly ready: Batch[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sending = false;
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly options: LaneOptions) {}

  /** Samples not yet acknowledged or dropped, in this lane. */
  get queuedSamples(): number {
    let n = this.buildingSamples;
    for (const b of this.ready) n += b.samples;
    return n;
  }

  /** Bytes of the samples not yet acknowledged or dropped, in this lane. */
  get queuedBytes(): number {
    let n = this.buildingBytes;
    for (const b of this.ready) n += b.bytes;
    return n;
  }

  /**
   * Appends a sample; the caller has checked it is newer than the series' last one. Returns the
   * bytes it adds to the queue: its value and time, plus the series' labels when the series is new
   * in the batch being built (a batch carries each series' labels once).
   */
  add(state: SeriesState, value: number, ts: number): number {
    let entry = state.pending;
    let bytes = SAMPLE_BYTES;
    if (!entry) {
      entry = { values: [], timestamps: [] };
      state.pending = entry;
      this.building.push({ state, samples: entry });
      bytes += seriesEntryBytes(state);
    }
    this.buildingBytes += bytes;
    entry.values.push(value);
    entry.timestamps.push(ts);
    state.lastTs = ts;
    if (++this.buildingSamples >= this.options.batchSize) this.cut();
    else this.timer ??= setTimeout(() => this.cut(), this.options.flushIntervalMs).unref();
    return bytes;
  }

  /** Closes the batch being built and hands it to the sender. */
  cut(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.buildingSamples === 0) return;
    const entries = this.building;
    this.building = [];
    for (const e of entries) e.state.pending = undefined;
    const series = entries.map(({ state, samples }) => ({
      labelBytes: state.labelBytes,
      labels: state.labels,
      help: state.help,
      unit: state.unit,
      ...samples,
    }));
    const protocol = this.options.protocol.current;
    const body = held(encode(protocol, series));
    const bytes = body.length + BATCH_BYTES;
    this.ready.push({ body, samples: this.buildingSamples, bytes, protocol });
    this.options.resized(bytes - this.buildingBytes);
    this.buildingSamples = 0;
    this.buildingBytes = 0;
    if (!this.sending) {
      this.sending = true;
      this.running = this.drain();
    }
  }

  /** Resolves when nothing is being sent (everything sent, or the lane was aborted). */
  async idle(): Promise<void> {
    while (this.sending) await this.running;
  }

  /** After an abort: the samples that never left, now counted as dropped. */
  abandon(): number {
    const n = this.queuedSamples;
    for (const batch of this.ready) release(batch.body);
    this.ready.length = 0;
    this.building = [];
    this.buildingSamples = 0;
    this.buildingBytes = 0;
    return n;
  }

  private async drain(): Promise<void> {
    try {
      while (this.ready.length > 0 && !this.options.signal.aborted) {
        const batch = this.ready[0] as Batch;
        if (!(await this.sendBatch(batch))) return;
        this.ready.shift();
        release(batch.body);
        this.options.settled(batch.samples, batch.bytes);
      }
    } finally {
      // Synchronously with the loop's end, so a cut() right after starts a new drain.
      this.sending = false;
    }
  }

  /** True once the batch is settled; false when the lane was aborted with the batch unsettled. */
  private async sendBatch(batch: Batch): Promise<boolean> {
    const { metrics, tenant } = this.options;
    const labels = { namespace: tenant };
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) metrics.retried.inc(labels, batch.samples);
      const stop = metrics.duration.startTimer();
      // A copy: the socket may still hold what it was given after the answer (an early one, an abort).
      const outcome = await this.options.send(
        Buffer.from(batch.body),
        tenant,
        attempt,
        this.options.signal,
        batch.protocol,
      );
      stop({ result: RESULT_LABEL[outcome.kind] });
      if (outcome.kind === 'accepted') {
        metrics.sent.inc(labels, batch.samples);
        metrics.lastSuccess.setToCurrentTime();
        if (attempt > 0)
          this.options.logger.info(
            { tenant, receiver: this.options.receiver, attempts: attempt + 1 },
            'remote write sent after retries',
          );
        return true;
      }
      if (this.options.signal.aborted) return false;
      if (outcome.kind === 'unsupported' && batch.protocol === '2.0') {
        if (this.options.protocol.current === '2.0') {
          this.options.protocol.current = '1.0';
          this.options.logger.warn(
            { receiver: this.options.receiver, status: outcome.status },
            'the remote write receiver does not speak 2.0 (415, or no *-Written headers); falling back to 1.0 for good',
          );
        }
        const v1 = held(v2BodyAsV1(Buffer.from(batch.body)));
        release(batch.body);
        batch.body = v1;
        batch.protocol = '1.0';
        const bytes = batch.body.length + BATCH_BYTES;
        this.options.resized(bytes - batch.bytes);
        batch.bytes = bytes;
        continue;
      }
      metrics.failed.inc(labels, batch.samples);
      if (outcome.kind === 'reject') {
        metrics.dropped.inc({ ...labels, reason: 'rejected' }, batch.samples);
        this.options.logger.warn(
          {
            tenant,
            receiver: this.options.receiver,
            status: outcome.status,
            reason: outcome.error,
            samples: batch.samples,
          },
          'remote write receiver refused a batch; dropped, not retried',
        );
        return true;
      }
      const delay = Math.min(
        (outcome.kind === 'retry' ? outcome.retryAfterMs : undefined) ?? this.backoff(attempt),
        MAX_RETRY_AFTER_MS,
      );
      // A down receiver would otherwise log every few milliseconds.
      if (attempt % 10 === 0) {
        const reason =
          outcome.kind === 'retry' ? outcome.error : 'the receiver answered 2xx to a 1.0 request without taking it';
        this.options.logger.warn(
          {
            tenant,
            receiver: this.options.receiver,
            status: outcome.status,
            reason,
            attempt: attempt + 1,
            retryInMs: Math.round(delay),
          },
          'remote write failed; retrying',
        );
      }
      try {
        await sleep(delay, undefined, { signal: this.options.signal });
      } catch {
        return false;
      }
    }
  }

  /** Exponential, capped, with jitter (half fixed, half random) so lanes do not retry in step. */
  private backoff(attempt: number): number {
    const ceiling = Math.min(this.options.maxBackoffMs, this.options.minBackoffMs * 2 ** Math.min(attempt, 30));
    return ceiling / 2 + (Math.random() * ceiling) / 2;
  }
}

/**
 * A batch's request in an ArrayBuffer of its own: released as soon as the batch is settled,
 * without waiting for a garbage collection that an idle process may not run for a long time (a
 * drained queue's memory was still held minutes later).
 */
function held(body: Buffer): Uint8Array {
  if (body.byteOffset === 0 && body.buffer.byteLength === body.length) return new Uint8Array(body.buffer);
  const own = new Uint8Array(new ArrayBuffer(body.length));
  own.set(body);
  return own;
}

/** Frees a batch's request now: a transferred-away ArrayBuffer gives its memory back at once. */
function release(body: Uint8Array): void {
  (body.buffer as ArrayBuffer & { transfer(length: number): ArrayBuffer }).transfer(0);
}
