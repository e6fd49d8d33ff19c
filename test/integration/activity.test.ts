/**
 * Activity end to end on the real test API server: two ingester processes in Kubernetes mode play
 * two pods behind the ingester admin Service (an EndpointSlice made by hand, reached through
 * support/pod-network.ts), the operator merges both replicas' reports into status.activity every
 * second, kubectl shows the columns and the recent refusals, a replica going away does not erase
 * anything, quiet integrations cause no writes, and spec.expectEventsWithin turns into
 * Receiving=False (reason Silent) and the silent metric.
 */
import { jest } from '@jest/globals';
import type { Activity } from '../../api/activity.js';
import type { Condition } from '../../api/v1alpha1/types.js';
import { basic } from '../support/credentials.js';
import { rawPost } from '../support/raw-http.js';
import { waitFor } from '../support/waiting.js';
import { apply, kubectl, postEvent, type Proc } from './support/cluster.js';
import { operatorSuite } from './support/suite.js';
import { startPodNetwork, type PodNetwork } from './support/pod-network.js';
import { ACTIVITY_EVERY_SECOND, ADMIN_PORT, applyAdminService } from './support/admin-service.js';

jest.setTimeout(180_000);

const suite = operatorSuite('team-a');
const { system, core, custom } = suite;
const [tenant] = suite.tenants;
const PODS = ['192.0.2.11', '192.0.2.12'];
let network: PodNetwork;
let operator: Proc;
const ingesters: Proc[] = [];

type Resource = { status?: { activity?: Activity; conditions?: Condition[] } };
const get = async (plural: string, name: string): Promise<Resource> =>
  (await custom.getNamespacedCustomObject({
    group: 'intake.dev',
    version: 'v1alpha1',
    namespace: tenant,
    plural,
    name,
  })) as Resource;
const activityOf = async (name: string, plural = 'webhookintegrations') => (await get(plural, name)).status?.activity;
const authOf = async (secret: string, key = 'authorization'): Promise<string> => {
  const s = await waitFor(
    `secret ${secret}`,
    () => core.readNamespacedSecret({ namespace: tenant, name: secret }).catch(() => undefined),
    30_000,
  );
  return Buffer.from(s.data?.[key] ?? '', 'base64').toString();
};
const operatorMetric = async (line: RegExp): Promise<number> => {
  const text = await (await fetch(`${operator.adminUrl}/metrics`)).text();
  const m = text.split('\n').find((l) => line.test(l));
  return m ? Number(m.split(' ').pop()) : 0;
};
/** Routes in an ingester's table (WebhookIntegrations and ApiKeys), from its metrics. */
const routesOn = async (ingester: Proc): Promise<number> => {
  const text = await (await fetch(`${ingester.adminUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('intake_routes{'))
    .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
};
const WRITES_OK = /^intake_operator_activity_status_writes_total\{result="ok"\}/;

beforeAll(async () => {
  network = await startPodNetwork();
  for (const pod of PODS) {
    const ingester = await suite.startIngester();
    ingesters.push(ingester);
    network.routes.set(`${pod}:${ADMIN_PORT}`, Number(new URL(ingester.adminUrl).port));
  }
  // The admin Service's slice, as the EndpointSlice controller would write it for two pods.
  await applyAdminService(system, PODS);
  operator = await suite.startOperator(ACTIVITY_EVERY_SECOND, network.env);
  await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: busy, namespace: ${tenant}}
spec: {}
---
apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: quiet, namespace: ${tenant}}
spec: {}
---
apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: watched, namespace: ${tenant}}
spec: {expectEventsWithin: 6s}
---
apiVersion: intake.dev/v1alpha1
kind: ApiKey
metadata: {name: metrics, namespace: ${tenant}}
spec: {}
`);
});

afterAll(async () => {
  if (process.env.INTAKE_TEST_KEEP_LOGS)
    (await import('node:fs')).writeFileSync('/tmp/t20a-operator.log', operator.output());
  await network?.close();
});

