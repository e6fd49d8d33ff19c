/**
 * The chart running for real (make test-cluster): `helm install` of charts/intake with the image
 * `make image` built, on the test cluster's node (make testcluster-node: kubelet, containerd,
 * kube-proxy, CoreDNS; nats-server and Alertmanager as pods in the namespace infra). The pods'
 * probes, security context, Services and DNS names are the real ones; the tests reach Services
 * by their ClusterIPs, routed to the node's network namespace.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { jest } from '@jest/globals';
import { activeAlerts } from '../e2e/support/alertmanager.js';
import { readStream, tally } from '../e2e/support/nats-server.js';
import {
  apply,
  createNamespace,
  kubeClients,
  kubectl,
  requireCluster,
  ROOT,
  uniqueName,
  waitFor,
} from '../integration/support/cluster.js';
import { helm, ok, podsOf, serviceUrl } from './support.js';

jest.setTimeout(300_000);
requireCluster();

const CHART = resolve(ROOT, 'charts/intake');
const version = (JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const release = uniqueName('node');
const ns = uniqueName('intake-node');
const tenant = uniqueName('tenant');
const tag = release.replace(/-/g, '_');
const stream = `EVENTS_${tag}`.toUpperCase();
const selector = `app.kubernetes.io/instance=${release}`;
const { core } = kubeClients();
const values = [
  '--set',
  'publicBaseUrl=https://intake.test',
  '--set',
  `operator.watchNamespaces={${tenant}}`,
  '--set',
  'image.repository=intake.local/intake',
  '--set',
  `image.tag=${version}`,
  '--set',
  'image.pullPolicy=Never',
  '--set',
  'sinks.jetstream.enabled=true',
  '--set',
  'sinks.jetstream.url=nats://nats.infra.svc:4222',
  '--set',
  `sinks.jetstream.stream=${stream}`,
  '--set',
  `sinks.jetstream.subjectPrefix=${tag}.events`,
  '--set',
  'destinations[0].name=alertmanager',
  '--set',
  'destinations[0].default=true',
  '--set',
  'destinations[0].alertmanager.urls={http://alertmanager.infra.svc:9093}',
  // The tests post before the operator has published new credentials: the guard would block them.
  '--set',
  'ingester.authThrottle.failures=1000000',
  '--set',
  'operator.resources.requests.cpu=10m',
  '--set',
  'ingester.resources.requests.cpu=10m',
];
let natsUrl = '';
let amUrl = '';
let ingestUrl = '';
let authorization = '';

async function post(body: Record<string, unknown>, idempotencyKey?: string): Promise<number> {
  const res = await fetch(`${ingestUrl}/events/webhook_node-hook`, {
    method: 'POST',
    headers: {
      authorization,
      'content-type': 'application/json',
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  await res.arrayBuffer();
  return res.status;
}

beforeAll(async () => {
  await createNamespace(ns);
  await createNamespace(tenant);
  natsUrl = (await serviceUrl('infra', 'nats', 'client')).replace('http://', 'nats://');
  amUrl = await serviceUrl('infra', 'alertmanager', 'http');
  const started = Date.now();
  await ok(helm(['install', release, CHART, '-n', ns, ...values, '--wait', '--timeout', '5m']));
  console.log(`helm install --wait: ${Date.now() - started} ms`);
  ingestUrl = await serviceUrl(ns, `${release}-intake-ingester`, 'ingest');
});

afterAll(async () => {
  await helm(['uninstall', release, '-n', ns, '--wait', '--timeout', '2m']);
  await kubectl(['delete', 'namespace', ns, tenant, '--wait=false']);
});

describe('charts/intake on a node', () => {
  it('runs the operator and two ingesters Ready through their probes, as 65532 on a read-only root filesystem', async () => {
    const pods = await podsOf(ns, selector);
    const ingesters = pods.filter((p) => p.metadata.labels['app.kubernetes.io/component'] === 'ingester');
    const operators = pods.filter((p) => p.metadata.labels['app.kubernetes.io/component'] === 'operator');
    expect(ingesters).toHaveLength(2);
    expect(operators.length).toBeGreaterThanOrEqual(1);
    for (const pod of pods) {
      expect(pod.status.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
      expect(pod.status.containerStatuses.every((c) => c.restartCount === 0)).toBe(true);
      // What the process itself sees, not only what the spec asks for; the image has no shell
      // or package manager (make image: only what Node needs); and a mapping worker process started
      // as the ingester starts it gets SCHED_IDLE there (chrt in the image, allowed by the pod's
      // security context and seccomp), and a prompt worker SCHED_BATCH with its threads at nice 19.
      const priorityModule = '/app/dist/api/mapping/worker-priority.js';
      const inWorker = `import(${JSON.stringify(priorityModule)}).then(p=>console.log(p.settleWorkerPriority('no chrt').policy))`;
      const probe =
        "const fs=require('fs');let w;try{fs.writeFileSync('/app/x','');w='writable'}catch(e){w=e.code}" +
        "const tools=['/bin/sh','/bin/bash','/bin/dash','/usr/bin/sh','/usr/bin/dpkg','/usr/bin/apt','/usr/bin/apt-get','/usr/bin/perl'].filter(p=>fs.existsSync(p));" +
        `import(${JSON.stringify(priorityModule)}).then(m=>{` +
        `const a=m.idleCommand([process.execPath,'-e',${JSON.stringify(inWorker)}]).argv;` +
        "const worker=require('child_process').execFileSync(a[0],a.slice(1),{encoding:'utf8'}).trim();" +
        `const b=m.promptCommand([process.execPath,'-e',${JSON.stringify(inWorker)}]).argv;` +
        "const prompt=require('child_process').execFileSync(b[0],b.slice(1),{encoding:'utf8'}).trim();" +
        'console.log(JSON.stringify({uid:process.getuid(),gid:process.getgid(),root:w,tools,worker,prompt}))})';
      const seen = JSON.parse(await ok(kubectl(['exec', '-n', ns, pod.metadata.name, '--', 'node', '-e', probe]))) as {
        uid: number;
        gid: number;
        root: string;
        tools: string[];
        worker: string;
        prompt: string;
      };
      expect(seen).toEqual({ uid: 65532, gid: 65532, root: 'EROFS', tools: [], worker: 'idle', prompt: 'batch' });
    }
    for (const pod of ingesters) {
      const logs = await ok(kubectl(['logs', '-n', ns, pod.metadata.name]));
      expect(logs).not.toMatch(/EROFS|EACCES|read-only file system/i);
    }
  });

  it('delivers an event posted through the ingester Service to JetStream and, as an alert, to the Alertmanager pod', async () => {
    await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: node-hook, namespace: ${tenant}}
spec: {}
`);
    const secret = await waitFor(
      'credentials',
      () => core.readNamespacedSecret({ namespace: tenant, name: 'intake-webhook-node-hook' }).catch(() => undefined),
      60_000,
      500,
    );
    authorization = Buffer.from(secret.data?.authorization ?? '', 'base64').toString();
    // Both replicas must know the credentials: the Service picks one per connection.
    await waitFor(
      'accepted by every replica',
      async () => {
        for (let i = 0; i < 6; i++)
          if (
            (await post({ source: 'node-01', severity: 'critical', type: 'NodeDown', description: `probe ${i}` })) !==
            200
          )
            return false;
        return true;
      },
      60_000,
      500,
    );
    const events = await readStream(natsUrl, stream);
    expect(events.length).toBeGreaterThan(0);
    expect(events[0]?.subject).toBe(`${tag}.events.${tenant}.node-hook`);
    expect(events[0]?.event).toMatchObject({
      source: 'node-01',
      type: 'NodeDown',
      namespace: tenant,
      integration: 'node-hook',
    });
    const alert = await waitFor(
      'alert in Alertmanager',
      async () => (await activeAlerts(amUrl)).find((a) => a.labels.namespace === tenant),
      60_000,
      500,
    );
    expect(alert.labels).toMatchObject({
      alertname: 'NodeDown',
      source: 'node-01',
      severity: 'critical',
      integration: 'node-hook',
    });
  });

  it('maps an Alertmanager notification (preset alertmanager) posted through the ingester Service to one JetStream event and one Alertmanager alert per alert; the resolved one clears its alert', async () => {
    await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: am-mapped, namespace: ${tenant}}
spec:
  mapping: {preset: alertmanager}
`);
    const secret = await waitFor(
      'credentials',
      () => core.readNamespacedSecret({ namespace: tenant, name: 'intake-webhook-am-mapped' }).catch(() => undefined),
      60_000,
      500,
    );
    const auth = Buffer.from(secret.data?.authorization ?? '', 'base64').toString();
    const startsAt = new Date(Date.now() - 60_000).toISOString();
    const alert = (instance: string, severity: string, status: 'firing' | 'resolved', fingerprint: string) => ({
      status,
      labels: { alertname: 'HighCPU', job: 'node', instance, severity },
      annotations: { summary: `CPU high on ${instance}` },
      startsAt,
      endsAt: status === 'resolved' ? new Date().toISOString() : '0001-01-01T00:00:00Z',
      generatorURL: 'http://prometheus/graph',
      fingerprint,
    });
    // What Alertmanager's webhook receiver posts (version 4): one notification for a group of alerts.
    const notification = (alerts: Array<ReturnType<typeof alert>>) => ({
      receiver: 'intake',
      status: alerts.some((a) => a.status === 'firing') ? 'firing' : 'resolved',
      version: '4',
      groupKey: '{}:{alertname="HighCPU"}',
      groupLabels: { alertname: 'HighCPU' },
      commonLabels: { alertname: 'HighCPU', job: 'node' },
      commonAnnotations: {},
      externalURL: 'http://alertmanager.example:9093',
      truncatedAlerts: 0,
      alerts,
    });
    const send = async (body: unknown, dryRun = false): Promise<{ status: number; body: Record<string, unknown> }> => {
      const res = await fetch(`${ingestUrl}/events/webhook_am-mapped${dryRun ? '?dryRun=true' : ''}`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const firing = notification([
      alert('web-1', 'critical', 'firing', 'f00d0001'),
      alert('web-2', 'warning', 'firing', 'f00d0002'),
    ]);
    // Both replicas must serve the mapping first (the Service picks one per connection); a dry run keeps nothing.
    await waitFor(
      'mapped by every replica',
      async () => {
        for (let i = 0; i < 6; i++) {
          const r = await send(firing, true);
          if (
            r.status !== 200 ||
            r.body.mapping !== 'preset alertmanager' ||
            (r.body.events as unknown[] | undefined)?.length !== 2
          )
            return false;
        }
        return true;
      },
      60_000,
      500,
    );
    expect(await send(firing)).toEqual({
      status: 200,
      body: { response: { processed: 2, cached: 0, received: 2 }, success: true, message: 'Processed 2 event(s)' },
    });

    // A notification's events are one message on <prefix>.<namespace>.<integration>.
    const subjects = [`${tag}.events.${tenant}.am-mapped`];
    const mapped = await waitFor(
      'two mapped events in the stream',
      async () => {
        const found = (await readStream(natsUrl, stream)).filter((e) => subjects.includes(e.subject));
        return found.length >= 2 ? found : undefined;
      },
      30_000,
      500,
    );
    expect(mapped).toHaveLength(2);
    const bySource = new Map(mapped.map((e) => [e.event.source, e.event]));
    expect(bySource.get('web-1')).toMatchObject({
      namespace: tenant,
      integration: 'am-mapped',
      source: 'web-1',
      severity: 5,
      severity_name: 'critical',
      class: 'HighCPU',
      type: 'node',
      manager: 'Alertmanager',
      external_id: 'f00d0001',
      signature: 'alertmanager:f00d0001',
      description: 'CPU high on web-1',
      agent_time: startsAt,
    });
    expect(bySource.get('web-1')?.custom_info).toMatchObject({
      status: 'firing',
      receiver: 'intake',
      groupKey: '{}:{alertname="HighCPU"}',
      labels: { instance: 'web-1', severity: 'critical' },
    });
    expect(bySource.get('web-2')).toMatchObject({
      source: 'web-2',
      severity: 2,
      severity_name: 'warning',
      signature: 'alertmanager:f00d0002',
      description: 'CPU high on web-2',
    });

    // In Alertmanager: an alert per mapped event, named by the event's type (the job), with its identity as labels.
    const ours = async () =>
      (await activeAlerts(amUrl)).filter((a) => a.labels.namespace === tenant && a.labels.integration === 'am-mapped');
    const alerts = await waitFor(
      'two alerts in Alertmanager',
      async () => ((await ours()).length === 2 ? ours() : undefined),
      60_000,
      500,
    );
    const web1 = alerts.find((a) => a.labels.source === 'web-1');
    expect(web1?.labels).toEqual({
      alertname: 'node',
      signature: 'alertmanager:f00d0001',
      source: 'web-1',
      severity: 'critical',
      integration: 'am-mapped',
      namespace: tenant,
    });
    expect(web1?.annotations).toMatchObject({
      description: 'CPU high on web-1',
      manager: 'Alertmanager',
      class: 'HighCPU',
      external_id: 'f00d0001',
    });
    expect(alerts.find((a) => a.labels.source === 'web-2')?.labels).toMatchObject({
      severity: 'warning',
      signature: 'alertmanager:f00d0002',
    });

    // Alertmanager's resolved notification for web-1: a severity-0 clear under the same signature resolves its alert only.
    expect((await send(notification([alert('web-1', 'critical', 'resolved', 'f00d0001')]))).status).toBe(200);
    const clear = await waitFor(
      'the clear in the stream',
      async () =>
        (await readStream(natsUrl, stream)).find((e) => subjects.includes(e.subject) && e.event.severity === 0),
      30_000,
      500,
    );
    expect(clear.event).toMatchObject({ source: 'web-1', signature: 'alertmanager:f00d0001', severity_name: 'clear' });
    const left = await waitFor(
      'web-1 resolved in Alertmanager',
      async () => {
        const now = await ours();
        return now.length === 1 ? now : undefined;
      },
      60_000,
      500,
    );
    expect(left[0]?.labels).toMatchObject({ source: 'web-2', signature: 'alertmanager:f00d0002' });

    // A notification the preset cannot map: 422, kept as a dead letter (on the bus with JetStream),
    // and no write refused by the read-only root filesystem on the way.
    const unmappable = await fetch(`${ingestUrl}/events/webhook_am-mapped`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify({ receiver: 'intake', alerts: [] }),
      signal: AbortSignal.timeout(10_000),
    });
    expect((await unmappable.json()) as Record<string, unknown>).toMatchObject({ success: false });
    expect(unmappable.status).toBe(422);
    expect(unmappable.headers.get('x-intake-dead-letter-id')).toMatch(/\S/);
    for (const pod of (await podsOf(ns, selector)).filter(
      (p) => p.metadata.labels['app.kubernetes.io/component'] === 'ingester',
    )) {
      expect(await ok(kubectl(['logs', '-n', ns, pod.metadata.name]))).not.toMatch(
        /EROFS|EACCES|read-only file system/i,
      );
    }
  });

  it('loses nothing it acknowledged while an ingester pod is deleted under load; the sender sees only retryable answers', async () => {
    const victim = (await podsOf(ns, selector)).find(
      (p) => p.metadata.labels['app.kubernetes.io/component'] === 'ingester',
    );
    const load = sendUnderLoad('delete');
    let sent: Sent;
    try {
      await new Promise((r) => setTimeout(r, 3_000));
      await ok(kubectl(['delete', 'pod', '-n', ns, victim?.metadata.name ?? '', '--wait=false']));
      await waitFor(
        'a replacement ingester Ready',
        async () => {
          const ingesters = (await podsOf(ns, selector)).filter(
            (p) => p.metadata.labels['app.kubernetes.io/component'] === 'ingester' && !p.metadata.deletionTimestamp,
          );
          return (
            ingesters.length === 2 &&
            ingesters.every(
              (p) =>
                p.metadata.name !== victim?.metadata.name &&
                p.status.conditions.find((c) => c.type === 'Ready')?.status === 'True',
            )
          );
        },
        180_000,
        1000,
      );
      await new Promise((r) => setTimeout(r, 3_000));
    } finally {
      sent = await load.stop();
    }
    await checkLoad(sent);
  });

  it('rolls the ingesters on helm upgrade under load without a non-retryable answer or a lost event', async () => {
    const before = new Set((await podsOf(ns, selector)).map((p) => p.metadata.name));
    const load = sendUnderLoad('upgrade');
    let sent: Sent;
    try {
      await new Promise((r) => setTimeout(r, 3_000));
      // A changed value that changes the pod template (a number: the chart quotes annotation values).
      await ok(
        helm([
          'upgrade',
          release,
          CHART,
          '-n',
          ns,
          ...values,
          '--set',
          `ingester.podAnnotations.rollout=${Date.now()}`,
          '--wait',
          '--timeout',
          '5m',
        ]),
      );
      await new Promise((r) => setTimeout(r, 3_000));
    } finally {
      // Stopped whatever happened: a sender left running keeps Jest from exiting.
      sent = await load.stop();
    }
    await checkLoad(sent);
    // Rolled: the old pods finish terminating (drain delay, then the grace period at most) and two new ones serve.
    const after = await waitFor(
      'old ingesters gone',
      async () => {
        const ingesters = (await podsOf(ns, selector)).filter(
          (p) => p.metadata.labels['app.kubernetes.io/component'] === 'ingester',
        );
        return ingesters.some((p) => before.has(p.metadata.name)) ? undefined : ingesters;
      },
      90_000,
      1000,
    );
    expect(after).toHaveLength(2);
    for (const p of after) expect(p.status.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  it('fails over the operator lease to the other replica when the leader is deleted, and keeps reconciling', async () => {
    const lease = async () =>
      JSON.parse(await ok(kubectl(['get', 'lease', 'intake-operator', '-n', ns, '-o', 'json']))) as {
        spec: { holderIdentity: string; leaseDurationSeconds: number };
      };
    const first = await waitFor('a leader', async () => (await lease()).spec.holderIdentity || undefined, 60_000, 500);
    // Two operator pods, both Ready before the leader goes: the new leader must be the standby that
    // was already running, not a replacement pod that happened to win a released lease.
    const operators = await waitFor(
      'two Ready operator pods',
      async () => {
        const pods = (await podsOf(ns, selector)).filter(
          (p) =>
            p.metadata.labels['app.kubernetes.io/component'] === 'operator' &&
            !p.metadata.deletionTimestamp &&
            p.status.conditions.find((c) => c.type === 'Ready')?.status === 'True',
        );
        return pods.length === 2 ? pods : undefined;
      },
      120_000,
      1000,
    );
    const leader = operators.find((p) => first.startsWith(p.metadata.name));
    const standby = operators.find((p) => p !== leader);
    expect(leader).toBeDefined();
    expect(standby).toBeDefined();
    const { leaseDurationSeconds } = (await lease()).spec;
    // The node is cordoned while the leader goes, so its replacement stays Pending: only the standby
    // can take the Lease. (Otherwise the replacement, starting while the standby waits out its
    // retry period, may win the released Lease, which is election working but not a failover.)
    const node = (await ok(kubectl(['get', 'nodes', '-o', 'name']))).trim().split('\n')[0] ?? '';
    await ok(kubectl(['cordon', node]));
    try {
      const deleted = Date.now();
      await ok(kubectl(['delete', 'pod', '-n', ns, leader?.metadata.name ?? '', '--wait=false']));
      const next = await waitFor(
        'another leader',
        async () => {
          const holder = (await lease()).spec.holderIdentity;
          return holder && !holder.startsWith(leader?.metadata.name ?? '') ? holder : undefined;
        },
        120_000,
        500,
      );
      // The deleted leader releases the lease on SIGTERM, or the other waits out the lease.
      expect(Date.now() - deleted).toBeLessThan((leaseDurationSeconds + 15) * 1000);
      expect(next).not.toBe(first);
      expect(next.startsWith(standby?.metadata.name ?? '-')).toBe(true);
      await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: after-failover, namespace: ${tenant}}
spec: {}
`);
      await waitFor(
        'reconciled by the new leader',
        () =>
          core
            .readNamespacedSecret({ namespace: tenant, name: 'intake-webhook-after-failover' })
            .catch(() => undefined),
        60_000,
        500,
      );
    } finally {
      await kubectl(['uncordon', node]);
    }
  });

  it("leaves nothing of the release on helm uninstall but the CRDs and the tenants' integrations, which delete freely", async () => {
    const routes = 'intake.dev/route=true,app.kubernetes.io/managed-by=intake-operator';
    // Before: what the operator wrote outside the release (so the checks below can fail).
    expect((await ok(kubectl(['get', 'secrets', '-n', ns, '-l', routes, '-o', 'name']))).trim()).not.toBe('');
    expect((await kubectl(['get', 'lease', 'intake-operator', '-n', ns])).code).toBe(0);
    const credentials = (await ok(kubectl(['get', 'secrets', '-n', tenant, '-o', 'name']))).trim().split('\n').sort();
    expect(credentials).toContain('secret/intake-webhook-node-hook');

    // The post-delete hook (a Job running `intake operator cleanup`) runs on the node within this timeout.
    const started = Date.now();
    await ok(helm(['uninstall', release, '-n', ns, '--wait', '--timeout', '4m']));
    console.log(`helm uninstall --wait (with the cleanup hook): ${Date.now() - started} ms`);
    const kinds = 'pods,deployments,statefulsets,jobs,services,configmaps,serviceaccounts,roles,rolebindings';
    await waitFor(
      'pods gone',
      async () => (await ok(kubectl(['get', 'pods', '-n', ns, '-l', selector, '-o', 'name']))).trim() === '',
      120_000,
      1000,
    );
    expect((await ok(kubectl(['get', kinds, '-n', ns, '-l', selector, '-o', 'name']))).trim()).toBe('');
    expect((await ok(kubectl(['get', 'roles,rolebindings', '-n', tenant, '-l', selector, '-o', 'name']))).trim()).toBe(
      '',
    );
    expect((await ok(kubectl(['get', 'clusterroles,clusterrolebindings', '-l', selector, '-o', 'name']))).trim()).toBe(
      '',
    );
    // What the operator wrote: its route Secrets and its Lease are gone too.
    expect((await ok(kubectl(['get', 'secrets', '-n', ns, '-l', routes, '-o', 'name']))).trim()).toBe('');
    expect((await kubectl(['get', 'lease', 'intake-operator', '-n', ns])).stderr).toMatch(/NotFound/);
    // Kept, as the README says: the CRDs (crds.keep) and the integrations with their credentials,
    // with no finalizer.
    expect(
      (await kubectl(['get', 'crd', 'webhookintegrations.intake.dev', 'apikeys.intake.dev', 'intakequotas.intake.dev']))
        .code,
    ).toBe(0);
    const kept = JSON.parse(await ok(kubectl(['get', 'webhookintegrations', '-n', tenant, '-o', 'json']))) as {
      items: Array<{ metadata: { name: string; finalizers?: string[] } }>;
    };
    expect(kept.items.map((i) => [i.metadata.name, i.metadata.finalizers ?? []]).sort()).toEqual([
      ['after-failover', []],
      ['am-mapped', []],
      ['node-hook', []],
    ]);
    expect((await ok(kubectl(['get', 'secrets', '-n', tenant, '-o', 'name']))).trim().split('\n').sort()).toEqual(
      credentials,
    );
    // With no operator left, deleting an integration completes, and its credentials go with it.
    const deleted = await kubectl(['delete', 'webhookintegration', 'node-hook', '-n', tenant, '--timeout=60s']);
    expect([deleted.code, deleted.stderr]).toEqual([0, '']);
    await waitFor(
      'credentials garbage-collected',
      async () => (await kubectl(['get', 'secret', 'intake-webhook-node-hook', '-n', tenant])).code !== 0,
      60_000,
      500,
    );
  });
});

/** What a sender got: the events acknowledged (200) and how often each answer came. */
interface Sent {
  acknowledged: string[];
  answers: Map<string, number>;
}

