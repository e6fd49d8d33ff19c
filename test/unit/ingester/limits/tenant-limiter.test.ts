import { Registry, Counter } from 'prom-client';
import { DEFAULT_TENANT_LIMITS } from '../../../../api/limits.js';
import type { Route } from '../../../../api/route.js';
// Loaded as the ingester loads it before a mapped route reaches the table (mapping-engine-loader.ts).
import '../../../../api/mapping/engine.js';
import { LimitError } from '../../../../ingester/core/errors.js';
import { fieldFor, TenantLimiter } from '../../../../ingester/limits/tenant-limiter.js';
import { RouteTable, type RouteEntry } from '../../../../ingester/routing/route-table.js';

const route = (kind: Route['kind'], name: string, namespace: string, extra: Partial<Route> = {}): Route => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind,
  name,
  namespace,
  credentials: [{ username: name, secret: { plain: `${namespace}_${name}-secret-0123456789abcdef` } }],
  ...extra,
});

function tableOf(...routes: Route[]): { table: RouteTable; entry: (name: string) => RouteEntry } {
  const { table, skipped } = RouteTable.build(
    routes.map((r, i) => ({ source: `r${i}`, route: r })),
    { allowPlaintext: true },
  );
  expect(skipped).toEqual([]);
  return { table, entry: (name) => [...table.entries()].find((e) => e.name === name) as RouteEntry };
}