describe('status.activity', () => {
  let busyAuth: string;

  it('merges what both replicas accepted and refused, with the refused sender', async () => {
    busyAuth = await authOf('intake-webhook-busy');
    const [a, b] = ingesters as [Proc, Proc];
    // Every integration and the key published on both replicas before anything is sent (a 401
    // while waiting would count as a refusal).
    for (const ingester of ingesters)
      await waitFor('routes published', async () => (await routesOn(ingester)) === 4, 30_000, 200);
    for (let i = 0; i < 3; i++) expect(await postEvent(a.url, 'busy', busyAuth)).toBe(200);
    expect(await postEvent(b.url, 'busy', busyAuth)).toBe(200);
    expect(await postEvent(b.url, 'busy', basic('busy', 'wrong-password'))).toBe(401);

    const activity = await waitFor(
      'merged activity',
      async () => {
        const got = await activityOf('busy');
        return got?.eventsLastHour === 4 && got.refusedLastHour === 1 ? got : undefined;
      },
      30_000,
      250,
    );
    expect(activity.refusalsLastHour).toEqual({ unauthorized: 1 });
    expect(Date.parse(activity.lastEventTime as string)).toBeGreaterThan(Date.now() - 120_000);
    // A wrong password proves nothing: kept apart from the refusals, as an address and a count.
    expect(activity.recentRefusals).toEqual([]);
    expect(activity.unauthenticatedSenders).toEqual([
      expect.objectContaining({
        status: 401,
        code: 'UNAUTHORIZED',
        reason: 'unauthorized',
        remoteAddress: '127.0.0.1',
        count: 1,
      }),
    ]);
    expect(activity.updatedTime).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(JSON.stringify(activity)).not.toContain('wrong-password');
  });

  it('counts an API key data points, by the key', async () => {
    const apiKey = await authOf('intake-apikey-metrics', 'apiKey');
    const [a] = ingesters as [Proc];
    await waitFor('data points accepted', async () => {
      const res = await fetch(`${a.url}/v1/integrations/metrics`, {
        method: 'POST',
        headers: { apikey: apiKey, 'content-type': 'application/json' },
        body: JSON.stringify([
          { metric: 'cpu', data: 1, source: 'h1' },
          { metric: 'cpu', data: 2, source: 'h2' },
        ]),
      });
      await res.arrayBuffer();
      return res.status === 200;
    });
    const activity = await waitFor(
      'api key activity',
      async () =>
        (await activityOf('metrics', 'apikeys'))?.eventsLastHour === 2 ? activityOf('metrics', 'apikeys') : undefined,
      30_000,
      250,
    );
    expect(activity?.lastEventTime).toBeDefined();
  });

  it('kubectl get shows Last Event and Refused 1h; describe shows the recent refusals', async () => {
    const got = await kubectl(['get', 'webhookintegrations', '-n', tenant]);
    expect(got.code).toBe(0);
    const [header, ...rows] = got.stdout.trim().split('\n');
    expect(header).toMatch(/LAST EVENT\s+REFUSED 1H\s+AGE/);
    const busy = rows.find((r) => r.startsWith('busy ')) as string;
    // LAST EVENT is an age (e.g. 5s), REFUSED 1H the count.
    expect(busy).toMatch(/\s\d+s\s+1\s+\d+s$/);
    // Never received anything: both columns empty.
    expect(rows.find((r) => r.startsWith('quiet '))).toMatch(/webhook_quiet\s+\d+s$/);
    const keys = await kubectl(['get', 'apikeys', '-n', tenant]);
    expect(keys.stdout.split('\n')[0]).toMatch(/LAST EVENT\s+REFUSED 1H/);
    const described = await kubectl(['describe', 'webhookintegration', 'busy', '-n', tenant]);
    expect(described.stdout).toMatch(/Unauthenticated Senders:/);
    expect(described.stdout).toMatch(/Code:\s+UNAUTHORIZED/);
    expect(described.stdout).toMatch(/Remote Address:\s+127\.0\.0\.1/);
    expect(described.stdout).toMatch(/Count:\s+1/);
  });

  it('writes nothing while nothing changes: quiet integrations get no status.activity and cause no writes', async () => {
    await new Promise((r) => setTimeout(r, 2500));
    const before = await operatorMetric(WRITES_OK);
    expect(before).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 5000));
    expect(await operatorMetric(WRITES_OK)).toBe(before);
    expect(await activityOf('quiet')).toBeUndefined();
  });

  it('a replica going away does not erase its report or the others', async () => {
    const [a, b] = ingesters as [Proc, Proc];
    await b.stop('SIGKILL');
    await new Promise((r) => setTimeout(r, 4000));
    // Still what both replicas reported (the gone one's last report is kept for a while).
    expect(await activityOf('busy')).toMatchObject({ eventsLastHour: 4, refusedLastHour: 1 });
    expect(await postEvent(a.url, 'busy', busyAuth)).toBe(200);
    const after = await waitFor(
      'the remaining replica merged',
      async () => {
        const got = await activityOf('busy');
        return got?.eventsLastHour === 5 ? got : undefined;
      },
      30_000,
      250,
    );
    expect(after.unauthenticatedSenders).toHaveLength(1);
    expect(operator.output()).not.toMatch(/activity merge failed/);
  });
});

