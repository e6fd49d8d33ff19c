/**
 * Per-tenant limits (docs/design.md "Per-tenant limits"), the vocabulary shared by the operator
 * (which resolves cluster defaults -> IntakeQuota -> spec.limits into effective limits) and the
 * ingester (which enforces the route's effective limits, at limit / N ready replicas).
 *
 * Every limit is cluster-wide: "100 events/s" means 100 across all ingester replicas together.
 * Rates are per second; a burst is how many may arrive at once after a quiet period (the size of
 * the token bucket).
 */

/** What a namespace as a whole may send. Set by cluster admins (IntakeQuota `spec.namespace`). */
export interface NamespaceLimits {
  eventsPerSecond: number;
  eventsBurst: number;
  dataPointsPerSecond: number;
  dataPointsBurst: number;
  /** Active metric series (not divided among replicas: every replica may see every series). */
  maxSeries: number;
  /** CPU time of mappings (presets and expressions), milliseconds per second. */
  mappingCpuMillisPerSecond: number;
  mappingCpuBurstMillis: number;
}

/** What one WebhookIntegration may send (its `spec.limits`, at most the quota's `spec.integration`). */
export interface IntegrationLimits {
  eventsPerSecond: number;
  eventsBurst: number;
}

/** What one ApiKey may send (its `spec.limits`, at most the quota's `spec.apiKey`). */
export interface ApiKeyLimits {
  dataPointsPerSecond: number;
  dataPointsBurst: number;
  maxSeries: number;
}

/** Cluster defaults (chart values `tenantLimits`), and the shape of an IntakeQuota's spec. */
export interface TenantLimitDefaults {
  namespace: NamespaceLimits;
  integration: IntegrationLimits;
  apiKey: ApiKeyLimits;
}

/** 429 for most senders; 503 for senders that retry only server errors (Alertmanager drops a notification on 429). */
export type OverLimitStatus = 429 | 503;

/**
 * The `limits` of a route document: the effective limits of this integration or key and of its
 * namespace. Absent fields take the ingester's defaults (standalone files may leave them out).
 */
export interface RouteLimits {
  /** ApiKey: active series (of the key's namespace) while this key writes. */
  maxSeries?: number;
  /** WebhookIntegration: this integration's events. */
  eventsPerSecond?: number;
  eventsBurst?: number;
  /** ApiKey: this key's data points. */
  dataPointsPerSecond?: number;
  dataPointsBurst?: number;
  overLimitStatus?: OverLimitStatus;
  /** The namespace's limits (the same in every route of the namespace; the smallest wins if not). */
  namespace?: Partial<NamespaceLimits>;
}

export const DEFAULT_TENANT_LIMITS: TenantLimitDefaults = {
  namespace: {
    eventsPerSecond: 10_000,
    eventsBurst: 100_000,
    dataPointsPerSecond: 100_000,
    dataPointsBurst: 1_000_000,
    maxSeries: 10_000,
    mappingCpuMillisPerSecond: 500,
    mappingCpuBurstMillis: 2000,
  },
  integration: { eventsPerSecond: 5000, eventsBurst: 50_000 },
  apiKey: { dataPointsPerSecond: 50_000, dataPointsBurst: 500_000, maxSeries: 10_000 },
};

export const NAMESPACE_LIMIT_FIELDS = [
  'eventsPerSecond',
  'eventsBurst',
  'dataPointsPerSecond',
  'dataPointsBurst',
  'maxSeries',
  'mappingCpuMillisPerSecond',
  'mappingCpuBurstMillis',
] as const;
export const INTEGRATION_LIMIT_FIELDS = ['eventsPerSecond', 'eventsBurst'] as const;
export const API_KEY_LIMIT_FIELDS = ['dataPointsPerSecond', 'dataPointsBurst', 'maxSeries'] as const;

/** The preset whose senders retry only 5xx: its integrations answer 503 when over a limit unless told otherwise. */
export function defaultOverLimitStatus(mapping: { preset?: string } | undefined): OverLimitStatus {
  return mapping?.preset === 'alertmanager' ? 503 : 429;
}

const count = { type: 'integer', minimum: 1, maximum: 1_000_000_000 } as const;

/** JSON schema of TenantLimitDefaults with every field optional (settings files, the operator's --default-limits). */
export const tenantLimitDefaultsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    namespace: {
      type: 'object',
      additionalProperties: false,
      properties: Object.fromEntries(NAMESPACE_LIMIT_FIELDS.map((f) => [f, count])),
    },
    integration: {
      type: 'object',
      additionalProperties: false,
      properties: Object.fromEntries(INTEGRATION_LIMIT_FIELDS.map((f) => [f, count])),
    },
    apiKey: {
      type: 'object',
      additionalProperties: false,
      properties: Object.fromEntries(API_KEY_LIMIT_FIELDS.map((f) => [f, count])),
    },
  },
} as const;

export type PartialTenantLimitDefaults = { [K in keyof TenantLimitDefaults]?: Partial<TenantLimitDefaults[K]> };

/** Defaults with a partial override merged in, field by field. */
export function mergeTenantLimitDefaults(
  base: TenantLimitDefaults,
  override: PartialTenantLimitDefaults | undefined,
): TenantLimitDefaults {
  return {
    namespace: { ...base.namespace, ...override?.namespace },
    integration: { ...base.integration, ...override?.integration },
    apiKey: { ...base.apiKey, ...override?.apiKey },
  };
}
