/**
 * The operator and the ingester against a real kube-apiserver: kubectl apply a resource, then
 * drive the ingester over HTTP with the credentials the operator wrote.
 */
import { spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { jest } from '@jest/globals';
import {
  apply,
  KUBECONFIG,
  kubectl,
  postEvent,
  type Proc,
  readSecret,
  secretValue as decode,
  webhookReady as readyOf,
} from './support/cluster.js';
import { operatorSuite } from './support/suite.js';
import { ROOT } from '../support/paths.js';
import { waitFor } from '../support/waiting.js';
import { basic } from '../support/credentials.js';

jest.setTimeout(120_000);

/** Stops or starts the test API server in place (same data, same port). */
const restartCluster = (action: 'stop' | 'start'): Promise<number> =>
  new Promise((resolvePromise) => {
    const child = spawn('bash', [resolve(ROOT, `test/cluster/${action}.sh`), dirname(KUBECONFIG)], { stdio: 'ignore' });
    child.on('close', (code) => resolvePromise(code ?? -1));
  });

const suite = operatorSuite('team-a', 'team-b');
const { system, core, custom } = suite;
const [teamA, teamB] = suite.tenants;
let operator: Proc;
let ingester: Proc;

const getWi = async (ns: string, name: string) =>
  (await custom.getNamespacedCustomObject({
    group: 'intake.dev',
    version: 'v1alpha1',
    namespace: ns,
    plural: 'webhookintegrations',
    name,
  })) as {
    status?: {
      url?: string;
      integrationName?: string;
      credentialsSecret?: string;
      observedGeneration?: number;
      conditions?: Array<{ type: string; status: string; reason: string }>;
    };
    metadata: { generation: number };
  };

const webhook = (ns: string, name: string, spec = '{}') => `apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: ${name}, namespace: ${ns}}
spec: ${spec}
`;

async function credentialsOf(ns: string, name: string, timeoutMs = 5000) {
  const secret = await waitFor(
    `credentials Secret for ${ns}/${name}`,
    () => readSecret(ns, `intake-webhook-${name}`),
    timeoutMs,
  );
  return {
    username: decode(secret, 'username'),
    password: decode(secret, 'password'),
    authorization: decode(secret, 'authorization'),
    url: decode(secret, 'url'),
    secret,
  };
}

beforeAll(async () => {
  operator = await suite.startOperator();
  ingester = await suite.startIngester();
});

describe('WebhookIntegration', () => {
  it('publishes credentials and a route within 2 s of kubectl apply', async () => {
    const started = Date.now();
    await apply(webhook(teamA, 'alerts'));
    const creds = await credentialsOf(teamA, 'alerts');
    await waitFor('Ready', async () => (await readyOf(teamA, 'alerts'))?.status === 'True', 2000);
    await waitFor(
      'event accepted',
      async () => (await postEvent(ingester.url, 'alerts', creds.authorization)) === 200,
      2000,
    );
    expect(Date.now() - started).toBeLessThan(2000 + 500);
    const wi = await getWi(teamA, 'alerts');
    expect(wi.status).toMatchObject({
      integrationName: 'alerts',
      url: 'https://intake.test/events/webhook_alerts',
      credentialsSecret: 'intake-webhook-alerts',
      observedGeneration: wi.metadata.generation,
    });
    expect(creds.url).toBe('https://intake.test/events/webhook_alerts');
    expect(creds.authorization).toBe(basic(creds.username, creds.password));
    expect(await postEvent(ingester.url, 'alerts', basic('alerts', 'wrong'))).toBe(401);
  });

  it('writes route Secrets that hold verifiers only', async () => {
    const creds = await credentialsOf(teamA, 'alerts');
    const routes = await core.listNamespacedSecret({ namespace: system, labelSelector: 'intake.dev/route=true' });
    const all = routes.items.map((s) => decode(s, 'route.json')).join('\n');
    expect(all).toContain('"name":"alerts"');
    expect(all).not.toContain(creds.password);
  });

  it('uses a referenced Secret as is', async () => {
    await apply(`apiVersion: v1
kind: Secret
metadata: {name: my-creds, namespace: ${teamA}}
stringData: {username: grafana, password: chosen-by-me}
`);
    await apply(webhook(teamA, 'byref', '{credentials: {secretRef: {name: my-creds}}}'));
    await waitFor(
      'accepted with the referenced password',
      async () => (await postEvent(ingester.url, 'byref', basic('grafana', 'chosen-by-me'))) === 200,
      5000,
    );
    expect((await getWi(teamA, 'byref')).status?.credentialsSecret).toBe('my-creds');
    const secret = await readSecret(teamA, 'my-creds');
    expect(secret?.metadata?.ownerReferences).toBeUndefined();
  });

  it('reports SecretNotFound for a missing referenced Secret', async () => {
    await apply(webhook(teamA, 'noref', '{credentials: {secretRef: {name: does-not-exist}}}'));
    await waitFor('SecretNotFound', async () => (await readyOf(teamA, 'noref'))?.reason === 'SecretNotFound', 5000);
    expect(await readyOf(teamA, 'noref')).toMatchObject({ status: 'False', reason: 'SecretNotFound' });
  });

  it('gives a name to the oldest resource and moves it on when that one goes', async () => {
    await apply(webhook(teamA, 'first', '{name: contested}'));
    const winner = await credentialsOf(teamA, 'first');
    await apply(webhook(teamB, 'second', '{name: contested}'));
    await waitFor('NameConflict', async () => (await readyOf(teamB, 'second'))?.reason === 'NameConflict', 5000);
    const events = await kubectl([
      'get',
      'events',
      '-n',
      teamB,
      '--field-selector',
      'involvedObject.name=second',
      '-o',
      'jsonpath={.items[*].message}',
    ]);
    expect(events.stdout).toContain(`integration name contested is already used by ${teamA}/first`);
    expect(await postEvent(ingester.url, 'contested', winner.authorization)).toBe(200);
    await kubectl(['delete', 'webhookintegration', 'first', '-n', teamA]);
    const loser = await credentialsOf(teamB, 'second');
    await waitFor(
      'the later one takes the name',
      async () => (await postEvent(ingester.url, 'contested', loser.authorization)) === 200,
      5000,
    );
    expect((await readyOf(teamB, 'second'))?.status).toBe('True');
  });

  it('answers 403 while suspended', async () => {
    await apply(webhook(teamA, 'paused'));
    const creds = await credentialsOf(teamA, 'paused');
    await waitFor('accepted', async () => (await postEvent(ingester.url, 'paused', creds.authorization)) === 200, 5000);
    await apply(webhook(teamA, 'paused', '{suspend: true}'));
    await waitFor('403', async () => (await postEvent(ingester.url, 'paused', creds.authorization)) === 403, 5000);
    expect((await readyOf(teamA, 'paused'))?.reason).toBe('Suspended');
  });

  it('rotates: old and new both work inside the grace period, the old one not after', async () => {
    await apply(webhook(teamA, 'rotating', '{credentials: {rotationGracePeriod: 4s}}'));
    const old = await credentialsOf(teamA, 'rotating');
    await waitFor('accepted', async () => (await postEvent(ingester.url, 'rotating', old.authorization)) === 200, 5000);
    await kubectl(['annotate', 'webhookintegration', 'rotating', '-n', teamA, 'intake.dev/rotate=1', '--overwrite']);
    const fresh = await waitFor(
      'new password',
      async () => {
        const c = await credentialsOf(teamA, 'rotating');
        return c.password !== old.password ? c : undefined;
      },
      5000,
    );
    await waitFor(
      'new accepted',
      async () => (await postEvent(ingester.url, 'rotating', fresh.authorization)) === 200,
      3000,
    );
    expect(await postEvent(ingester.url, 'rotating', old.authorization)).toBe(200);
    await waitFor(
      'old rejected after the grace period',
      async () => (await postEvent(ingester.url, 'rotating', old.authorization)) === 401,
      10_000,
      200,
    );
    expect(await postEvent(ingester.url, 'rotating', fresh.authorization)).toBe(200);
  });

  it('on delete: 401 within 2 s, credentials garbage-collected, route gone', async () => {
    await apply(webhook(teamA, 'doomed'));
    const creds = await credentialsOf(teamA, 'doomed');
    await waitFor('accepted', async () => (await postEvent(ingester.url, 'doomed', creds.authorization)) === 200, 5000);
    const started = Date.now();
    await kubectl(['delete', 'webhookintegration', 'doomed', '-n', teamA, '--wait=false']);
    await waitFor('401', async () => (await postEvent(ingester.url, 'doomed', creds.authorization)) === 401, 2000);
    expect(Date.now() - started).toBeLessThan(2500);
    // The garbage collector notices a new CRD's resources on its discovery resync (every 30 s in
    // kube-controller-manager), so on a fresh cluster this can take that long.
    await waitFor(
      'credentials Secret collected',
      async () => (await readSecret(teamA, 'intake-webhook-doomed')) === undefined,
      60_000,
      250,
    );
    const routes = await core.listNamespacedSecret({ namespace: system, labelSelector: 'intake.dev/route=true' });
    expect(routes.items.map((s) => decode(s, 'route.json')).join()).not.toContain('"name":"doomed"');
  });

  it('repairs drift: an edited credentials Secret is restored, a deleted route Secret is republished', async () => {
    await apply(webhook(teamA, 'drift'));
    const creds = await credentialsOf(teamA, 'drift');
    await kubectl([
      'patch',
      'secret',
      'intake-webhook-drift',
      '-n',
      teamA,
      '--type=merge',
      '-p',
      '{"stringData":{"url":"https://evil.example"}}',
    ]);
    await waitFor(
      'url restored',
      async () => (await credentialsOf(teamA, 'drift')).url === 'https://intake.test/events/webhook_drift',
      5000,
    );
    const routes = await core.listNamespacedSecret({ namespace: system, labelSelector: 'intake.dev/route=true' });
    const route = routes.items.find((s) => decode(s, 'route.json').includes('"name":"drift"'));
    await kubectl(['delete', 'secret', route?.metadata?.name as string, '-n', system]);
    await waitFor(
      'route back',
      async () => {
        const list = await core.listNamespacedSecret({ namespace: system, labelSelector: 'intake.dev/route=true' });
        return list.items.some((s) => decode(s, 'route.json').includes('"name":"drift"'));
      },
      5000,
    );
    await waitFor(
      'accepted again',
      async () => (await postEvent(ingester.url, 'drift', creds.authorization)) === 200,
      3000,
    );
    expect((await credentialsOf(teamA, 'drift')).url).toBe('https://intake.test/events/webhook_drift');
    expect(await postEvent(ingester.url, 'drift', creds.authorization)).toBe(200);
  });

  it('regenerates deleted credentials, says so in an Event, and stops accepting the lost password', async () => {
    await apply(webhook(teamA, 'lost'));
    const old = await credentialsOf(teamA, 'lost');
    await waitFor('accepted', async () => (await postEvent(ingester.url, 'lost', old.authorization)) === 200, 5000);
    await kubectl(['delete', 'secret', 'intake-webhook-lost', '-n', teamA]);
    const fresh = await waitFor(
      'new credentials',
      async () => {
        const c = await credentialsOf(teamA, 'lost');
        return c.password !== old.password ? c : undefined;
      },
      5000,
    );
    await waitFor(
      'new accepted',
      async () => (await postEvent(ingester.url, 'lost', fresh.authorization)) === 200,
      3000,
    );
    expect(await postEvent(ingester.url, 'lost', old.authorization)).toBe(401);
    const events = await kubectl([
      'get',
      'events',
      '-n',
      teamA,
      '--field-selector',
      'involvedObject.name=lost',
      '-o',
      'jsonpath={.items[*].reason}',
    ]);
    // Becoming Ready is no Event (the status says it); the regenerated credentials are.
    expect(events.stdout.split(' ')).toEqual(['CredentialsRegenerated']);
  });

  it('is rejected by the API server when the name is invalid, with a clear message', async () => {
    const r = await kubectl(['apply', '-f', '-'], webhook(teamA, 'badname', '{name: "Bad Name!"}'));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/spec\.name.*should match/);
  });
});