/**
 * A sender at a bounded rate (20 events/s) with retries, as a monitoring tool would: every event
 * is retried until it is acknowledged (200), for at most 60 s. Records every answer.
 */
function sendUnderLoad(label: string): { stop: () => Promise<Sent> } {
  let running = true;
  const acknowledged: string[] = [];
  const answers = new Map<string, number>();
  const note = (a: string) => answers.set(a, (answers.get(a) ?? 0) + 1);
  const one = async (i: number): Promise<void> => {
    const description = `${label}-${i}`;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      try {
        // Retried as the HTTP API asks senders to: the same body with the same Idempotency-Key.
        const status = await post({ source: 'load', severity: 'warning', type: 'Load', description }, description);
        note(String(status));
        if (status === 200) {
          acknowledged.push(description);
          return;
        }
      } catch (err) {
        note((err as Error).name === 'TimeoutError' ? 'timeout' : 'connection');
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const inFlight: Array<Promise<void>> = [];
  const loop = (async () => {
    for (let i = 0; running; i++) {
      inFlight.push(one(i));
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      await Promise.all(inFlight);
      return { acknowledged, answers };
    },
  };
}

async function checkLoad({ acknowledged, answers }: Sent): Promise<void> {
  console.log(`answers: ${JSON.stringify(Object.fromEntries(answers))}; acknowledged ${acknowledged.length}`);
  expect(acknowledged.length).toBeGreaterThan(50);
  // Retryable: 503 (draining, not ready), a refused or reset connection, a timeout. Nothing stands
  // between the sender and the Service here, so a 502/504 would be a new failure, not a retryable one.
  for (const answer of answers.keys()) expect(['200', '503', 'connection', 'timeout']).toContain(answer);
  const stored = tally((await readStream(natsUrl, stream)).map((e) => String(e.event.description)));
  for (const description of acknowledged) expect([description, stored.get(description)]).toEqual([description, 1]);
}
