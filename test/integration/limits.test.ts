/**
 * Per-tenant limits against a real kube-apiserver: cluster defaults (--default-limits), an
 * IntakeQuota and spec.limits resolve into the effective limits of the route the ingester
 * enforces, status.effectiveLimits, the Throttled condition and the quota's status.
 */
import { jest } from '@jest/globals';
import { apply, kubectl, type Proc, secretValue as decode } from './support/cluster.js';
import { operatorSuite } from './support/suite.js';
import { waitFor } from '../support/waiting.js';

jest.setTimeout(120_000);

const suite = operatorSuite('team-q');
const { system, core, custom } = suite;
const [team] = suite.tenants;
let ingester: Proc;

type Status = {
  effectiveLimits?: Record<string, unknown>;
  conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
};
const get = async (plural: string, name: string) =>
  (await custom.getNamespacedCustomObject({
    group: 'intake.dev',
    version: 'v1alpha1',
    namespace: team,
    plural,
    name,
  })) as { status?: Status & Record<string, unknown> };
const condition = (s: Status | undefined, type: string) => s?.conditions?.find((c) => c.type === type);

const DEFAULTS = {
  namespace: { eventsPerSecond: 1000, eventsBurst: 1000 },
  integration: { eventsPerSecond: 100, eventsBurst: 100 },
};

beforeAll(async () => {
  await suite.startOperator(['--default-limits', JSON.stringify(DEFAULTS)]);
  ingester = await suite.startIngester();
});

async function routeOf(kind: 'wi' | 'ak'): Promise<Record<string, unknown>> {
  const list = await core.listNamespacedSecret({ namespace: system, labelSelector: 'intake.dev/route=true' });
  const secret = list.items.find(
    (s) =>
      s.metadata?.name?.startsWith(`route-${kind}-`) &&
      s.metadata.annotations?.['intake.dev/source']?.includes(`/${team}/`),
  );
  return secret ? (JSON.parse(decode(secret, 'route.json')) as Record<string, unknown>) : {};
}