describe('ingester in Kubernetes mode', () => {
  it('skips, logs and counts a route Secret it cannot parse, and keeps serving', async () => {
    await apply(`apiVersion: v1
kind: Secret
metadata: {name: garbage-route, namespace: ${system}, labels: {intake.dev/route: "true"}}
stringData: {route.json: "{not json"}
`);
    await waitFor(
      'skipped route counted',
      async () => /^intake_routes_skipped 1$/m.test(await (await fetch(`${ingester.adminUrl}/metrics`)).text()),
      5000,
    );
    expect((await fetch(`${ingester.adminUrl}/readyz`)).status).toBe(200);
    const creds = await credentialsOf(teamA, 'alerts');
    expect(await postEvent(ingester.url, 'alerts', creds.authorization)).toBe(200);
    await kubectl(['delete', 'secret', 'garbage-route', '-n', system]);
    await waitFor(
      'count back to 0',
      async () => /^intake_routes_skipped 0$/m.test(await (await fetch(`${ingester.adminUrl}/metrics`)).text()),
      5000,
    );
  });
});

describe('ApiKey', () => {
  it('accepts metrics with the generated key and labels series with the namespace', async () => {
    await apply(`apiVersion: intake.dev/v1alpha1
kind: ApiKey
metadata: {name: metrics, namespace: ${teamA}}
spec: {maxSeries: 50}
`);
    const secret = await waitFor('ApiKey Secret', () => readSecret(teamA, 'intake-apikey-metrics'), 5000);
    const key = decode(secret, 'apiKey');
    expect(key).toMatch(new RegExp(`^${teamA}_[0-9a-f]{40}$`));
    await waitFor(
      'metric accepted',
      async () => {
        const res = await fetch(`${ingester.url}/v1/integrations/metrics`, {
          method: 'POST',
          headers: { apikey: key, 'content-type': 'application/json' },
          body: JSON.stringify({
            metric: 'queue.depth',
            data: 3,
            source: 'worker-1',
            tags: { namespace: 'kube-system' },
          }),
        });
        return res.status === 200;
      },
      3000,
    );
    const exposition = await (await fetch(`${ingester.adminUrl}/metrics/ingested`)).text();
    expect(exposition).toContain(
      `queue_depth{key="",namespace="${teamA}",source="worker-1",tag_namespace="kube-system"} 3`,
    );
  });
});

