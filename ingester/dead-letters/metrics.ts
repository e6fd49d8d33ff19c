/** Metrics of the dead-letter store, both kinds, on the injected registry. */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { DeadLetterStore, DroppedLetter } from './model.js';

export class DeadLetterMetrics {
  readonly dropped: Counter<'kind' | 'namespace' | 'reason'>;
  readonly replayed: Counter<'kind' | 'namespace' | 'integration' | 'result'>;

  constructor(registry: Registry, store: () => DeadLetterStore | undefined) {
    const registers = [registry];
    this.dropped = new Counter({
      name: 'intake_deadletter_dropped_total',
      help: 'Dead letters dropped without a replay, by kind and reason: namespace_share (the oldest of a namespace over its share), store_full (the oldest of the largest namespace), too_large (larger than a share: never kept).',
      labelNames: ['kind', 'namespace', 'reason'],
      registers,
    });
    this.replayed = new Counter({
      name: 'intake_deadletter_replayed_total',
      help: 'Dead letters replayed, by kind and result (replayed: handed on; failed; skipped: another replay holds it).',
      labelNames: ['kind', 'namespace', 'integration', 'result'],
      registers,
    });
    new Gauge({
      name: 'intake_deadletter_bytes',
      help: "Bytes held in the dead-letter store, by namespace (with the bus: this replica's view of the stream).",
      labelNames: ['namespace'],
      registers,
      collect() {
        this.reset();
        const usage = store()?.usage();
        for (const [namespace, bytes] of usage?.namespaces ?? []) this.set({ namespace }, bytes);
      },
    });
  }

  countDropped(dropped: readonly DroppedLetter[]): void {
    for (const d of dropped) this.dropped.inc({ kind: d.kind, namespace: d.namespace, reason: d.reason });
  }
}
