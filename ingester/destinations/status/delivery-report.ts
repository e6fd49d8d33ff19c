/**
 * `GET /status/delivery` on the admin port: each destination's deliveries on this replica
 * (delivery-record.ts), what waits for it, its circuit, its pause and the last address the guard
 * refused (api/delivery-status.ts). The operator merges every replica's report into a team
 * Destination's `status.delivery` and its `CircuitOpen` and `Paused` conditions; `intake status`
 * and anyone on the admin port may read it too.
 *
 * What waits is read from the gauges the lag loops keep (every 5 s): with the bus every replica
 * measures the same durable consumers (`backlogShared`), from the outbox each its own rows.
 */
import type { FastifyInstance } from 'fastify';
import type { Gauge } from 'prom-client';
import { MAX_REPORTED_DESTINATIONS, type DeliveryReport, type ReportedDelivery } from '../../../api/delivery-status.js';
import { namespaceOfDestination } from '../../../api/destination-document.js';
import { MAX_REFUSAL_TEXT } from '../../../api/activity.js';
import { inertText } from '../../../common/sender-text.js';
import type { LastRefusal } from '../address-refusals.js';
import type { CircuitState } from '../protection/circuit-breaker.js';
import type { PauseStatus } from '../protection/pause.js';
import type { DeliveryRecords } from './delivery-record.js';

export interface DeliveryReportSources {
  /** The destinations delivered to now. */
  names(): readonly string[];
  describe(name: string): { kind: 'alertmanager' | 'http'; circuit: CircuitState } | undefined;
  pauseOf(name: string): PauseStatus | undefined;
  lastAddressRefusal(name: string): LastRefusal | undefined;
  records: DeliveryRecords;
  lag: Gauge<'destination'>;
  oldestPending: Gauge<'destination'>;
  /** With the bus: every replica measures the same consumers. */
  backlogShared: boolean;
}

/** The gauge's value per destination. */
async function byDestination(gauge: Gauge<'destination'>): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const v of (await gauge.get()).values)
    if (typeof v.labels.destination === 'string') out.set(v.labels.destination, v.value);
  return out;
}

export async function deliveryReport(s: DeliveryReportSources, nowMs = Date.now()): Promise<DeliveryReport> {
  const [lag, oldest] = await Promise.all([byDestination(s.lag), byDestination(s.oldestPending)]);
  const destinations: ReportedDelivery[] = [];
  for (const name of s.names().slice(0, MAX_REPORTED_DESTINATIONS)) {
    const d = s.describe(name);
    if (!d) continue;
    const namespace = namespaceOfDestination(name);
    const pause = s.pauseOf(name);
    const refusal = s.lastAddressRefusal(name);
    const record = s.records.get(name);
    const backlog = lag.get(name);
    const oldestSeconds = oldest.get(name);
    destinations.push({
      name,
      ...(namespace !== undefined ? { namespace } : {}),
      kind: d.kind,
      ...(record?.snapshot(nowMs) ?? { deliveredLastHour: 0, failedLastHour: 0, deadLetteredLastHour: 0 }),
      ...(backlog !== undefined ? { backlog } : {}),
      ...(oldestSeconds !== undefined ? { oldestPendingSeconds: Math.round(oldestSeconds) } : {}),
      backlogShared: s.backlogShared,
      circuit: d.circuit,
      paused: pause?.paused === true,
      ...(pause?.paused && pause.by ? { pausedBy: pause.by } : {}),
      ...(pause?.paused && pause.since ? { pausedSince: pause.since } : {}),
      ...(refusal
        ? {
            addressRefused: {
              time: new Date(refusal.atMs).toISOString(),
              host: inertText(refusal.host, MAX_REFUSAL_TEXT),
              address: inertText(refusal.address, MAX_REFUSAL_TEXT),
              message: inertText(refusal.message, MAX_REFUSAL_TEXT),
            },
          }
        : {}),
    });
  }
  return { time: new Date(nowMs).toISOString(), destinations };
}

/** Serves the report on the admin listener (nothing configured: an empty list). */
export function registerDeliveryStatus(
  app: FastifyInstance,
  destinations: { deliveryReport(): Promise<DeliveryReport> } | undefined,
): void {
  app.get('/status/delivery', async (): Promise<DeliveryReport> =>
    destinations ? destinations.deliveryReport() : { time: new Date().toISOString(), destinations: [] },
  );
}
