/**
 * `tenantLimits:` in the ingester settings: the defaults for every limit a route does not carry
 * (standalone route files). In a cluster the chart writes the same
 * values the operator resolves routes with, so both agree.
 */
import {
  DEFAULT_TENANT_LIMITS,
  mergeTenantLimitDefaults,
  tenantLimitDefaultsSchema,
  type PartialTenantLimitDefaults,
  type TenantLimitDefaults,
} from '../../api/limits.js';

export const tenantLimitsSchema = tenantLimitDefaultsSchema;

/** The namespace's series cap defaults to `limits.maxSeriesPerNamespace` unless tenantLimits names one. */
export function resolveTenantLimits(
  file: PartialTenantLimitDefaults | undefined,
  maxSeriesPerNamespace: number,
): TenantLimitDefaults {
  const base = mergeTenantLimitDefaults(DEFAULT_TENANT_LIMITS, { namespace: { maxSeries: maxSeriesPerNamespace } });
  return mergeTenantLimitDefaults(base, file);
}