describe('spec.limits, clamped by the cluster defaults and then by an IntakeQuota', () => {
  it('clamps spec.limits to the cluster default without a quota: route, status.effectiveLimits and Throttled=True', async () => {
    await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: limited, namespace: ${team}}
spec: {limits: {eventsPerSecond: 5000, eventsBurst: 3}}
`);
    const wi = await waitFor(
      'effective limits',
      async () => {
        const obj = await get('webhookintegrations', 'limited');
        return obj.status?.effectiveLimits ? obj : undefined;
      },
      10_000,
    );
    expect(wi.status?.effectiveLimits).toEqual({
      eventsPerSecond: 100,
      eventsBurst: 3,
      overLimitStatus: 429,
      namespace: expect.objectContaining({ eventsPerSecond: 1000, eventsBurst: 1000 }),
    });
    expect(condition(wi.status, 'Throttled')).toMatchObject({ status: 'True', reason: 'Clamped' });
    expect(condition(wi.status, 'Throttled')?.message).toContain('spec.limits.eventsPerSecond 5000 -> 100');
    expect((await routeOf('wi')).limits).toEqual(wi.status?.effectiveLimits);
  });

  it('applies an IntakeQuota: the namespace limits, the integration ceiling, and the quota status (effective, used)', async () => {
    await apply(`apiVersion: intake.dev/v1alpha1
kind: IntakeQuota
metadata: {name: default, namespace: ${team}}
spec:
  namespace: {eventsPerSecond: 50, maxSeries: 700}
  integration: {eventsPerSecond: 2, eventsBurst: 2}
`);
    const wi = await waitFor(
      'limits from the quota',
      async () => {
        const obj = await get('webhookintegrations', 'limited');
        return obj.status?.effectiveLimits?.eventsPerSecond === 2 ? obj : undefined;
      },
      10_000,
    );
    expect(wi.status?.effectiveLimits).toMatchObject({
      eventsPerSecond: 2,
      eventsBurst: 2,
      namespace: { eventsPerSecond: 50, eventsBurst: 1000, maxSeries: 700 },
    });
    expect(condition(wi.status, 'Throttled')?.message).toContain('IntakeQuota default spec.integration.eventsBurst');
    const route = await waitFor(
      'route with the quota',
      async () => {
        const r = await routeOf('wi');
        return (r.limits as { eventsPerSecond?: number } | undefined)?.eventsPerSecond === 2 ? r : undefined;
      },
      10_000,
    );
    expect(route.limits).toEqual(wi.status?.effectiveLimits);
    const quota = await waitFor(
      'quota status',
      async () => {
        const q = await get('intakequotas', 'default');
        return (q.status?.used as { integrations?: number } | undefined)?.integrations === 1 ? q : undefined;
      },
      10_000,
    );
    expect(quota.status?.effective).toMatchObject({
      namespace: { eventsPerSecond: 50, maxSeries: 700 },
      integration: { eventsPerSecond: 2, eventsBurst: 2 },
    });
    expect(quota.status?.used).toEqual({ integrations: 1, apiKeys: 0, eventsPerSecond: 2, dataPointsPerSecond: 0 });
    expect(condition(quota.status, 'Ready')).toMatchObject({ status: 'True', reason: 'Applied' });
  });

  it('is enforced by the ingester from the route: 429 past the burst, naming the field that raises it', async () => {
    const secret = await waitFor(
      'credentials',
      async () => {
        try {
          return await core.readNamespacedSecret({ namespace: team, name: 'intake-webhook-limited' });
        } catch {
          return undefined;
        }
      },
      5000,
    );
    const authorization = decode(secret, 'authorization');
    const send = () =>
      fetch(`${ingester.url}/events/webhook_limited`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ source: 'h', severity: 2 }),
      });
    // The ingester picks the route up within moments of the operator writing it.
    await waitFor(
      'route with the quota in the ingester',
      async () => {
        const res = await send();
        const body = (await res.json()) as { limit?: { perSecond?: number } };
        return res.status === 429 && body.limit?.perSecond === 2;
      },
      10_000,
      200,
    );
    const refused = await send();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    const body = (await refused.json()) as { code: string; limit: Record<string, unknown> };
    expect(body.code).toBe('RATE_LIMITED');
    expect(body.limit).toMatchObject({
      scope: 'integration',
      name: 'limited',
      namespace: team,
      perSecond: 2,
      burst: 2,
      replicas: 1,
    });
    expect(body.limit.field).toContain('spec.limits.eventsPerSecond of WebhookIntegration limited');
    expect(body.limit.field).toContain('IntakeQuota spec.integration.eventsPerSecond');
  });

  it('gives an ApiKey within the quota its own limits with Throttled=False', async () => {
    await apply(`apiVersion: intake.dev/v1alpha1
kind: ApiKey
metadata: {name: meter, namespace: ${team}}
spec: {limits: {dataPointsPerSecond: 10, dataPointsBurst: 20, maxSeries: 100, overLimitStatus: 503}}
`);
    const key = await waitFor(
      'key limits',
      async () => {
        const obj = await get('apikeys', 'meter');
        return obj.status?.effectiveLimits ? obj : undefined;
      },
      10_000,
    );
    expect(key.status?.effectiveLimits).toMatchObject({
      dataPointsPerSecond: 10,
      dataPointsBurst: 20,
      maxSeries: 100,
      overLimitStatus: 503,
      namespace: { maxSeries: 700 },
    });
    expect(condition(key.status, 'Throttled')).toMatchObject({ status: 'False', reason: 'WithinQuota' });
    expect((await routeOf('ak')).limits).toEqual(key.status?.effectiveLimits);
  });

  it('goes back to the cluster defaults when the quota is deleted', async () => {
    await kubectl(['delete', 'intakequota', 'default', '-n', team]);
    const wi = await waitFor(
      'defaults again',
      async () => {
        const obj = await get('webhookintegrations', 'limited');
        return obj.status?.effectiveLimits?.eventsPerSecond === 100 ? obj : undefined;
      },
      10_000,
    );
    expect(wi.status?.effectiveLimits).toMatchObject({
      eventsPerSecond: 100,
      eventsBurst: 3,
      namespace: { eventsPerSecond: 1000 },
    });
  });
});
