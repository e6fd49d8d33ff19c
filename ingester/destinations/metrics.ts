/** What an on-call person needs to see of delivery, per destination. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export class DestinationMetrics {
  readonly delivered: Counter<'destination'>;
  readonly retries: Counter<'destination' | 'reason'>;
  readonly deadLettered: Counter<'destination' | 'reason'>;
  readonly latency: Histogram<'destination'>;
  readonly requestDuration: Histogram<'destination'>;
  readonly lag: Gauge<'destination'>;
  readonly oldestPending: Gauge<'destination'>;
  readonly resends: Counter<'destination' | 'result'>;
  readonly alerts: Gauge<'destination' | 'state'>;
  readonly alertsRefused: Counter<'destination' | 'namespace' | 'limit'>;
  readonly circuitState: Gauge<'destination'>;
  readonly circuitTransitions: Counter<'destination' | 'to'>;
  readonly held: Counter<'destination' | 'reason'>;
  readonly paused: Gauge<'destination' | 'reason'>;
  readonly waitingForShare: Gauge<'destination'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.delivered = new Counter({
      name: 'intake_destination_delivered_total',
      help: 'Events a destination accepted (2xx).',
      labelNames: ['destination'],
      registers,
    });
    this.retries = new Counter({
      name: 'intake_destination_retries_total',
      help: 'Deliveries that failed and are tried again after a backoff, by reason (network, timeout, http_<status>, state_store).',
      labelNames: ['destination', 'reason'],
      registers,
    });
    this.deadLettered = new Counter({
      name: 'intake_destination_dead_lettered_total',
      help: 'Events given up on and kept in the dead letter, by reason (http_<status> for a refusal, attempts_exhausted).',
      labelNames: ['destination', 'reason'],
      registers,
    });
    this.latency = new Histogram({
      name: 'intake_destination_delivery_latency_seconds',
      help: 'Time from accepting an event (received_at) to its delivery, retries included.',
      labelNames: ['destination'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800],
      registers,
    });
    this.requestDuration = new Histogram({
      name: 'intake_destination_request_duration_seconds',
      help: 'Time of one delivery request to a destination (for Alertmanager: to every URL).',
      labelNames: ['destination'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.lag = new Gauge({
      name: 'intake_destination_lag',
      help: "Requests whose events wait to be delivered to a destination: JetStream, the consumer's pending and unacknowledged messages; standalone, outbox rows.",
      labelNames: ['destination'],
      registers,
    });
    this.oldestPending = new Gauge({
      name: 'intake_destination_oldest_pending_seconds',
      help: 'Age of the oldest event waiting to be delivered to a destination, from when intake accepted it (0 when none waits); measured with intake_destination_lag.',
      labelNames: ['destination'],
      registers,
    });
    this.resends = new Counter({
      name: 'intake_destination_alert_resends_total',
      help: 'Periodic re-sends of the alert states to every Alertmanager of a destination, by result (ok: at least one accepted, failed, skipped: another replica holds the resend lease).',
      labelNames: ['destination', 'result'],
      registers,
    });
    this.alertsRefused = new Counter({
      name: 'intake_destination_alerts_refused_total',
      help: 'Events that would have started a new alert but were not kept or sent, because the namespace (limit=namespace) or the destination (limit=total) holds its maximum of alert states.',
      labelNames: ['destination', 'namespace', 'limit'],
      registers,
    });
    this.circuitState = new Gauge({
      name: 'intake_destination_circuit_state',
      help: "The destination's circuit breaker: 0 closed, 1 half-open (a probe may go), 2 open (events wait in the queue).",
      labelNames: ['destination'],
      registers,
    });
    this.circuitTransitions = new Counter({
      name: 'intake_destination_circuit_transitions_total',
      help: "Changes of a destination's circuit breaker, by the state entered (open, half-open, closed).",
      labelNames: ['destination', 'to'],
      registers,
    });
    this.held = new Counter({
      name: 'intake_destination_held_total',
      help: 'Events handed back to the queue unsent, to come back later without spending an attempt, by reason (circuit_open, paused, shutdown).',
      labelNames: ['destination', 'reason'],
      registers,
    });
    this.paused = new Gauge({
      name: 'intake_destination_paused',
      help: 'Whether a destination is paused (1) and why: reason suspended (its settings or the admin API), auto (it failed continuously for autoPause.after; only a resume ends it).',
      labelNames: ['destination', 'reason'],
      registers,
    });
    this.waitingForShare = new Gauge({
      name: 'intake_destination_waiting_for_share',
      help: "Bus messages kept on this replica until their namespace has room in its share of the destination's in-flight events, or the destination has room for them while their namespace holds every slot (reported in progress to the server, no attempt spent).",
      labelNames: ['destination'],
      registers,
    });
    this.alerts = new Gauge({
      name: 'intake_destination_alerts',
      help: 'Alert states kept for an Alertmanager destination, by state (firing, resolved), as of the last re-send.',
      labelNames: ['destination', 'state'],
      registers,
    });
  }
}
