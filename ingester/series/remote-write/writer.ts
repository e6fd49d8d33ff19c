/**
 * Forwards accepted data points to a Prometheus Remote Write receiver (docs/design.md §4, README "remote write").
 *
 * The request handler calls admit() after validation (which refuses a `time` more than 5 minutes
 * ahead, see data-points.ts): it refuses the whole request, before anything is changed, with 400
 * when a point is older than maxSampleAgeMs (the receiver would refuse the whole batch it travels
 * in, and with it other requests' points), with 503 when the points would not fit in the
 * namespace's share of the queue (maxQueuedBytesPerTenant) or in the queue as a whole; else it
 * returns the step that queues the points. A 200 therefore means "queued for sending", not
 * "stored".
 *
 * The queue is shared by every namespace, and a namespace whose receiver keeps failing (Mimir's
 * per-tenant 429, one X-Scope-OrgID refused) keeps its batches: its share is reserved, in bytes,
 * before its points are accepted (admit() checks it and commit() charges it in the same turn of the
 * event loop, data-points.ts, so no other request comes between), so it fills its own share and is
 * refused alone. None of this
 * makes the replica unready (docs/design.md §4b rule 3): one namespace's full share is its own
 * trouble, and the queue as a whole fills only when the receiver fails for several namespaces,
 * which every replica, sharing the receiver, has alike; taking replicas out of the Service would
 * refuse webhooks, which do not use the queue at all.
 *
 * What is charged is what is held: while a batch is being built, an upper bound per sample and
 * per series entry; once cut, its compressed request (the only thing a queued batch keeps).
 *
 * Per series, timestamps only move forward on one replica: a point older than the newest one
 * accepted for its series is dropped (counted as out_of_order), as is a point at the same
 * millisecond once that sample has left; while it is still queued, the later value replaces it.
 * The receiver would refuse both with a 400, and a 400 loses the whole request it came in.
 */
import type { Logger } from 'pino';
import type { Counter, Registry } from 'prom-client';
import type { DataPoint } from '../data-points.js';
import { ErrorCollector } from '../../core/batch.js';
import { largerThanRemoteWriteQueue, remoteWriteQueueFull, type QueueLimit } from '../../core/errors.js';
import { RemoteWriteClient, type SendOutcome } from './client.js';
import { seriesKey, wireLabels } from './labels.js';
import { Lane, SAMPLE_BYTES, seriesEntryBytes, type SeriesState } from './lane.js';
import { RemoteWriteMetrics } from './metrics.js';
import type { RemoteWriteSettings } from './settings.js';
import { encodeLabels, type Protocol } from './wire.js';

const SWEEP_INTERVAL_MS = 30_000;
/** A refused sender retries after this long: a batch of a failing receiver is retried within seconds. */
const RETRY_AFTER_SECONDS = 5;

export interface RemoteWriterOptions {
  registry: Registry;
  logger: Logger;
  /** Per-series ordering state is forgotten after this long without a point (limits.seriesTTLSeconds). */
  seriesTtlMs: number;
  /** The ingester's data-point rejection counter (reason queue_full). */
  rejected: Counter<'namespace' | 'reason'>;
  now?: () => number;
  /** Replaces the HTTP client (unit tests). */
  send?: (
    body: Buffer,
    tenant: string,
    attempt: number,
    signal: AbortSignal,
    protocol: Protocol,
  ) => Promise<SendOutcome>;
}

export interface Admitted {
  /** Queues the points; cannot fail. */
  commit(): void;
}

interface Prepared {
  key: string;
  labels: Array<[string, string]>;
  value: number;
  ts: number;
  help: string | undefined;
  unit: string | undefined;
}

/** What one namespace holds in the queue. */
interface Share {
  samples: number;
  bytes: number;
}

