/**
 * The spool on a PersistentVolume (spool.persistence.enabled: the ingesters run as a StatefulSet)
 * on the test cluster's node: with the bus down, acknowledged events are spooled; the pod is
 * deleted; the new pod (same claim) replays them once nats-server is back.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { jest } from '@jest/globals';
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

jest.setTimeout(480_000);
requireCluster();

const CHART = resolve(ROOT, 'charts/intake');
const version = (JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const release = uniqueName('spool');
const ns = uniqueName('intake-spool');
const tenant = uniqueName('tenant');
const tag = release.replace(/-/g, '_');
const stream = `EVENTS_${tag}`.toUpperCase();
const selector = `app.kubernetes.io/instance=${release}`;
const { core } = kubeClients();

const natsReplicas = async (n: number) => {
  await ok(kubectl(['scale', 'deployment/nats', '-n', 'infra', `--replicas=${n}`]));
  if (n === 0) await waitFor('nats gone', async () => (await podsOf('infra', 'app=nats')).length === 0, 120_000, 1000);
  else await ok(kubectl(['rollout', 'status', 'deployment/nats', '-n', 'infra', '--timeout=180s']));
};

let appliedCrds = false;

afterAll(async () => {
  await natsReplicas(1).catch(() => undefined);
  await helm(['uninstall', release, '-n', ns, '--wait', '--timeout', '2m']);
  await kubectl(['delete', 'namespace', ns, tenant, '--wait=false']);
  if (appliedCrds) await kubectl(['delete', '-f', resolve(CHART, 'files/crds'), '--wait', '--timeout=120s']);
});

it('replays what a deleted StatefulSet pod spooled on its PersistentVolume while the bus was down', async () => {
  await createNamespace(ns);
  await createNamespace(tenant);
  // The release below installs no CRDs: another release may own them (chart.test.ts keeps its CRDs
  // on uninstall, and helm refuses to adopt another release's objects). On a node where no release
  // ran yet, apply them from the chart as a user installing the CRDs separately would.
  // Deleted again afterwards, so that a release installed later can own them.
  if ((await kubectl(['get', 'crd', 'webhookintegrations.intake.dev'])).code !== 0) {
    await ok(kubectl(['apply', '--server-side', '-f', resolve(CHART, 'files/crds')]));
    appliedCrds = true;
  }
  await ok(
    helm([
      'install',
      release,
      CHART,
      '-n',
      ns,
      '--wait',
      '--timeout',
      '5m',
      // The CRDs are installed already (above).
      '--set',
      'crds.enabled=false',
      '--set',
      'publicBaseUrl=https://intake.test',
      '--set',
      `operator.watchNamespaces={${tenant}}`,
      '--set',
      'operator.replicas=1',
      '--set',
      'image.repository=intake.local/intake',
      '--set',
      `image.tag=${version}`,
      '--set',
      'image.pullPolicy=Never',
      '--set',
      'ingester.replicas=1',
      '--set',
      'ingester.authThrottle.failures=1000000',
      '--set',
      'sinks.jetstream.enabled=true',
      '--set',
      'sinks.jetstream.url=nats://nats.infra.svc:4222',
      '--set',
      `sinks.jetstream.stream=${stream}`,
      '--set',
      `sinks.jetstream.subjectPrefix=${tag}.events`,
      '--set',
      'sinks.jetstream.timeout=500ms',
      '--set',
      'spool.enabled=true',
      '--set',
      'spool.persistence.enabled=true',
      '--set',
      'spool.persistence.storageClassName=local',
      '--set',
      'spool.persistence.size=1Gi',
    ]),
  );
  expect((await ok(kubectl(['get', 'statefulsets', '-n', ns, '-o', 'name']))).trim()).toBe(
    `statefulset.apps/${release}-intake-ingester`,
  );
  const ingestUrl = await serviceUrl(ns, `${release}-intake-ingester`, 'ingest');
  const natsUrl = (await serviceUrl('infra', 'nats', 'client')).replace('http://', 'nats://');
  await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: spooled, namespace: ${tenant}}
spec: {}
`);
  const secret = await waitFor(
    'credentials',
    () => core.readNamespacedSecret({ namespace: tenant, name: 'intake-webhook-spooled' }).catch(() => undefined),
    60_000,
    500,
  );
  const authorization = Buffer.from(secret.data?.authorization ?? '', 'base64').toString();
  const post = async (description: string): Promise<number> => {
    const res = await fetch(`${ingestUrl}/events/webhook_spooled`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ source: 'spool', severity: 'warning', description }),
      signal: AbortSignal.timeout(10_000),
    });
    await res.arrayBuffer();
    return res.status;
  };
  await waitFor('accepted with the bus up', async () => (await post('bus-up')) === 200, 60_000, 500);

  await natsReplicas(0);
  const spooled = Array.from({ length: 20 }, (_, i) => `spooled-${i}`);
  for (const d of spooled) expect([d, await post(d)]).toEqual([d, 200]);

  const [pod] = await podsOf(ns, `${selector},app.kubernetes.io/component=ingester`);
  await ok(kubectl(['delete', 'pod', '-n', ns, pod?.metadata.name ?? '', '--wait=true', '--timeout=120s']));
  await waitFor(
    'the pod back',
    async () =>
      (await podsOf(ns, `${selector},app.kubernetes.io/component=ingester`)).some((p) =>
        p.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
      ),
    180_000,
    1000,
  );

  await natsReplicas(1);
  const stored = await waitFor(
    'every spooled event in the stream',
    async () => {
      const counts = tally((await readStream(natsUrl, stream).catch(() => [])).map((e) => String(e.event.description)));
      return spooled.every((d) => counts.has(d)) ? counts : undefined;
    },
    180_000,
    2000,
  );
  for (const d of spooled) expect([d, stored.get(d)]).toEqual([d, 1]);
});
