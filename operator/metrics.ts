/** The operator's own metrics, on an injected registry. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export class OperatorMetrics {
  readonly reconciles: Counter<'kind' | 'result'>;
  readonly reconcileErrors: Counter<'kind'>;
  readonly reconcileDuration: Histogram<'kind'>;
  readonly leader: Gauge;
  readonly activityReplicas: Gauge;
  readonly activityPolls: Counter<'result'>;
  readonly activityWrites: Counter<'result'>;
  readonly activityPendingWrites: Gauge;
  readonly deliveryStatusWrites: Counter<'result'>;
  readonly integrationSilent: Gauge<'namespace' | 'name'>;

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
    this.activityReplicas = new Gauge({
      name: 'intake_operator_activity_replicas',
      help: 'Ingester replicas whose activity report is held (answered within the retention).',
      registers,
    });
    this.activityPolls = new Counter({
      name: 'intake_operator_activity_polls_total',
      help: 'Requests for an ingester replica activity report, by result (ok, error).',
      labelNames: ['result'],
      registers,
    });
    this.activityWrites = new Counter({
      name: 'intake_operator_activity_status_writes_total',
      help: 'Writes of status.activity, by result (ok, error); capped by --activity-writes-per-second.',
      labelNames: ['result'],
      registers,
    });
    this.activityPendingWrites = new Gauge({
      name: 'intake_operator_activity_pending_writes',
      help: "Resources whose changed status.activity (or a Destination's status.delivery) waits for its turn under the write cap.",
      registers,
    });
    this.deliveryStatusWrites = new Counter({
      name: 'intake_operator_delivery_status_writes_total',
      help: "Writes of a Destination's status.delivery, by result (ok, error); in the activity writes' queue, under the same cap.",
      labelNames: ['result'],
      registers,
    });
    this.integrationSilent = new Gauge({
      name: 'intake_operator_integration_silent',
      help: 'WebhookIntegrations with spec.expectEventsWithin: 1 when no event arrived within it (condition Receiving=False, reason Silent).',
      labelNames: ['namespace', 'name'],
      registers,
    });
  }
}