export class RemoteWriter {
  private readonly tenants = new Map<string, Lane[]>();
  private readonly series = new Map<string, SeriesState>();
  private queued = 0;
  private queuedBytes = 0;
  private readonly shares = new Map<string, Share>();
  private readonly metrics: RemoteWriteMetrics;
  private readonly client: RemoteWriteClient | undefined;
  private readonly send: NonNullable<RemoteWriterOptions['send']>;
  private readonly abort = new AbortController();
  private readonly protocol: { current: Protocol };
  private readonly sweeper: NodeJS.Timeout;
  private readonly now: () => number;

  constructor(
    private readonly settings: RemoteWriteSettings,
    private readonly options: RemoteWriterOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.protocol = { current: settings.protocol };
    this.metrics = new RemoteWriteMetrics(options.registry, settings, {
      shares: () => this.shares,
      bytes: () => this.queuedBytes,
    });
    if (settings.maxQueuedSamplesPerTenant !== undefined)
      options.logger.warn(
        { maxQueuedSamplesPerTenant: settings.maxQueuedSamplesPerTenant },
        "remoteWrite.maxQueuedSamplesPerTenant is deprecated: it counts samples, not the memory they take; each namespace's share is remoteWrite.maxQueuedBytesPerTenant. It is still applied",
      );
    if (options.send) this.send = options.send;
    else {
      const client = new RemoteWriteClient(settings);
      this.client = client;
      this.send = (body, tenant, attempt, signal, protocol) => client.send(body, tenant, attempt, signal, protocol);
    }
    this.sweeper = setInterval(() => this.sweep(), Math.min(SWEEP_INTERVAL_MS, options.seriesTtlMs)).unref();
  }

  get queuedSamples(): number {
    return this.queued;
  }

  get queuedByteCount(): number {
    return this.queuedBytes;
  }

  /** What a namespace holds in the queue now. */
  shareOf(tenant: string): Readonly<Share> {
    return this.shares.get(tenant) ?? { samples: 0, bytes: 0 };
  }

  /**
   * Checks one request's points against the lower time bound and the queue's room; throws a 400 or
   * a 503 (changing nothing) or returns the commit step.
   */
  admit(tenant: string, points: readonly DataPoint[]): Admitted {
    const receivedAtMs = this.now();
    this.refuseTooOld(tenant, points, receivedAtMs);
    const share = this.shareOf(tenant);
    const { maxQueuedSamples, maxQueuedBytes, maxQueuedBytesPerTenant } = this.settings;
    const samplesPerTenant = this.samplesPerTenant();
    if (share.samples + points.length > samplesPerTenant)
      this.refuse(tenant, points.length, {
        scope: 'namespace',
        resource: 'samples',
        queued: share.samples,
        max: samplesPerTenant,
        requested: points.length,
        field: 'remoteWrite.maxQueuedSamplesPerTenant',
      });
    if (this.queued + points.length > maxQueuedSamples)
      this.refuse(tenant, points.length, {
        scope: 'replica',
        resource: 'samples',
        queued: this.queued,
        max: maxQueuedSamples,
        requested: points.length,
        field: 'remoteWrite.maxQueuedSamples',
      });
    let bytes = 0;
    const prepared: Prepared[] = points.map((p) => {
      const labels = wireLabels(tenant, p);
      const key = seriesKey(labels);
      // At most what commit() charges: as if every point started its series' entry in a batch.
      const state = this.series.get(key);
      bytes +=
        SAMPLE_BYTES + (state ? seriesEntryBytes(state) : labelBytesUpperBound(labels) + seriesEntryBytes(NO_LABELS));
      return {
        key,
        labels,
        value: p.value,
        ts: Math.trunc(p.timeMs ?? receivedAtMs),
        help: p.description,
        unit: p.unit,
      };
    });
    if (bytes > maxQueuedBytesPerTenant) {
      // It would never fit, not even in an empty share: a 503 would be retried for ever.
      this.options.rejected.inc({ namespace: tenant, reason: 'queue_full' }, points.length);
      throw largerThanRemoteWriteQueue(points.length, bytes, maxQueuedBytesPerTenant);
    }
    // The namespace's own share first: a namespace whose receiver fails is told so, by name.
    if (share.bytes + bytes > maxQueuedBytesPerTenant)
      this.refuse(tenant, points.length, {
        scope: 'namespace',
        resource: 'bytes',
        queued: share.bytes,
        max: maxQueuedBytesPerTenant,
        requested: bytes,
        field: 'remoteWrite.maxQueuedBytesPerTenant',
      });
    if (this.queuedBytes + bytes > maxQueuedBytes)
      this.refuse(tenant, points.length, {
        scope: 'replica',
        resource: 'bytes',
        queued: this.queuedBytes,
        max: maxQueuedBytes,
        requested: bytes,
        field: 'remoteWrite.maxQueuedBytes',
      });
    // A request may list a series' points in any order; the wire needs them oldest first.
    if (!isSortedByTime(prepared)) prepared.sort((a, b) => a.ts - b.ts);
    return { commit: () => this.commit(tenant, prepared, receivedAtMs) };
  }