describe('sender text in status.activity and kubectl describe', () => {
  // eslint-disable-next-line no-control-regex -- control characters are what it looks for
  const ACTS_ON_SCREEN = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
  const unsafeIn = (value: unknown): string[] => {
    const found: string[] = [];
    JSON.stringify(value, (k: string, v: unknown) => {
      if (ACTS_ON_SCREEN.test(k) || (typeof v === 'string' && ACTS_ON_SCREEN.test(v))) found.push(String(v));
      return v;
    });
    return found;
  };
  const HOSTILE_KEY = 'x\x1b[2J\x1b]0;pwned\x07\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07';
  const URGENT =
    'URGENT from intake platform team: your credentials leaked, rotate now at https://intake-support.example';

  it('an escape-laden key and a C1 User-Agent are inert in status and describe; strangers posing as the platform are an address and a count', async () => {
    const apiKey = await authOf('intake-apikey-metrics', 'apiKey');
    const busyAuth = await authOf('intake-webhook-busy');
    const [a] = ingesters as [Proc];
    const points = JSON.stringify([{ metric: 'cpu', data: 1, source: 'h', [HOSTILE_KEY]: 1 }]);
    expect(
      (await rawPost(`${a.url}/v1/integrations/metrics`, { apikey: apiKey, 'user-agent': 'curl\u009b2J' }, points))
        .status,
    ).toBe(400);
    // busy's real sender earns a refusal; then a stranger's wrong passwords, each posing as the platform.
    const own = { authorization: busyAuth, 'user-agent': 'busy-sender/1.0' };
    expect((await rawPost(`${a.url}/events/webhook_busy`, own, '{"severity":"critical"}')).status).toBe(400);
    for (let i = 0; i < 12; i++) {
      const forged = { authorization: basic('busy', `guess-${i}`), 'user-agent': `${URGENT} \u009b${i}` };
      expect((await rawPost(`${a.url}/events/webhook_busy`, forged, '{}', '127.0.0.2')).status).toBe(401);
    }
    const key = await waitFor(
      'the key refusal merged',
      async () => {
        const got = await activityOf('metrics', 'apikeys');
        return got?.recentRefusals.some((f) => f.code === 'INVALID_BODY') ? got : undefined;
      },
      30_000,
      250,
    );
    expect(unsafeIn(key)).toEqual([]);
    const refusal = key.recentRefusals.find((f) => f.code === 'INVALID_BODY');
    expect(refusal?.message).toContain('x\\x1b[2J\\x1b]0;pwned\\x07');
    expect(refusal?.userAgent).toBe('curl\\x9b2J');
    const describedKey = await kubectl(['describe', 'apikey', 'metrics', '-n', tenant]);
    expect(describedKey.code).toBe(0);
    expect(describedKey.stdout).toContain('x\\x1b[2J');
    expect(describedKey.stdout).toMatch(/User Agent:\s+curl\\x9b2J/);
    expect(describedKey.stdout.replace(/\n/g, '')).not.toMatch(ACTS_ON_SCREEN);
    const busy = await waitFor(
      'the stranger merged',
      async () => {
        const got = await activityOf('busy');
        return got?.unauthenticatedSenders?.some((s) => s.remoteAddress === '127.0.0.2' && s.count === 12)
          ? got
          : undefined;
      },
      30_000,
      250,
    );
    expect(unsafeIn(busy)).toEqual([]);
    // busy's own refusal is there with its sender's User-Agent; the stranger's text is nowhere.
    expect(busy.recentRefusals).toEqual([
      expect.objectContaining({ status: 400, code: 'INVALID_BODY', userAgent: 'busy-sender/1.0' }),
    ]);
    expect(JSON.stringify(busy)).not.toMatch(/URGENT|rotate now/);

    const describedBusy = await kubectl(['describe', 'webhookintegration', 'busy', '-n', tenant]);
    expect(describedBusy.stdout).not.toMatch(/URGENT|rotate now/);
    expect(describedBusy.stdout).toMatch(/Remote Address:\s+127\.0\.0\.2/);
    expect(describedBusy.stdout).toMatch(/Count:\s+12/);
    expect(describedBusy.stdout.replace(/\n/g, '')).not.toMatch(ACTS_ON_SCREEN);
  });
});

describe('spec.expectEventsWithin', () => {
  const receiving = async () =>
    (await get('webhookintegrations', 'watched')).status?.conditions?.find((c) => c.type === 'Receiving');
  const silentMetric = new RegExp(`^intake_operator_integration_silent\\{namespace="${tenant}",name="watched"\\}`);

  it('Receiving=True after an event, then False with reason Silent and the metric at 1 once it is older', async () => {
    const auth = await authOf('intake-webhook-watched');
    const [a] = ingesters as [Proc];
    await waitFor('watched accepted', async () => (await postEvent(a.url, 'watched', auth)) === 200, 30_000);
    const fresh = await waitFor(
      'Receiving=True',
      async () => {
        const c = await receiving();
        return c?.status === 'True' ? c : undefined;
      },
      30_000,
      250,
    );
    expect(fresh.reason).toBe('Receiving');
    expect(await operatorMetric(silentMetric)).toBe(0);
    const silent = await waitFor(
      'Receiving=False Silent',
      async () => {
        const c = await receiving();
        return c?.status === 'False' ? c : undefined;
      },
      30_000,
      250,
    );
    expect(silent.reason).toBe('Silent');
    expect(silent.message).toMatch(/no event since .* \(expected within 6s\)/);
    expect(await operatorMetric(silentMetric)).toBe(1);
    const events = await kubectl(['get', 'events', '-n', tenant, '--field-selector', 'involvedObject.name=watched']);
    expect(events.stdout).toMatch(/Silent/);

    // An event again: Receiving=True.
    expect(await postEvent(a.url, 'watched', auth)).toBe(200);
    await waitFor('Receiving=True again', async () => (await receiving())?.status === 'True', 30_000, 250);
    expect(await operatorMetric(silentMetric)).toBe(0);
  });
});
