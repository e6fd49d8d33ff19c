/** What an on-call person needs to see of the hand-off: bus state, publish latency, the spool. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Spool } from './spool.js';

export class HandoffMetrics {
  readonly sinkEvents: Counter<'sink' | 'outcome'>;
  readonly publishDuration: Histogram;
  readonly publishFailures: Counter<'reason'>;
  readonly connected: Gauge;
  readonly spoolAppendFailures: Counter<'reason'>;
  readonly replayed: Counter;

  constructor(registry: Registry, spool: Spool | undefined) {
    const registers = [registry];
    this.sinkEvents = new Counter({
      name: 'intake_sink_events_total',
      help: 'Events a hand-off sink acknowledged, by outcome: processed (the bus acknowledged them) or cached (fsynced to the spool).',
      labelNames: ['sink', 'outcome'],
      registers,
    });
    this.publishDuration = new Histogram({
      name: 'intake_jetstream_publish_duration_seconds',
      help: "Time from publishing a request's events (or a replay round) to their last PubAck or the timeout.",
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.publishFailures = new Counter({
      name: 'intake_jetstream_publish_failures_total',
      help: 'Events the bus did not acknowledge, by reason (timeout, refused: by the stream, e.g. full; no_slot: too many publishes in flight; down: not connected).',
      labelNames: ['reason'],
      registers,
    });
    this.connected = new Gauge({
      name: 'intake_jetstream_connected',
      help: '1 while connected to NATS with the stream verified, else 0.',
      registers,
    });
    this.spoolAppendFailures = new Counter({
      name: 'intake_spool_append_failures_total',
      help: 'Requests the spool refused (answered 503), by reason (full, unavailable, write_failed; tenant_full: one namespace at its share).',
      labelNames: ['reason'],
      registers,
    });
    this.replayed = new Counter({
      name: 'intake_spool_replayed_total',
      help: 'Spooled events handed to the bus (PubAck) and removed from the spool.',
      registers,
    });
    if (!spool) return;
    new Gauge({
      name: 'intake_spool_events',
      help: 'Events held in the spool, waiting for the bus.',
      registers,
      collect() {
        this.set(spool.depth);
      },
    });
    new Gauge({
      name: 'intake_spool_bytes',
      help: 'Bytes the spooled events take (counted against spool.maxBytes).',
      registers,
      collect() {
        this.set(spool.bytes);
      },
    });
    new Gauge({
      name: 'intake_spool_max_bytes',
      help: 'The spool size limit (spool.maxBytes).',
      registers,
      collect() {
        this.set(spool.maxBytes);
      },
    });
    new Gauge({
      name: 'intake_spool_oldest_age_seconds',
      help: 'Age of the oldest spooled event (0 when empty).',
      registers,
      collect() {
        this.set(spool.oldestAgeMs() / 1000);
      },
    });
    new Gauge({
      name: 'intake_spool_available',
      help: '1 while the spool can take events (open and below maxBytes), else 0.',
      registers,
      collect() {
        this.set(spool.canAccept() ? 1 : 0);
      },
    });
  }
}
