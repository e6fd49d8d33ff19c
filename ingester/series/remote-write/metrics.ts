/** Remote write's own metrics, on the ingester's injected registry. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type DropReason = 'rejected' | 'out_of_order' | 'duplicate_timestamp' | 'shutdown';

export class RemoteWriteMetrics {
  readonly sent: Counter<'namespace'>;
  readonly failed: Counter<'namespace'>;
  readonly retried: Counter<'namespace'>;
  readonly dropped: Counter<'namespace' | 'reason'>;
  readonly duration: Histogram<'result'>;
  readonly lastSuccess: Gauge;

  constructor(
    registry: Registry,
    limits: { maxQueuedSamples: number; maxQueuedBytes: number; maxQueuedBytesPerTenant: number },
    queued: {
      /** Each namespace's samples and bytes in the queue. */
      shares: () => ReadonlyMap<string, { samples: number; bytes: number }>;
      bytes: () => number;
    },
  ) {
    const registers = [registry];
    this.sent = new Counter({
      name: 'intake_remote_write_samples_sent_total',
      help: 'Samples the remote write receiver acknowledged (2xx).',
      labelNames: ['namespace'],
      registers,
    });
    this.failed = new Counter({
      name: 'intake_remote_write_samples_failed_total',
      help: 'Samples in remote write requests that failed (network error, 5xx, 429 or another 4xx), counted per attempt.',
      labelNames: ['namespace'],
      registers,
    });
    this.retried = new Counter({
      name: 'intake_remote_write_samples_retried_total',
      help: 'Samples sent again after a failure worth retrying (network error, 5xx, 429).',
      labelNames: ['namespace'],
      registers,
    });
    this.dropped = new Counter({
      name: 'intake_remote_write_samples_dropped_total',
      help: 'Accepted samples the receiver never stored, by reason: rejected (the receiver answered 4xx), out_of_order / duplicate_timestamp (older than or at the time of a sample already sent for the series), shutdown (still queued when the shutdown timeout ran out).',
      labelNames: ['namespace', 'reason'],
      registers,
    });
    this.duration = new Histogram({
      name: 'intake_remote_write_request_duration_seconds',
      help: 'Remote write requests, from send to answer, by result (sent, retry, rejected).',
      labelNames: ['result'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.lastSuccess = new Gauge({
      name: 'intake_remote_write_last_success_timestamp_seconds',
      help: 'When the receiver last acknowledged a request (Unix seconds; 0 = never).',
      registers,
    });
    new Gauge({
      name: 'intake_remote_write_queued_samples',
      help: 'Samples accepted and not yet acknowledged by the receiver, by namespace.',
      labelNames: ['namespace'],
      registers,
      collect() {
        this.reset();
        for (const [namespace, share] of queued.shares()) this.set({ namespace }, share.samples);
      },
    });
    new Gauge({
      name: 'intake_remote_write_queue_capacity_samples',
      help: 'remoteWrite.maxQueuedSamples: past it, new data points get 503.',
      registers,
    }).set(limits.maxQueuedSamples);
    new Gauge({
      name: 'intake_remote_write_queued_bytes',
      help: 'What the queue holds: the compressed requests waiting for the receiver, and an upper bound for the batches being built.',
      registers,
      collect() {
        this.set(queued.bytes());
      },
    });
    new Gauge({
      name: 'intake_remote_write_namespace_queued_bytes',
      help: "Each namespace's part of intake_remote_write_queued_bytes; past remoteWrite.maxQueuedBytesPerTenant its data points get 503.",
      labelNames: ['namespace'],
      registers,
      collect() {
        this.reset();
        for (const [namespace, share] of queued.shares()) this.set({ namespace }, share.bytes);
      },
    });
    new Gauge({
      name: 'intake_remote_write_namespace_queue_capacity_bytes',
      help: "remoteWrite.maxQueuedBytesPerTenant: one namespace's share of the queue.",
      registers,
    }).set(limits.maxQueuedBytesPerTenant);
    new Gauge({
      name: 'intake_remote_write_queue_capacity_bytes',
      help: "remoteWrite.maxQueuedBytes: past it, every namespace's new data points get 503.",
      registers,
    }).set(limits.maxQueuedBytes);
  }
}
