/** The operator's own metrics, on an injected registry. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export class OperatorMetrics {
  readonly reconciles: Counter<'kind' | 'result'>;
  readonly reconcileErrors: Counter<'kind'>;
  readonly reconcileDuration: Histogram<'kind'>;
  readonly leader: Gauge;

  constructor(registry: Registry) {
    const registers = [registry];
    this.reconciles = new Counter({
      name: 'intake_operator_reconciles_total',
      help: 'Reconciles, by kind and result.',
      labelNames: ['kind', 'result'],
      registers,
    });
    this.reconcileErrors = new Counter({
      name: 'intake_operator_reconcile_errors_total',
      help: 'Reconciles that failed and were retried with backoff.',
      labelNames: ['kind'],
      registers,
    });
    this.reconcileDuration = new Histogram({
      name: 'intake_operator_reconcile_duration_seconds',
      help: 'Time spent in one reconcile, by kind.',
      labelNames: ['kind'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.leader = new Gauge({
      name: 'intake_operator_leader',
      help: '1 while this replica holds the leader Lease.',
      registers,
    });
  }
}