function refusal(fn: () => void): LimitError {
  try {
    fn();
  } catch (err) {
    if (err instanceof LimitError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('TenantLimiter', () => {
  let nowMs = 0;
  const limiter = (replicas = 1) => {
    const registry = new Registry();
    const eventsRefused = new Counter({
      name: 'e',
      help: 'e',
      labelNames: ['integration', 'namespace', 'reason', 'scope'],
      registers: [registry],
    });
    const l = new TenantLimiter({ mode: 'kubernetes', now: () => nowMs, eventsRefused });
    l.setReplicas(replicas);
    return { l, eventsRefused };
  };
  beforeEach(() => (nowMs = 0));

  it('refuses a whole batch the integration cannot take, and takes nothing from the namespace', () => {
    const { table, entry } = tableOf(
      route('WebhookIntegration', 'a', 'ns', { limits: { eventsPerSecond: 10, eventsBurst: 10 } }),
      route('WebhookIntegration', 'b', 'ns'),
    );
    const { l } = limiter();
    l.sync(table.entries());
    l.take(entry('a'), 8);
    const err = refusal(() => l.take(entry('a'), 5));
    expect(err.statusCode).toBe(429);
    expect(err.headers).toEqual({ 'retry-after': '1' });
    expect(err.toBody()).toMatchObject({
      code: 'RATE_LIMITED',
      limit: {
        scope: 'integration',
        name: 'a',
        namespace: 'ns',
        perSecond: 10,
        burst: 10,
        requested: 5,
        field: expect.stringContaining('spec.limits.eventsPerSecond'),
      },
    });
    // The namespace gave 8, not 13: its default burst minus 8 is still there for b.
    l.take(entry('b'), DEFAULT_TENANT_LIMITS.namespace.eventsBurst - 8);
    expect(() => l.take(entry('b'), 1)).toThrow(LimitError);
  });

  it('gives back to the integration and the namespace what a request refused after take() took, up to their bursts', async () => {
    const { table, entry } = tableOf(
      route('WebhookIntegration', 'a', 'ns', {
        limits: { eventsPerSecond: 1, eventsBurst: 10, namespace: { eventsPerSecond: 1, eventsBurst: 15 } },
      }),
      route('WebhookIntegration', 'b', 'ns'),
    );
    const { l, eventsRefused } = limiter();
    l.sync(table.entries());
    l.take(entry('a'), 8);
    // The hand-off refused the request: its 8 events are the integration's and the namespace's again.
    l.giveBack(entry('a'), 8);
    l.take(entry('a'), 10);
    expect(() => l.take(entry('a'), 1)).toThrow(LimitError);
    l.giveBack(entry('a'), 10);
    l.giveBack(entry('a'), 10); // given back twice by mistake: never past the burst
    l.take(entry('a'), 10);
    expect(() => l.take(entry('a'), 1)).toThrow(LimitError);
    // The namespace (burst 15) got back exactly what it lent: 5 left for b.
    l.take(entry('b'), 5);
    expect(() => l.take(entry('b'), 1)).toThrow(LimitError);
    // Only the three refusals were counted, one event each; giving back counts nothing.
    expect((await eventsRefused.get()).values.reduce((n, v) => n + v.value, 0)).toBe(3);
  });

  it('shares the namespace limit among its integrations and names scope namespace', () => {
    const ns = { namespace: { eventsPerSecond: 2, eventsBurst: 4 } };
    const { table, entry } = tableOf(
      route('WebhookIntegration', 'a', 'ns', { limits: ns }),
      route('WebhookIntegration', 'b', 'ns', { limits: ns }),
      route('WebhookIntegration', 'c', 'other'),
    );
    const { l, eventsRefused } = limiter();
    l.sync(table.entries());
    l.take(entry('a'), 3);
    const err = refusal(() => l.take(entry('b'), 2));
    expect(err.limit).toMatchObject({
      scope: 'namespace',
      name: 'ns',
      perSecond: 2,
      burst: 4,
      field: expect.stringContaining('IntakeQuota spec.namespace.eventsPerSecond'),
    });
    l.take(entry('c'), 100);
    const counted = eventsRefused.get() as unknown as Promise<{
      values: Array<{ labels: Record<string, string>; value: number }>;
    }>;
    return counted.then((m) =>
      expect(m.values).toEqual([
        { labels: { integration: 'b', namespace: 'ns', reason: 'rate_limited', scope: 'namespace' }, value: 2 },
      ]),
    );
  });

  it('divides every limit by the ready replicas', () => {
    const { table, entry } = tableOf(
      route('WebhookIntegration', 'a', 'ns', { limits: { eventsPerSecond: 10, eventsBurst: 10 } }),
    );
    const { l } = limiter(2);
    l.sync(table.entries());
    l.take(entry('a'), 5);
    const err = refusal(() => l.admitRequest(entry('a')));
    expect(err.limit).toMatchObject({ perSecond: 10, burst: 10, replicas: 2 });
    // At 5/s per replica, one event is back after 200 ms.
    nowMs = 200;
    expect(() => l.admitRequest(entry('a'))).not.toThrow();
  });

  it('answers a repeated refusal alike, counts each one, and names the new limit once it changes', async () => {
    const limited = (perSecond: number) =>
      route('WebhookIntegration', 'a', 'ns', { limits: { eventsPerSecond: perSecond, eventsBurst: 2 } });
    const { l, eventsRefused } = limiter();
    const first = tableOf(limited(1));
    l.sync(first.table.entries());
    l.take(first.entry('a'), 2);
    const once = refusal(() => l.admitRequest(first.entry('a')));
    const twice = refusal(() => l.admitRequest(first.entry('a')));
    expect(twice.toBody()).toEqual(once.toBody());
    const counted = (await eventsRefused.get()).values.reduce((n, v) => n + v.value, 0);
    expect(counted).toBe(2);
    const raised = tableOf(limited(7));
    l.sync(raised.table.entries());
    expect(refusal(() => l.admitRequest(raised.entry('a'))).limit).toMatchObject({ perSecond: 7 });
    l.setReplicas(2);
    expect(refusal(() => l.admitRequest(raised.entry('a'))).limit).toMatchObject({ perSecond: 7, replicas: 2 });
  });

  it('keeps a bucket across route reloads (a reload elsewhere refills nobody)', () => {
    const a = route('WebhookIntegration', 'a', 'ns', { limits: { eventsPerSecond: 1, eventsBurst: 2 } });
    const { l } = limiter();
    const first = tableOf(a);
    l.sync(first.table.entries());
    l.take(first.entry('a'), 2);
    const second = tableOf(a, route('WebhookIntegration', 'z', 'elsewhere'));
    l.sync(second.table.entries());
    expect(() => l.take(second.entry('a'), 1)).toThrow(LimitError);
  });

  it('takes the smallest namespace limit when the routes of a namespace disagree', () => {
    const { table, entry } = tableOf(
      route('WebhookIntegration', 'a', 'ns', { limits: { namespace: { eventsPerSecond: 100, eventsBurst: 3 } } }),
      route('WebhookIntegration', 'b', 'ns', { limits: { namespace: { eventsPerSecond: 100, eventsBurst: 50 } } }),
    );
    const { l } = limiter();
    l.sync(table.entries());
    l.take(entry('a'), 3);
    expect(refusal(() => l.take(entry('b'), 1)).limit).toMatchObject({ scope: 'namespace', burst: 3 });
  });

  it('answers 503 for the alertmanager preset and for overLimitStatus 503', () => {
    const { table, entry } = tableOf(
      route('WebhookIntegration', 'am', 'ns', {
        mapping: { preset: 'alertmanager' },
        limits: { eventsPerSecond: 1, eventsBurst: 1 },
      }),
      route('WebhookIntegration', 'x', 'ns', { limits: { eventsPerSecond: 1, eventsBurst: 1, overLimitStatus: 503 } }),
      route('WebhookIntegration', 'y', 'ns', {
        mapping: { preset: 'alertmanager' },
        limits: { eventsPerSecond: 1, eventsBurst: 1, overLimitStatus: 429 },
      }),
    );
    const { l } = limiter();
    l.sync(table.entries());
    for (const [name, status] of [
      ['am', 503],
      ['x', 503],
      ['y', 429],
    ] as const) {
      l.take(entry(name), 1);
      expect(refusal(() => l.take(entry(name), 1)).statusCode).toBe(status);
    }
  });

  it('refuses mapped requests of a namespace in CPU debt until the debt is paid', () => {
    const { table, entry } = tableOf(
      route('WebhookIntegration', 'm', 'ns', {
        mapping: { expression: '$' },
        limits: { namespace: { mappingCpuMillisPerSecond: 100, mappingCpuBurstMillis: 50 } },
      }),
    );
    const { l } = limiter();
    l.sync(table.entries());
    l.admitRequest(entry('m'));
    l.chargeMappingCpu(entry('m'), 250);
    const err = refusal(() => l.admitRequest(entry('m')));
    expect(err.toBody()).toMatchObject({
      code: 'MAPPING_CPU_LIMITED',
      limit: { scope: 'namespace', resource: 'mappingCpuMillis', perSecond: 100, burst: 50, retryAfterSeconds: 2 },
    });
    nowMs = 2001;
    expect(() => l.admitRequest(entry('m'))).not.toThrow();
  });

  it("charges routing rules' CPU to the namespace's budget: refused once in debt, the request and the next ones", () => {
    const { table, skipped } = RouteTable.build(
      [
        route('WebhookIntegration', 'r', 'ns', {
          rules: [{ name: 'all', destinations: ['x'] }],
          limits: { namespace: { mappingCpuMillisPerSecond: 100, mappingCpuBurstMillis: 50 } },
        }),
        route('WebhookIntegration', 'plain', 'other'),
      ].map((r, i) => ({ source: `r${i}`, route: r })),
      { allowPlaintext: true, destinations: [{ name: 'x', default: true }] },
    );
    expect(skipped).toEqual([]);
    const entry = (name: string): RouteEntry => [...table.entries()].find((e) => e.name === name) as RouteEntry;
    const { l } = limiter();
    l.sync(table.entries());
    expect(l.chargeRulesCpu(entry('r'), 30)).toBeUndefined();
    const over = l.chargeRulesCpu(entry('r'), 70);
    expect(over?.toBody()).toMatchObject({
      code: 'MAPPING_CPU_LIMITED',
      limit: { scope: 'namespace', namespace: 'ns', resource: 'mappingCpuMillis', retryAfterSeconds: 1 },
    });
    expect(refusal(() => l.admitRequest(entry('r'))).code).toBe('MAPPING_CPU_LIMITED');
    // An integration with neither rules nor a mapping has no CPU to charge.
    expect(l.chargeRulesCpu(entry('plain'), 1e6)).toBeUndefined();
    expect(() => l.admitRequest(entry('plain'))).not.toThrow();
    nowMs = 501;
    expect(() => l.admitRequest(entry('r'))).not.toThrow();
  });

  it("caps an API key's series at the namespace's", () => {
    const { table, entry } = tableOf(
      route('ApiKey', 'k1', 'ns', { limits: { maxSeries: 500, namespace: { maxSeries: 200 } } }),
      route('ApiKey', 'k2', 'ns2', { limits: { maxSeries: 50 } }),
    );
    const { l } = limiter();
    l.sync(table.entries());
    expect(l.maxSeries(entry('k1'))).toBe(200);
    expect(l.maxSeries(entry('k2'))).toBe(50);
  });

  describe('a route never used holds no limit until its first request', () => {
    const hooks = (n: number, limits?: Route['limits']) =>
      Array.from({ length: n }, (_, i) => route('WebhookIntegration', `h${i}`, `ns${i % 3}`, limits ? { limits } : {}));
    const limited = { eventsPerSecond: 10, eventsBurst: 20 };

    it("creates none in sync, and admits exactly the burst on a route's first requests, then refuses", () => {
      const { table, entry } = tableOf(...hooks(50, limited));
      const { l } = limiter();
      l.sync(table.entries());
      expect(l.heldRouteLimits).toBe(0);
      for (let i = 0; i < 20; i++) l.take(entry('h7'), 1);
      expect(refusal(() => l.admitRequest(entry('h7'))).limit).toMatchObject({ scope: 'integration', name: 'h7' });
      expect(l.heldRouteLimits).toBe(1);
      // A batch of the whole burst on another first request: taken whole, one more refused.
      l.take(entry('h8'), 20);
      expect(() => l.take(entry('h8'), 1)).toThrow(LimitError);
    });

    it('keeps a bucket created at a first request across a reload, as a held one', () => {
      const routes = hooks(10, limited);
      const { l } = limiter();
      l.sync(tableOf(...routes).table.entries());
      l.take(tableOf(...routes).entry('h1'), 20);
      const again = tableOf(...routes);
      l.sync(again.table.entries());
      expect(() => l.take(again.entry('h1'), 1)).toThrow(LimitError);
      expect(l.heldRouteLimits).toBe(1);
    });

    it('gives a route unused before fewer replicas what the eager bucket held: its old share, not the new one', () => {
      const { table, entry } = tableOf(...hooks(5, limited));
      const { l } = limiter(2);
      l.sync(table.entries());
      l.setReplicas(1);
      // The bucket held 20/2 when the second replica left; it refills at 10/s from there.
      l.take(entry('h2'), 10);
      expect(() => l.take(entry('h2'), 1)).toThrow(LimitError);
      nowMs = 1000;
      l.take(entry('h2'), 10);
      expect(() => l.take(entry('h2'), 1)).toThrow(LimitError);
    });

    it('gives a route unused before a larger burst (a reload) its old burst, refilled at the new rate', () => {
      const { l } = limiter();
      l.sync(tableOf(...hooks(5, limited)).table.entries());
      const raised = tableOf(...hooks(5, { eventsPerSecond: 10, eventsBurst: 40 }));
      l.sync(raised.table.entries());
      l.take(raised.entry('h3'), 20);
      expect(() => l.take(raised.entry('h3'), 1)).toThrow(LimitError);
      nowMs = 2000;
      l.take(raised.entry('h3'), 20);
    });

    it('does the same for a single route updated in place (update)', () => {
      const { l } = limiter();
      const before = tableOf(...hooks(5, limited));
      l.sync(before.table.entries());
      const after = tableOf(...hooks(5, { eventsPerSecond: 10, eventsBurst: 40 }));
      l.update([before.entry('h4')], [after.entry('h4')]);
      l.take(after.entry('h4'), 20);
      expect(() => l.take(after.entry('h4'), 1)).toThrow(LimitError);
      // A request that began before the update (the old entry) spends the same bucket.
      expect(() => l.take(before.entry('h4'), 1)).toThrow(LimitError);
    });
  });

  it('names the standalone file fields in file mode', () => {
    const entry = { kind: 'WebhookIntegration', name: 'demo', namespace: 'default' } as const;
    expect(fieldFor({ scope: 'integration', resource: 'events' }, entry, 'file')).toContain(
      'routes[].limits.eventsPerSecond',
    );
    expect(fieldFor({ scope: 'namespace', resource: 'dataPoints' }, entry, 'file')).toContain(
      'routes[].limits.namespace.dataPointsPerSecond',
    );
  });
});
