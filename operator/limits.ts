/**
 * Effective per-tenant limits, decided from cached state only (pure): cluster defaults (the
 * operator's --default-limits) -> the namespace's IntakeQuotas -> a resource's spec.limits,
 * clamped by them. The result is what the route carries and what status.effectiveLimits shows.
 *
 * - The namespace's own limits: each field from its quotas' spec.namespace (the smallest if
 *   several), else the cluster default. Only cluster admins write quotas.
 * - An integration (or key): its spec.limits, at most the ceiling, and the ceiling when absent.
 *   The ceiling is the quotas' spec.integration (spec.apiKey), else the cluster default, and never
 *   more than the namespace's own limit. So without a quota a tenant can lower its limits, never
 *   raise them.
 */
import {
  API_KEY_LIMIT_FIELDS,
  defaultOverLimitStatus,
  INTEGRATION_LIMIT_FIELDS,
  NAMESPACE_LIMIT_FIELDS,
  type ApiKeyLimits,
  type IntegrationLimits,
  type NamespaceLimits,
  type RouteLimits,
  type TenantLimitDefaults,
} from '../api/limits.js';
import type { ApiKey, IntakeQuota, WebhookIntegration } from '../api/v1alpha1/types.js';

/** The limits in effect in a namespace: its own, and the ceilings for any one integration or key. */
export interface NamespaceEffectiveLimits {
  namespace: NamespaceLimits;
  integration: IntegrationLimits;
  apiKey: ApiKeyLimits;
  /** Per field of integration/apiKey, where its ceiling comes from, for messages. */
  sources: Record<string, string>;
}

export interface ResolvedLimits {
  route: RouteLimits;
  /** spec.limits fields asked above the ceiling, each described (empty: nothing clamped). */
  clamped: string[];
}

type Section = 'namespace' | 'integration' | 'apiKey';

/** The smallest value any quota gives a field, with the quota's name; undefined when none gives it. */
function fromQuotas(
  quotas: readonly IntakeQuota[],
  section: Section,
  field: string,
): { value: number; quota: string } | undefined {
  let best: { value: number; quota: string } | undefined;
  for (const q of quotas) {
    const value = (q.spec?.[section] as Record<string, number | undefined> | undefined)?.[field];
    if (value !== undefined && (!best || value < best.value)) best = { value, quota: q.metadata.name as string };
  }
  return best;
}

export function namespaceLimits(
  defaults: TenantLimitDefaults,
  quotas: readonly IntakeQuota[],
): NamespaceEffectiveLimits {
  const namespace = { ...defaults.namespace };
  for (const f of NAMESPACE_LIMIT_FIELDS)
    namespace[f] = fromQuotas(quotas, 'namespace', f)?.value ?? defaults.namespace[f];
  const sources: Record<string, string> = {};
  const ceiling = <S extends 'integration' | 'apiKey'>(
    section: S,
    fields: readonly (keyof TenantLimitDefaults[S] & keyof NamespaceLimits)[],
  ): TenantLimitDefaults[S] => {
    const base = defaults[section] as unknown as Record<string, number>;
    const out: Record<string, number> = { ...base };
    for (const f of fields) {
      const quota = fromQuotas(quotas, section, f);
      let value = quota?.value ?? (base[f] as number);
      let source = quota
        ? `IntakeQuota ${quota.quota} spec.${section}.${f}`
        : `the cluster default tenantLimits.${section}.${f}`;
      if (namespace[f] < value) {
        value = namespace[f];
        source = `the namespace's own limit (${fromQuotas(quotas, 'namespace', f) ? 'IntakeQuota' : 'cluster default'} namespace.${f})`;
      }
      out[f] = value;
      sources[`${section}.${f}`] = source;
    }
    return out as unknown as TenantLimitDefaults[S];
  };
  return {
    namespace,
    integration: ceiling('integration', INTEGRATION_LIMIT_FIELDS),
    apiKey: ceiling('apiKey', API_KEY_LIMIT_FIELDS),
    sources,
  };
}

/** A field of spec.limits at most its ceiling; a clamp is described. */
function clamp(asked: number | undefined, ceiling: number, field: string, source: string, clamped: string[]): number {
  if (asked === undefined) return ceiling;
  if (asked <= ceiling) return asked;
  clamped.push(`${field} ${asked} -> ${ceiling} (${source})`);
  return ceiling;
}

export function webhookLimits(wi: WebhookIntegration, ns: NamespaceEffectiveLimits): ResolvedLimits {
  const asked = wi.spec?.limits;
  const clamped: string[] = [];
  const route: RouteLimits = {};
  for (const f of INTEGRATION_LIMIT_FIELDS)
    route[f] = clamp(
      asked?.[f],
      ns.integration[f],
      `spec.limits.${f}`,
      ns.sources[`integration.${f}`] as string,
      clamped,
    );
  route.overLimitStatus = asked?.overLimitStatus ?? defaultOverLimitStatus(wi.spec?.mapping);
  route.namespace = { ...ns.namespace };
  return { route, clamped };
}

export function apiKeyLimits(key: ApiKey, ns: NamespaceEffectiveLimits): ResolvedLimits {
  const asked = key.spec?.limits;
  const clamped: string[] = [];
  const route: RouteLimits = {};
  for (const f of ['dataPointsPerSecond', 'dataPointsBurst'] as const)
    route[f] = clamp(asked?.[f], ns.apiKey[f], `spec.limits.${f}`, ns.sources[`apiKey.${f}`] as string, clamped);
  // spec.maxSeries is the older spelling of spec.limits.maxSeries.
  const maxSeriesField = asked?.maxSeries !== undefined ? 'spec.limits.maxSeries' : 'spec.maxSeries';
  route.maxSeries = clamp(
    asked?.maxSeries ?? key.spec?.maxSeries,
    ns.apiKey.maxSeries,
    maxSeriesField,
    ns.sources['apiKey.maxSeries'] as string,
    clamped,
  );
  route.overLimitStatus = asked?.overLimitStatus ?? 429;
  route.namespace = { ...ns.namespace };
  return { route, clamped };
}

/** The IntakeQuota's status.used: what the namespace's integrations and keys were given. */
export function quotaUsage(
  webhooks: readonly WebhookIntegration[],
  apiKeys: readonly ApiKey[],
  ns: NamespaceEffectiveLimits,
): NonNullable<NonNullable<IntakeQuota['status']>['used']> {
  let eventsPerSecond = 0;
  let dataPointsPerSecond = 0;
  for (const wi of webhooks) eventsPerSecond += webhookLimits(wi, ns).route.eventsPerSecond as number;
  for (const key of apiKeys) dataPointsPerSecond += apiKeyLimits(key, ns).route.dataPointsPerSecond as number;
  return { integrations: webhooks.length, apiKeys: apiKeys.length, eventsPerSecond, dataPointsPerSecond };
}
