/** The ingester's own metrics, served on the admin port at /metrics. The registry is injected. */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { CounterCells } from './counter-cells.js';
import { EndpointDurations } from './endpoint-durations.js';

/** What the series gauge reads (series/series-store.ts SeriesStore). */
export interface SeriesCounts {
  namespaceSeries(): ReadonlyMap<string, number>;
}

export type Endpoint = 'events' | 'metrics' | 'other';

export class IngesterMetrics {
  readonly requests: Counter<'endpoint' | 'status'>;
  readonly requestDuration: EndpointDurations;
  readonly eventsReceived: Counter<'integration' | 'namespace'>;
  readonly eventsProcessed: Counter<'integration' | 'namespace'>;
  readonly eventsCached: Counter<'integration' | 'namespace'>;
  readonly eventsRejected: Counter<'integration' | 'namespace' | 'reason'>;
  /** Accepted events a routing rule with drop: true sent nowhere, by rule (its name, else its index). */
  readonly eventsDroppedByRule: Counter<'integration' | 'namespace' | 'rule'>;
  readonly pointsReceived: Counter<'namespace'>;
  readonly pointsProcessed: Counter<'namespace'>;
  readonly pointsRejected: Counter<'namespace' | 'reason'>;
  readonly eventsRefused: Counter<'integration' | 'namespace' | 'reason' | 'scope'>;
  readonly pointsRefused: Counter<'namespace' | 'reason' | 'scope'>;
  readonly authFailures: Counter<'endpoint' | 'reason'>;
  readonly messagesRepeated: Counter<'integration' | 'namespace'>;
  readonly sinkErrors: Counter<'sink'>;
  readonly routes: Gauge<'kind'>;
  readonly routeReloads: Counter<'result'>;
  readonly routesPlaced: Counter<'update'>;
  readonly routesSkipped: Gauge;
  /** The request path's counts (counter-cells.ts): requests by endpoint and status, events by namespace and integration. */
  readonly requestCounts: CounterCells<'endpoint' | 'status'>;
  readonly receivedCounts: CounterCells<'integration' | 'namespace'>;
  readonly processedCounts: CounterCells<'integration' | 'namespace'>;

  constructor(
    readonly registry: Registry,
    series: SeriesCounts,
    options: { defaultMetrics?: boolean } = {},
  ) {
    const registers = [registry];
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'intake_ingester_' });
    this.requests = new Counter({
      name: 'intake_http_requests_total',
      help: 'Ingest requests answered, by endpoint and status code.',
      labelNames: ['endpoint', 'status'],
      registers,
      collect: () => this.requestCounts.flush(),
    });
    this.requestCounts = new CounterCells(this.requests, (endpoint, status) => ({ endpoint, status }));
    this.requestDuration = new EndpointDurations(
      'intake_http_request_duration_seconds',
      'Time from request received to response sent, by endpoint.',
      [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    );
    this.eventsReceived = new Counter({
      name: 'intake_events_received_total',
      help: 'Events in authenticated requests.',
      labelNames: ['integration', 'namespace'],
      registers,
      collect: () => this.receivedCounts.flush(),
    });
    this.receivedCounts = new CounterCells(this.eventsReceived, tenantLabels);
    this.eventsProcessed = new Counter({
      name: 'intake_events_processed_total',
      help: 'Events handed off to every sink and stored by each.',
      labelNames: ['integration', 'namespace'],
      registers,
      collect: () => this.processedCounts.flush(),
    });
    this.processedCounts = new CounterCells(this.eventsProcessed, tenantLabels);
    this.eventsCached = new Counter({
      name: 'intake_events_cached_total',
      help: 'Events durably spooled by a sink, to be handed on later.',
      labelNames: ['integration', 'namespace'],
      registers,
    });
    this.eventsDroppedByRule = new Counter({
      name: 'intake_events_dropped_by_rule_total',
      help: 'Accepted events a routing rule (drop: true) delivers to no destination, by rule.',
      labelNames: ['integration', 'namespace', 'rule'],
      registers,
    });
    this.eventsRejected = new Counter({
      name: 'intake_events_rejected_total',
      help: 'Events not accepted, by reason.',
      labelNames: ['integration', 'namespace', 'reason'],
      registers,
    });
    this.pointsReceived = new Counter({
      name: 'intake_datapoints_received_total',
      help: 'Metric data points in authenticated requests.',
      labelNames: ['namespace'],
      registers,
    });
    this.pointsProcessed = new Counter({
      name: 'intake_datapoints_processed_total',
      help: 'Metric data points written to series.',
      labelNames: ['namespace'],
      registers,
    });
    this.pointsRejected = new Counter({
      name: 'intake_datapoints_rejected_total',
      help: 'Metric data points not accepted, by reason.',
      labelNames: ['namespace', 'reason'],
      registers,
    });
    this.eventsRefused = new Counter({
      name: 'intake_events_refused_total',
      help: 'Events refused over a per-tenant limit, by reason (rate_limited, mapping_cpu) and scope (integration, namespace); a request refused before its body was read counts one.',
      labelNames: ['integration', 'namespace', 'reason', 'scope'],
      registers,
    });
    this.pointsRefused = new Counter({
      name: 'intake_datapoints_refused_total',
      help: 'Metric data points refused over a per-tenant limit, by reason (rate_limited) and scope (apikey, namespace); a request refused before its body was read counts one.',
      labelNames: ['namespace', 'reason', 'scope'],
      registers,
    });
    this.authFailures = new Counter({
      name: 'intake_auth_failures_total',
      help: 'Failed authentications, by endpoint and reason (missing, invalid, signature_missing, signature_invalid, timestamp_out_of_range, body_incomplete: a signed-only integration body that never arrived whole).',
      labelNames: ['endpoint', 'reason'],
      registers,
    });
    this.messagesRepeated = new Counter({
      name: 'intake_signed_messages_repeated_total',
      help: 'Signed requests whose message id (webhook-id) was answered within the tolerance: answered 200 again, nothing stored twice.',
      labelNames: ['integration', 'namespace'],
      registers,
    });
    this.sinkErrors = new Counter({
      name: 'intake_sink_errors_total',
      help: 'Batches a sink failed to hold.',
      labelNames: ['sink'],
      registers,
    });
    this.routes = new Gauge({
      name: 'intake_routes',
      help: 'Routes in the active routing table, by kind.',
      labelNames: ['kind'],
      registers,
    });
    this.routeReloads = new Counter({
      name: 'intake_route_reloads_total',
      help: 'Routing table reloads, by result (ok, error).',
      labelNames: ['result'],
      registers,
    });
    this.routesPlaced = new Counter({
      name: 'intake_routes_placed_total',
      help: 'Routes placed in the routing table: every route on a full build, only the changed ones on an incremental update.',
      labelNames: ['update'],
      registers,
    });
    this.routesSkipped = new Gauge({
      name: 'intake_routes_skipped',
      help: 'Route documents in the current set that could not be parsed or used (see the log).',
      registers,
    });
    new Gauge({
      name: 'intake_ingested_series_active',
      help: 'Active received metric series, by namespace.',
      labelNames: ['namespace'],
      registers,
      collect() {
        this.reset();
        for (const [namespace, count] of series.namespaceSeries()) this.set({ namespace }, count);
      },
    });
  }
}

/** Cells keyed by namespace, then integration. */
const tenantLabels = (namespace: string, integration: string | number): { integration: string; namespace: string } => ({
  integration: String(integration),
  namespace,
});