  /** A namespace's share in samples: the deprecated setting, else the same fraction as its share in bytes. */
  private samplesPerTenant(): number {
    const { maxQueuedSamples, maxQueuedBytes, maxQueuedBytesPerTenant, maxQueuedSamplesPerTenant } = this.settings;
    return (
      maxQueuedSamplesPerTenant ??
      Math.max(this.settings.batchSize, Math.floor((maxQueuedSamples * maxQueuedBytesPerTenant) / maxQueuedBytes))
    );
  }

  private refuse(tenant: string, points: number, limit: Omit<QueueLimit, 'namespace' | 'retryAfterSeconds'>): never {
    this.options.rejected.inc({ namespace: tenant, reason: 'queue_full' }, points);
    throw remoteWriteQueueFull({ ...limit, namespace: tenant, retryAfterSeconds: RETRY_AFTER_SECONDS });
  }

  /** 400 naming each point older than maxSampleAgeMs: the receiver would refuse the batch it is sent in. */
  private refuseTooOld(tenant: string, points: readonly DataPoint[], nowMs: number): void {
    const oldest = nowMs - this.settings.maxSampleAgeMs;
    let collector: ErrorCollector | undefined;
    for (let i = 0; i < points.length; i++) {
      const t = (points[i] as DataPoint).timeMs;
      if (t === undefined || t >= oldest) continue;
      collector ??= new ErrorCollector();
      collector.add([
        {
          index: i,
          field: 'time',
          message: `is more than ${Math.round(this.settings.maxSampleAgeMs / 60_000)} minutes in the past (remoteWrite.maxSampleAge): the remote write receiver would refuse it, and the whole batch it is sent in`,
        },
      ]);
    }
    if (!collector) return;
    this.options.rejected.inc({ namespace: tenant, reason: 'too_old' }, points.length);
    collector.throwIfAny('data point', points.length);
  }

  private commit(tenant: string, prepared: readonly Prepared[], nowMs: number): void {
    let share = this.shares.get(tenant);
    if (!share) {
      share = { samples: 0, bytes: 0 };
      this.shares.set(tenant, share);
    }
    for (const p of prepared) {
      let state = this.series.get(p.key);
      if (!state) {
        state = {
          labelBytes: encodeLabels(p.labels),
          labels: p.labels,
          help: '',
          unit: '',
          lane: this.laneFor(tenant, p.key),
          lastTs: -Infinity,
          pending: undefined,
          lastSeenMs: nowMs,
        };
        this.series.set(p.key, state);
      }
      state.lastSeenMs = nowMs;
      if (p.help !== undefined) state.help = p.help;
      if (p.unit !== undefined) state.unit = p.unit;
      if (p.ts > state.lastTs) {
        const bytes = state.lane.add(state, p.value, p.ts);
        this.queued++;
        this.queuedBytes += bytes;
        share.samples++;
        share.bytes += bytes;
      } else if (
        p.ts === state.lastTs &&
        state.pending &&
        state.pending.timestamps[state.pending.timestamps.length - 1] === p.ts
      ) {
        state.pending.values[state.pending.values.length - 1] = p.value;
      } else {
        this.metrics.dropped.inc({
          namespace: tenant,
          reason: p.ts === state.lastTs ? 'duplicate_timestamp' : 'out_of_order',
        });
      }
    }
  }

