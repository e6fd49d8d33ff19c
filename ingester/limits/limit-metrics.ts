/**
 * The per-tenant limits as a gauge, so that usage can be drawn against them (the Grafana
 * dashboard's "usage against limits" panels): each namespace's limit per second, cluster-wide,
 * in the unit of the counter it bounds.
 */
import { Gauge, type Registry } from 'prom-client';
import type { LimitResource } from '../core/errors.js';
import type { TenantLimiter } from './tenant-limiter.js';

/**
 * The label value and the factor from a limit's unit to its counter's: events and data points
 * per second as counted by intake_events_received_total and intake_datapoints_received_total,
 * mapping CPU in seconds per second as intake_mapping_cpu_seconds_total counts it.
 */
const RESOURCES: Record<LimitResource, { label: string; factor: number }> = {
  events: { label: 'events', factor: 1 },
  dataPoints: { label: 'datapoints', factor: 1 },
  mappingCpuMillis: { label: 'mapping_cpu_seconds', factor: 1 / 1000 },
};

export function registerLimitMetrics(registry: Registry, limiter: TenantLimiter): void {
  new Gauge({
    name: 'intake_tenant_limit_per_second',
    help: "Each namespace's limit per second, cluster-wide (every replica enforces its share): events, datapoints, or mapping_cpu_seconds (CPU seconds per second).",
    labelNames: ['namespace', 'resource'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { namespace, resource, perSecond } of limiter.namespaceLimits()) {
        const { label, factor } = RESOURCES[resource];
        this.set({ namespace, resource: label }, perSecond * factor);
      }
    },
  });
}
