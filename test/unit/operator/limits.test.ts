import { DEFAULT_TENANT_LIMITS } from '../../../api/limits.js';
import { validateRoute } from '../../../api/route.js';
import type { ApiKey, IntakeQuota, WebhookIntegration } from '../../../api/v1alpha1/types.js';
import { apiKeyLimits, namespaceLimits, quotaUsage, webhookLimits } from '../../../operator/limits.js';
import { throttledState } from '../../../operator/plan.js';

const wi = (name: string, spec: WebhookIntegration['spec'] = {}): WebhookIntegration => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  metadata: { name, namespace: 'ns' },
  spec,
});
const key = (name: string, spec: ApiKey['spec'] = {}): ApiKey => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'ApiKey',
  metadata: { name, namespace: 'ns' },
  spec,
});
const quota = (name: string, spec: IntakeQuota['spec']): IntakeQuota => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'IntakeQuota',
  metadata: { name, namespace: 'ns' },
  spec,
});

describe('effective limits', () => {
  it('without a quota: the cluster defaults, and spec.limits can lower but not raise them', () => {
    const ns = namespaceLimits(DEFAULT_TENANT_LIMITS, []);
    const lower = webhookLimits(wi('a', { limits: { eventsPerSecond: 10 } }), ns);
    expect(lower.route).toEqual({
      eventsPerSecond: 10,
      eventsBurst: DEFAULT_TENANT_LIMITS.integration.eventsBurst,
      overLimitStatus: 429,
      namespace: DEFAULT_TENANT_LIMITS.namespace,
    });
    expect(lower.clamped).toEqual([]);
    const higher = webhookLimits(wi('a', { limits: { eventsPerSecond: 1_000_000 } }), ns);
    expect(higher.route.eventsPerSecond).toBe(DEFAULT_TENANT_LIMITS.integration.eventsPerSecond);
    expect(higher.clamped).toEqual([
      `spec.limits.eventsPerSecond 1000000 -> ${DEFAULT_TENANT_LIMITS.integration.eventsPerSecond} (the cluster default tenantLimits.integration.eventsPerSecond)`,
    ]);
    expect(throttledState(higher)).toMatchObject({ status: 'True', reason: 'Clamped' });
    expect(throttledState(lower)).toMatchObject({ status: 'False', reason: 'WithinQuota' });
  });

  it('a quota replaces the namespace defaults and raises the ceiling of each integration', () => {
    const ns = namespaceLimits(DEFAULT_TENANT_LIMITS, [
      quota('q', { namespace: { eventsPerSecond: 5000, eventsBurst: 9000 }, integration: { eventsPerSecond: 3000 } }),
    ]);
    expect(ns.namespace).toMatchObject({
      eventsPerSecond: 5000,
      eventsBurst: 9000,
      dataPointsPerSecond: DEFAULT_TENANT_LIMITS.namespace.dataPointsPerSecond,
    });
    const r = webhookLimits(wi('a', { limits: { eventsPerSecond: 2500 } }), ns);
    expect(r.route.eventsPerSecond).toBe(2500);
    expect(webhookLimits(wi('b'), ns).route.eventsPerSecond).toBe(3000);
  });

  it('never lets one integration have more than its namespace', () => {
    const ns = namespaceLimits(DEFAULT_TENANT_LIMITS, [quota('q', { namespace: { eventsPerSecond: 20 } })]);
    expect(ns.integration.eventsPerSecond).toBe(20);
    const r = webhookLimits(wi('a', { limits: { eventsPerSecond: 100 } }), ns);
    expect(r.clamped[0]).toContain("the namespace's own limit");
  });

  it('with several quotas, the smallest value of each field applies', () => {
    const ns = namespaceLimits(DEFAULT_TENANT_LIMITS, [
      quota('a', { integration: { eventsPerSecond: 50, eventsBurst: 10 } }),
      quota('b', { integration: { eventsPerSecond: 70, eventsBurst: 5 } }),
    ]);
    expect(ns.integration).toEqual({ eventsPerSecond: 50, eventsBurst: 5 });
    expect(ns.sources['integration.eventsBurst']).toBe('IntakeQuota b spec.integration.eventsBurst');
  });

  it('the alertmanager preset answers 503 over its limit unless spec.limits says otherwise', () => {
    const ns = namespaceLimits(DEFAULT_TENANT_LIMITS, []);
    expect(webhookLimits(wi('a', { mapping: { preset: 'alertmanager' } }), ns).route.overLimitStatus).toBe(503);
    expect(
      webhookLimits(wi('a', { mapping: { preset: 'alertmanager' }, limits: { overLimitStatus: 429 } }), ns).route
        .overLimitStatus,
    ).toBe(429);
    expect(webhookLimits(wi('a', { mapping: { preset: 'grafana' } }), ns).route.overLimitStatus).toBe(429);
  });

  it('an ApiKey: spec.limits.maxSeries (or the older spec.maxSeries) at most the ceiling', () => {
    const ns = namespaceLimits(DEFAULT_TENANT_LIMITS, [quota('q', { apiKey: { maxSeries: 300 } })]);
    expect(apiKeyLimits(key('k', { maxSeries: 200 }), ns).route).toMatchObject({
      maxSeries: 200,
      dataPointsPerSecond: DEFAULT_TENANT_LIMITS.apiKey.dataPointsPerSecond,
      overLimitStatus: 429,
    });
    const clamped = apiKeyLimits(key('k', { maxSeries: 200, limits: { maxSeries: 900 } }), ns);
    expect(clamped.route.maxSeries).toBe(300);
    expect(clamped.clamped).toEqual(['spec.limits.maxSeries 900 -> 300 (IntakeQuota q spec.apiKey.maxSeries)']);
  });

  it("reports what a namespace's integrations and keys were given", () => {
    const ns = namespaceLimits(DEFAULT_TENANT_LIMITS, [quota('q', { integration: { eventsPerSecond: 100 } })]);
    expect(
      quotaUsage(
        [wi('a'), wi('b', { limits: { eventsPerSecond: 10 } })],
        [key('k', { limits: { dataPointsPerSecond: 7 } })],
        ns,
      ),
    ).toEqual({ integrations: 2, apiKeys: 1, eventsPerSecond: 110, dataPointsPerSecond: 7 });
  });

  it('resolves into route limits the route schema accepts', () => {
    const ns = namespaceLimits(DEFAULT_TENANT_LIMITS, [quota('q', { namespace: { maxSeries: 5 } })]);
    const base = {
      apiVersion: 'intake.dev/v1alpha1',
      namespace: 'ns',
      credentials: [{ username: 'u', secret: { sha256: 'a'.repeat(64) } }],
    };
    expect(() =>
      validateRoute({
        ...base,
        kind: 'WebhookIntegration',
        name: 'a',
        limits: webhookLimits(wi('a', { limits: { eventsBurst: 1 } }), ns).route,
      }),
    ).not.toThrow();
    expect(() =>
      validateRoute({ ...base, kind: 'ApiKey', name: 'k', limits: apiKeyLimits(key('k'), ns).route }),
    ).not.toThrow();
  });
});