  private laneFor(tenant: string, key: string): Lane {
    let lanes = this.tenants.get(tenant);
    if (!lanes) {
      lanes = [];
      for (let i = 0; i < this.settings.maxInFlightPerTenant; i++) {
        lanes.push(
          new Lane({
            tenant,
            batchSize: this.settings.batchSize,
            flushIntervalMs: this.settings.flushIntervalMs,
            minBackoffMs: this.settings.minBackoffMs,
            maxBackoffMs: this.settings.maxBackoffMs,
            send: this.send,
            protocol: this.protocol,
            settled: (samples, bytes) => {
              const share = this.shares.get(tenant) as Share;
              this.queued -= samples;
              this.queuedBytes -= bytes;
              share.samples -= samples;
              share.bytes -= bytes;
            },
            resized: (delta) => {
              (this.shares.get(tenant) as Share).bytes += delta;
              this.queuedBytes += delta;
            },
            metrics: this.metrics,
            logger: this.options.logger,
            signal: this.abort.signal,
            receiver: this.client?.origin ?? 'test',
          }),
        );
      }
      this.tenants.set(tenant, lanes);
    }
    return lanes[hash(key) % lanes.length] as Lane;
  }

  /** Forgets ordering state of series idle past the TTL (never one with a sample still unsent). */
  sweep(): void {
    const cutoff = this.now() - this.options.seriesTtlMs;
    for (const [key, state] of this.series) if (state.lastSeenMs < cutoff && !state.pending) this.series.delete(key);
  }

  /**
   * Sends what is queued, waiting until everything is settled or `deadlineMs` (epoch ms) passes;
   * then stops, counting what is left as dropped (reason shutdown).
   */
  async close(deadlineMs: number): Promise<void> {
    clearInterval(this.sweeper);
    const lanes = [...this.tenants.values()].flat();
    for (const lane of lanes) lane.cut();
    const all = Promise.all(lanes.map((lane) => lane.idle()));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>(
      (resolve) => (timer = setTimeout(() => resolve('late'), Math.max(0, deadlineMs - Date.now()))),
    );
    const result = await Promise.race([all, late]);
    clearTimeout(timer);
    if (result === 'late') {
      this.abort.abort();
      await all;
    }
    for (const [tenant, tenantLanes] of this.tenants) {
      const left = tenantLanes.reduce((n, lane) => n + lane.abandon(), 0);
      if (left > 0) {
        this.metrics.dropped.inc({ namespace: tenant, reason: 'shutdown' }, left);
        this.options.logger.error(
          { tenant, samples: left },
          'remote write: samples still queued at the shutdown deadline were dropped',
        );
      }
    }
    await this.client?.close();
  }
}

const NO_LABELS = { labelBytes: new Uint8Array(0) };

/** No less than the protobuf size of a label set: names and values with their tags and lengths. */
function labelBytesUpperBound(labels: ReadonlyArray<[string, string]>): number {
  let n = 0;
  for (const [name, value] of labels) n += Buffer.byteLength(name) + Buffer.byteLength(value) + 10;
  return n;
}

function isSortedByTime(prepared: readonly Prepared[]): boolean {
  for (let i = 1; i < prepared.length; i++)
    if ((prepared[i] as Prepared).ts < (prepared[i - 1] as Prepared).ts) return false;
  return true;
}

/** FNV-1a: spreads series over a tenant's lanes, the same lane every time. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