describe('operator lifecycle', () => {
  it('converges after a restart mid-stream', async () => {
    await operator.stop();
    await apply(webhook(teamB, 'while-down'));
    operator = await suite.startOperator();
    const creds = await credentialsOf(teamB, 'while-down');
    await waitFor(
      'accepted',
      async () => (await postEvent(ingester.url, 'while-down', creds.authorization)) === 200,
      5000,
    );
    expect(await postEvent(ingester.url, 'while-down', creds.authorization)).toBe(200);
    expect((await readyOf(teamB, 'while-down'))?.status).toBe('True');
  });

  it('recovers when the API server restarts; the ingester keeps serving meanwhile', async () => {
    const creds = await credentialsOf(teamA, 'alerts');
    expect(await restartCluster('stop')).toBe(0);
    expect(await postEvent(ingester.url, 'alerts', creds.authorization)).toBe(200);
    expect(await restartCluster('start')).toBe(0);
    await apply(webhook(teamB, 'after-restart'));
    // The operator's watches retry with a backoff that reaches 10 s while the API server is down
    // (kube/informer.ts): the new integration is seen at the next attempt.
    const fresh = await credentialsOf(teamB, 'after-restart', 20_000);
    await waitFor(
      'accepted after the restart',
      async () => (await postEvent(ingester.url, 'after-restart', fresh.authorization)) === 200,
      30_000,
      200,
    );
    expect(await postEvent(ingester.url, 'alerts', creds.authorization)).toBe(200);
  });

  it('runs one leader among two replicas; the other takes over when it stops', async () => {
    await operator.stop();
    const leaderMetric = async (p: Proc) =>
      /^intake_operator_leader 1$/m.test(await (await fetch(`${p.adminUrl}/metrics`)).text());
    const a = await suite.startOperator(['--leader-elect']);
    await waitFor('a leads', () => leaderMetric(a), 10_000, 100);
    const b = await suite.startOperator(['--leader-elect']);
    await new Promise((r) => setTimeout(r, 3000));
    expect(await leaderMetric(b)).toBe(false);
    await a.stop();
    await waitFor('b leads', () => leaderMetric(b), 10_000, 100);
    await apply(webhook(teamB, 'after-failover'));
    const creds = await credentialsOf(teamB, 'after-failover');
    await waitFor(
      'accepted',
      async () => (await postEvent(ingester.url, 'after-failover', creds.authorization)) === 200,
      5000,
    );
    operator = b;
  });
});
