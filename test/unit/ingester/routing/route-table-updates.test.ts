/**
 * RouteTable.apply: a change to single routes replaces only their entries (the others stay the
 * same objects), voids what the table remembered of the replaced route, keeps the API key
 * identities right, and hands a change that a name taken twice would decide back to a full build.
 */
import type { Route } from '../../../../api/route.js';
import { sha256Hex } from '../../../../api/verifiers.js';
import { ActivityRecorder } from '../../../../ingester/activity/recorder.js';
import { LimitError } from '../../../../ingester/core/errors.js';
import { TenantLimiter } from '../../../../ingester/limits/tenant-limiter.js';
import { newVerifiedCache } from '../../../../ingester/routing/credentials.js';
import { RouteTable, type RouteEntry } from '../../../../ingester/routing/route-table.js';

const webhook = (name: string, password: string, extra: Partial<Route> = {}): Route => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace: 'ns',
  credentials: [{ username: 'u', secret: { sha256: sha256Hex(password) } }],
  ...extra,
});
const apiKey = (name: string, namespace: string, username = namespace): Route => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'ApiKey',
  name,
  namespace,
  credentials: [{ username, secret: { sha256: sha256Hex(`${namespace}_${name}`) } }],
});
const build = (routes: Record<string, Route>) =>
  RouteTable.build(
    Object.entries(routes).map(([source, route]) => ({ source, route })),
    { allowPlaintext: false },
  );
const auth = (table: RouteTable, name: string, password: string) =>
  table.authenticateWebhook(name, 'u', password, newVerifiedCache());

describe('RouteTable.apply', () => {
  it('replaces a rotated route and leaves every other entry the same object', async () => {
    const { table } = build({ s1: webhook('a', 'old'), s2: webhook('b', 'b-pw'), s3: apiKey('k', 'ns') });
    const b = table.webhook('b');
    const applied = table.apply([{ source: 's1', input: { source: 's1', route: webhook('a', 'new') } }]);
    expect(applied?.removed.map((e) => e.name)).toEqual(['a']);
    expect(applied?.added.map((e) => e.name)).toEqual(['a']);
    expect(await auth(table, 'a', 'new')).toBeDefined();
    expect(await auth(table, 'a', 'old')).toBeUndefined();
    expect(table.webhook('b')).toBe(b);
    expect(table.authenticateApiKey('ns_k', undefined)).toBeDefined();
    expect(table.size).toEqual({ webhooks: 2, apiKeys: 1 });
  });

  it('forgets a remembered Authorization header once its route is replaced', async () => {
    const { table } = build({ s1: webhook('a', 'old') });
    const key = table.headerKey('a', 'Basic x');
    await table.authenticateWebhook('a', 'u', 'old', newVerifiedCache(), Date.now(), key);
    expect(table.knownHeader(key)).toBeDefined();
    table.apply([{ source: 's1', input: { source: 's1', route: webhook('a', 'new') } }]);
    expect(table.knownHeader(key)).toBeUndefined();
  });

  it('adds and deletes routes, and keeps the API key identities of what remains', () => {
    const { table } = build({ k1: apiKey('k1', 'ns-a', 'shared'), k2: apiKey('k2', 'ns-b', 'shared') });
    expect(table.apiKeyIdentity('x', 'shared')).toBe('ns-a,ns-b');
    table.apply([{ source: 'k2' }, { source: 'w', input: { source: 'w', route: webhook('w', 'pw') } }]);
    expect(table.apiKeyIdentity('x', 'shared')).toBe('ns-a');
    expect(table.apiKeyIdentity('ns-b_k2', undefined)).toBeUndefined();
    expect(table.authenticateApiKey('ns-b_k2', undefined)).toBeUndefined();
    expect(table.size).toEqual({ webhooks: 1, apiKeys: 1 });
    table.apply([{ source: 'k1' }]);
    expect(table.apiKeyIdentity('x', 'shared')).toBeUndefined();
    expect(table.size).toEqual({ webhooks: 1, apiKeys: 0 });
  });

  it('takes a route out when its new document cannot be used, and says why', async () => {
    const { table } = build({ s1: webhook('a', 'pw') });
    const plain: Route = { ...webhook('a', 'pw'), credentials: [{ username: 'u', secret: { plain: 'pw' } }] };
    const applied = table.apply([{ source: 's1', input: { source: 's1', route: plain } }]);
    expect(applied?.skipped[0]?.reason).toMatch(/plaintext/);
    expect(await auth(table, 'a', 'pw')).toBeUndefined();
  });

  it('hands a change back for a full build when a name is published twice', () => {
    const { table } = build({ s1: webhook('a', 'pw') });
    expect(table.apply([{ source: 's2', input: { source: 's2', route: webhook('a', 'other') } }])).toBeUndefined();
    const twice = build({ s1: webhook('a', 'pw'), s2: webhook('a', 'other') });
    expect(twice.skipped).toHaveLength(1);
    // The route waiting for the name decides: only a full build (in the source's order) gives it.
    expect(twice.table.apply([{ source: 's1' }])).toBeUndefined();
  });
});

describe('limits and activity across an update of one route', () => {
  it("keeps the updated route's bucket and record, re-resolves its namespace, and drops a deleted route's", () => {
    let nowMs = 0;
    const limiter = new TenantLimiter({ mode: 'kubernetes', now: () => nowMs });
    const activity = new ActivityRecorder(() => 1_700_000_000_000);
    const limited = { limits: { eventsPerSecond: 1, eventsBurst: 2 } };
    const { table } = build({ s1: webhook('a', 'old', limited), s2: webhook('b', 'pw') });
    limiter.sync(table.entries());
    activity.sync(table.entries());
    limiter.take(table.webhook('a') as RouteEntry, 2);
    activity.accepted(table.webhook('a') as RouteEntry, 2);
    activity.accepted(table.webhook('b') as RouteEntry, 1);

    const applied = table.apply([{ source: 's1', input: { source: 's1', route: webhook('a', 'new', limited) } }]);
    limiter.update(applied?.removed ?? [], applied?.added ?? []);
    activity.update(applied?.removed ?? [], applied?.added ?? []);
    const a = table.webhook('a') as RouteEntry;
    expect(() => limiter.take(a, 1)).toThrow(LimitError);
    activity.accepted(a, 1);
    expect(activity.report().webhookIntegrations.find((w) => w.name === 'a')?.eventsLastHour).toBe(3);

    // A namespace limit the new document lowers applies to its neighbours at once.
    const lowered = { limits: { namespace: { eventsPerSecond: 1, eventsBurst: 1 } } };
    const next = table.apply([{ source: 's1', input: { source: 's1', route: webhook('a', 'new', lowered) } }]);
    limiter.update(next?.removed ?? [], next?.added ?? []);
    activity.update(next?.removed ?? [], next?.added ?? []);
    limiter.take(table.webhook('b') as RouteEntry, 1);
    expect(() => limiter.take(table.webhook('b') as RouteEntry, 1)).toThrow(LimitError);

    const gone = table.apply([{ source: 's1' }]);
    limiter.update(gone?.removed ?? [], gone?.added ?? []);
    activity.update(gone?.removed ?? [], gone?.added ?? []);
    expect(activity.report().webhookIntegrations.map((w) => w.name)).toEqual(['b']);
    nowMs += 10_000;
    // Published again later: a new, full bucket.
    const back = table.apply([{ source: 's1', input: { source: 's1', route: webhook('a', 'new', limited) } }]);
    limiter.update(back?.removed ?? [], back?.added ?? []);
    expect(() => limiter.take(table.webhook('a') as RouteEntry, 2)).not.toThrow();
  });
});
