/**
 * The Helm chart against the real API server: lint, render, server-side dry-run, install; then
 * the real operator and ingester run with the chart's ServiceAccount tokens (not admin) through
 * the whole flow, and `kubectl auth can-i` shows what they cannot do; upgrade and uninstall.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { jest } from '@jest/globals';
import { parseAllDocuments } from 'yaml';
import { resolveSettings } from '../../ingester/config.js';
import {
  apply,
  applyCrds,
  createNamespace,
  KUBECONFIG,
  kubeClients,
  kubeconfigFor,
  kubectl,
  postEvent,
  startIngester,
  startOperator,
  uniqueName,
  type Proc,
} from './support/cluster.js';
import { ROOT } from '../support/paths.js';
import { waitFor } from '../support/waiting.js';

jest.setTimeout(180_000);

const HELM = resolve(ROOT, '.tools/bin/helm');
const CHART = resolve(ROOT, 'charts/intake');
const ALL = resolve(ROOT, 'test/integration/fixtures/all-features.yaml');
const DESTINATIONS = resolve(ROOT, 'test/integration/fixtures/destinations.yaml');
const REMOTE_WRITE = [
  '--set',
  'ingester.remoteWrite.enabled=true',
  '--set',
  'ingester.remoteWrite.url=https://mimir.example/api/v1/push',
  '--set',
  'ingester.remoteWrite.tenantHeader=X-Scope-OrgID',
  '--set',
  'ingester.remoteWrite.secretName=rw',
  '--set',
  'ingester.remoteWrite.basicAuth.username=intake',
  '--set',
  'ingester.remoteWrite.tls.ca=true',
];
const release = uniqueName('it');
const ns = uniqueName('intake-chart');
const tenant = uniqueName('chart-tenant');
const { core } = kubeClients();
const running: Proc[] = [];

function helm(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(HELM, ['--kubeconfig', KUBECONFIG, ...args]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => done({ code: code ?? -1, stdout, stderr }));
  });
}

async function ok(p: Promise<{ code: number; stdout: string; stderr: string }>): Promise<string> {
  const r = await p;
  if (r.code !== 0) throw new Error(r.stderr || r.stdout);
  return r.stdout;
}

const canI = async (sa: string, args: string[]): Promise<string> =>
  (await kubectl(['auth', 'can-i', ...args, `--as=system:serviceaccount:${ns}:${sa}`])).stdout.trim();

beforeAll(async () => {
  await applyCrds();
  await ok(kubectl(['apply', '--server-side', '-f', resolve(ROOT, 'test/integration/fixtures/monitoring-crds.yaml')]));
  await kubectl([
    'wait',
    '--for=condition=Established',
    'crd/servicemonitors.monitoring.coreos.com',
    'crd/podmonitors.monitoring.coreos.com',
    'crd/prometheusrules.monitoring.coreos.com',
    '--timeout=30s',
  ]);
  await createNamespace(ns);
  await createNamespace(tenant);
});

afterAll(async () => {
  for (const p of running) await p.stop();
  // --no-hooks: the cleanup hook's Job would wait for a node this cluster does not have (test/node runs it).
  await helm(['uninstall', release, '-n', ns, '--no-hooks']);
  await kubectl(['delete', 'namespace', ns, tenant, '--wait=false']);
});

describe('charts/intake', () => {
  it('passes helm lint --strict, with defaults and with every feature on', async () => {
    expect(await ok(helm(['lint', '--strict', CHART]))).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(await ok(helm(['lint', '--strict', CHART, '-f', ALL]))).toContain('1 chart(s) linted, 0 chart(s) failed');
  });

  it('refuses values the schema does not know', async () => {
    const r = await helm(['template', 'x', CHART, '--set', 'ingester.replicaz=3']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/replicaz/);
  });

  it('renders remote write as a config the ingester accepts, with exposition off and not scraped', async () => {
    const rendered = await ok(
      helm(['template', release, CHART, '-n', ns, '--kube-version', 'v1.34.3', '-f', ALL, ...REMOTE_WRITE]),
    );
    const docs = parseAllDocuments(rendered)
      .map((d) => d.toJS() as { kind?: string; data?: Record<string, string>; spec?: Record<string, unknown> })
      .filter((d) => d?.kind);
    const config = docs.find((d) => d.kind === 'ConfigMap' && d.data?.['intake.yaml'])?.data?.['intake.yaml'] as string;
    const settings = resolveSettings(parseAllDocuments(config)[0]?.toJS(), {});
    expect(settings.exposition.enabled).toBe(false);
    expect(settings.remoteWrite).toMatchObject({
      url: 'https://mimir.example/api/v1/push',
      tenantHeader: 'X-Scope-OrgID',
      basicAuth: { username: 'intake', passwordFile: '/etc/intake/remote-write/password' },
      tls: { caFile: '/etc/intake/remote-write/ca.crt' },
    });
    expect(rendered).not.toMatch(/path: \/metrics\/ingested/);
    expect(rendered).toMatch(/alert: IntakeRemoteWriteFailing/);
  });

  it.each([
    ['defaults', []],
    ['every feature on', ['-f', ALL]],
    ['remote write on', ['-f', ALL, ...REMOTE_WRITE]],
    ['destinations without JetStream', ['-f', DESTINATIONS]],
    ['destinations with JetStream', ['-f', ALL, '-f', DESTINATIONS, '--set', 'ingester.replicas=2']],
  ])('renders objects the API server accepts (%s)', async (_what, extra) => {
    const rendered = await ok(
      helm(['template', release, CHART, '-n', ns, '--kube-version', 'v1.34.3', ...(extra as string[])]),
    );
    const r = await kubectl(
      [
        'apply',
        '--server-side',
        '--force-conflicts',
        '--field-manager=chart-test',
        '--dry-run=server',
        '-n',
        ns,
        '-f',
        '-',
      ],
      rendered,
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/deployment.apps\/\S+-intake-ingester serverside-applied \(server dry run\)/);
  });

  it('renders pod annotations set on the command line as strings the API server accepts (a number, a boolean)', async () => {
    const rendered = await ok(
      helm([
        'template',
        release,
        CHART,
        '-n',
        ns,
        '--kube-version',
        'v1.34.3',
        '--set',
        'ingester.podAnnotations.rollout=1795493893561',
        '--set',
        'operator.podAnnotations.restarted=true',
      ]),
    );
    expect(rendered).toContain('rollout: "1795493893561"');
    expect(rendered).toContain('restarted: "true"');
    const r = await kubectl(
      [
        'apply',
        '--server-side',
        '--force-conflicts',
        '--field-manager=chart-test',
        '--dry-run=server',
        '-n',
        ns,
        '-f',
        '-',
      ],
      rendered,
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('renders the ingester as a StatefulSet with a spool PVC per pod when the spool is persistent', async () => {
    const rendered = await ok(
      helm([
        'template',
        release,
        CHART,
        '-n',
        ns,
        '--kube-version',
        'v1.34.3',
        '-f',
        ALL,
        '--set',
        'spool.persistence.enabled=true',
      ]),
    );
    const r = await kubectl(
      [
        'apply',
        '--server-side',
        '--force-conflicts',
        '--field-manager=chart-test',
        '--dry-run=server',
        '-n',
        ns,
        '-f',
        '-',
      ],
      rendered,
    );
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/statefulset.apps\/\S+-intake-ingester serverside-applied \(server dry run\)/);
    expect(rendered).toMatch(/volumeClaimTemplates:\s+- metadata:\s+name: spool/);
    expect(rendered).toContain('path: /var/lib/intake/spool');
  });

  it('installs for real', async () => {
    // Other tests installed the CRDs with kubectl; hand them to this release the way Helm adopts
    // existing objects, so the chart's CRD templates (and their keep policy) are installed for real.
    for (const crd of [
      'crd/webhookintegrations.intake.dev',
      'crd/apikeys.intake.dev',
      'crd/intakequotas.intake.dev',
      'crd/destinations.intake.dev',
    ]) {
      await ok(kubectl(['label', crd, 'app.kubernetes.io/managed-by=Helm', '--overwrite']));
      await ok(
        kubectl([
          'annotate',
          crd,
          `meta.helm.sh/release-name=${release}`,
          `meta.helm.sh/release-namespace=${ns}`,
          '--overwrite',
        ]),
      );
    }
    await ok(helm(['install', release, CHART, '-n', ns, '--set', 'publicBaseUrl=https://intake.test']));
    const crd = await ok(
      kubectl([
        'get',
        'crd',
        'webhookintegrations.intake.dev',
        '-o',
        'jsonpath={.metadata.annotations.helm\\.sh/resource-policy}',
      ]),
    );
    expect(crd).toBe('keep');
    const deployments = await kubectl(['get', 'deployments', '-n', ns, '-o', 'name']);
    expect(deployments.stdout).toContain(`deployment.apps/${release}-intake-operator`);
    expect(deployments.stdout).toContain(`deployment.apps/${release}-intake-ingester`);
    // The admin port (every tenant's series and dead letters) is behind a NetworkPolicy by default.
    const policy = JSON.parse(
      await ok(kubectl(['get', 'networkpolicy', `${release}-intake-ingester`, '-n', ns, '-o', 'json'])),
    ) as { spec: { ingress: Array<{ from?: unknown[]; ports: Array<{ port: string }> }> } };
    const admin = policy.spec.ingress.find((r) => r.ports.some((p) => p.port === 'admin'));
    expect(admin?.from).toEqual([
      {
        podSelector: {
          matchLabels: {
            'app.kubernetes.io/component': 'operator',
            'app.kubernetes.io/instance': release,
            'app.kubernetes.io/name': 'intake',
          },
        },
      },
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
    ]);
  });

  it('grants the ServiceAccounts enough to run the whole flow, with their own tokens', async () => {
    const operatorKubeconfig = await kubeconfigFor(`${release}-intake-operator`, ns);
    const ingesterKubeconfig = await kubeconfigFor(`${release}-intake-ingester`, ns);
    // With activity on, as the chart runs it: the operator lists and watches the ingester admin Service's EndpointSlices.
    const operator = await startOperator(
      ns,
      [],
      [
        '--kubeconfig',
        operatorKubeconfig,
        '--leader-elect',
        '--ingester-admin-service',
        `${release}-intake-ingester-admin`,
        '--activity-interval',
        '1s',
      ],
    );
    running.push(operator);
    const ingester = await startIngester(ns, [
      '--kubeconfig',
      ingesterKubeconfig,
      '--service',
      `${release}-intake-ingester`,
    ]);
    running.push(ingester);
    await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: least-privilege, namespace: ${tenant}}
spec: {}
`);
    const secret = await waitFor(
      'credentials',
      () =>
        core.readNamespacedSecret({ namespace: tenant, name: 'intake-webhook-least-privilege' }).catch(() => undefined),
      15_000,
    );
    const auth = Buffer.from(secret.data?.authorization ?? '', 'base64').toString();
    await waitFor('accepted', async () => (await postEvent(ingester.url, 'least-privilege', auth)) === 200, 10_000);
    await kubectl(['delete', 'webhookintegration', 'least-privilege', '-n', tenant]);
    await waitFor(
      '401 after delete',
      async () => (await postEvent(ingester.url, 'least-privilege', auth)) === 401,
      10_000,
    );
    // An RBAC denial reads 'User "system:serviceaccount:..." cannot <verb> resource ...'.
    expect(operator.output()).not.toMatch(/cannot \w+ resource/);
    expect(ingester.output()).not.toMatch(/cannot \w+ resource/);
  });

  it('denies what the components must not do', async () => {
    const ingester = `${release}-intake-ingester`;
    const operator = `${release}-intake-operator`;
    expect(await canI(ingester, ['list', 'secrets', '-n', ns])).toBe('yes');
    expect(await canI(ingester, ['list', 'secrets', '-n', tenant])).toBe('no');
    expect(await canI(ingester, ['create', 'secrets', '-n', ns])).toBe('no');
    expect(await canI(ingester, ['get', 'configmaps', '-n', ns])).toBe('no');
    expect(await canI(ingester, ['list', 'webhookintegrations.intake.dev', '-A'])).toBe('no');
    expect(await canI(operator, ['list', 'configmaps', '-n', tenant])).toBe('no');
    expect(await canI(operator, ['get', 'pods', '-n', ns])).toBe('no');
    expect(await canI(operator, ['delete', 'webhookintegrations.intake.dev', '-n', tenant])).toBe('no');
    expect(await canI(operator, ['patch', 'webhookintegrations.intake.dev', '-n', tenant])).toBe('no');
    expect(await canI(operator, ['update', 'leases.coordination.k8s.io/some-other-lease', '-n', ns])).toBe('no');
    expect(await canI(operator, ['update', 'leases.coordination.k8s.io/intake-operator', '-n', ns])).toBe('yes');
    // Per-tenant limits: the ingester counts its Service's ready endpoints; the operator reads
    // IntakeQuotas (and writes their status) but never changes one.
    expect(await canI(ingester, ['list', 'endpointslices.discovery.k8s.io', '-n', ns])).toBe('yes');
    expect(await canI(ingester, ['list', 'endpointslices.discovery.k8s.io', '-n', tenant])).toBe('no');
    // Activity: the operator finds the ingester replicas by the admin Service's EndpointSlices, here only.
    expect(await canI(operator, ['list', 'endpointslices.discovery.k8s.io', '-n', ns])).toBe('yes');
    expect(await canI(operator, ['watch', 'endpointslices.discovery.k8s.io', '-n', ns])).toBe('yes');
    expect(await canI(operator, ['list', 'endpointslices.discovery.k8s.io', '-n', tenant])).toBe('no');
    expect(await canI(operator, ['create', 'endpointslices.discovery.k8s.io', '-n', ns])).toBe('no');
    expect(await canI(operator, ['get', 'services', '-n', ns])).toBe('no');
    expect(await canI(operator, ['watch', 'intakequotas.intake.dev', '-n', tenant])).toBe('yes');
    expect(await canI(operator, ['patch', 'intakequotas.intake.dev', '--subresource=status', '-n', tenant])).toBe(
      'yes',
    );
    for (const verb of ['create', 'update', 'patch', 'delete'])
      expect(await canI(operator, [verb, 'intakequotas.intake.dev', '-n', tenant])).toBe('no');
  });

  it('gives tenants (the roles aggregated into admin and edit) integrations and keys, and IntakeQuotas read-only', async () => {
    // The test API server runs no aggregation controller: bind the chart's role itself.
    await ok(kubectl(['create', 'serviceaccount', 'team-admin', '-n', tenant]));
    await ok(
      kubectl([
        'create',
        'rolebinding',
        'team-admin',
        '-n',
        tenant,
        `--clusterrole=${release}-intake-edit`,
        `--serviceaccount=${tenant}:team-admin`,
      ]),
    );
    const labels = await ok(
      kubectl(['get', 'clusterrole', `${release}-intake-edit`, '-o', 'jsonpath={.metadata.labels}']),
    );
    expect(labels).toContain('"rbac.authorization.k8s.io/aggregate-to-admin":"true"');
    const tenantCan = async (args: string[]) =>
      (
        await kubectl(['auth', 'can-i', ...args, '-n', tenant, `--as=system:serviceaccount:${tenant}:team-admin`])
      ).stdout.trim();
    expect(await tenantCan(['create', 'webhookintegrations.intake.dev'])).toBe('yes');
    expect(await tenantCan(['patch', 'apikeys.intake.dev'])).toBe('yes');
    expect(await tenantCan(['create', 'destinations.intake.dev'])).toBe('yes');
    expect(await tenantCan(['get', 'intakequotas.intake.dev'])).toBe('yes');
    for (const verb of ['create', 'update', 'patch', 'delete'])
      expect(await tenantCan([verb, 'intakequotas.intake.dev'])).toBe('no');
    expect(await tenantCan(['patch', 'intakequotas.intake.dev', '--subresource=status'])).toBe('no');
  });

  it('upgrades with changed values and uninstalls without orphans, keeping the CRDs', async () => {
    await ok(helm(['upgrade', release, CHART, '-n', ns, '-f', ALL]));
    expect((await kubectl(['get', 'ingress', '-n', ns, '-o', 'name'])).stdout).toContain(`${release}-intake`);
    await ok(helm(['upgrade', release, CHART, '-n', ns, '--set', 'publicBaseUrl=https://intake.test']));
    expect((await kubectl(['get', 'ingress', '-n', ns, '-o', 'name'])).stdout.trim()).toBe('');
    // The release carries the cleanup hook (cleanupOnUninstall, default true) for a real uninstall.
    expect(await ok(helm(['get', 'hooks', release, '-n', ns]))).toMatch(
      new RegExp(`kind: Job\\n[\\s\\S]*name: ${release}-intake-cleanup[\\s\\S]*- cleanup\\n`),
    );
    await ok(helm(['uninstall', release, '-n', ns, '--no-hooks']));
    const selector = `app.kubernetes.io/instance=${release}`;
    const kinds =
      'deployments,services,configmaps,serviceaccounts,roles,rolebindings,ingresses,networkpolicies,poddisruptionbudgets,horizontalpodautoscalers';
    const left = await kubectl(['get', kinds, '-n', ns, '-l', selector, '-o', 'name']);
    expect(left.stdout.trim()).toBe('');
    const cluster = await kubectl(['get', 'clusterroles,clusterrolebindings', '-l', selector, '-o', 'name']);
    expect(cluster.stdout.trim()).toBe('');
    expect((await kubectl(['get', 'crd', 'webhookintegrations.intake.dev'])).code).toBe(0);
  });
});

describe('charts/intake destinations', () => {
  type Doc = {
    kind?: string;
    metadata?: { name?: string };
    data?: Record<string, string>;
    spec?: Record<string, unknown>;
  };
  const render = async (extra: string[]): Promise<Doc[]> =>
    parseAllDocuments(await ok(helm(['template', release, CHART, '-n', ns, '--kube-version', 'v1.34.3', ...extra])))
      .map((d) => d.toJS() as Doc)
      .filter((d) => d?.kind);
  const ingesterPod = (docs: Doc[]) => {
    const workload = docs.find(
      (d) => (d.kind === 'Deployment' || d.kind === 'StatefulSet') && d.metadata?.name?.endsWith('-ingester'),
    ) as { spec: { template: { spec: PodSpec } } };
    return workload.spec.template.spec;
  };
  type PodSpec = {
    containers: Array<{ args: string[]; volumeMounts: Array<{ name: string; mountPath: string; readOnly?: boolean }> }>;
    volumes: Array<{ name: string; secret?: { secretName: string } }>;
  };
  const refused = async (extra: string[]): Promise<string> => {
    const r = await helm(['template', release, CHART, ...extra]);
    expect(r.code).not.toBe(0);
    return r.stderr;
  };

  it('passes helm lint --strict with destinations, with and without JetStream', async () => {
    expect(await ok(helm(['lint', '--strict', CHART, '-f', DESTINATIONS]))).toContain(
      '1 chart(s) linted, 0 chart(s) failed',
    );
    expect(
      await ok(helm(['lint', '--strict', CHART, '-f', ALL, '-f', DESTINATIONS, '--set', 'ingester.replicas=2'])),
    ).toContain('1 chart(s) linted, 0 chart(s) failed');
  });

  it('refuses a key the ingester does not know under destinations, naming it', async () => {
    expect(await refused(['-f', DESTINATIONS, '--set', 'destinations[1].http.retries=3'])).toMatch(
      /\/destinations\/1\/http.*retries/,
    );
    expect(await refused(['-f', DESTINATIONS, '--set', 'destinations[0].delivery.maxAtempts=3'])).toMatch(/maxAtempts/);
  });

  it('refuses a destination with both or neither of alertmanager and http', async () => {
    expect(await refused(['-f', DESTINATIONS, '--set', 'destinations[1].alertmanager.urls={http://am:9093}'])).toMatch(
      /\/destinations\/1.*oneOf/,
    );
    expect(await refused(['--set', 'destinations[0].name=nothing', '--set', 'ingester.replicas=1'])).toMatch(
      /\/destinations\/0.*oneOf/,
    );
  });

  it('renders the destinations into a config the ingester accepts, with the spool as their queue', async () => {
    const docs = await render(['-f', DESTINATIONS]);
    const config = docs.find((d) => d.kind === 'ConfigMap' && d.data?.['intake.yaml'])?.data?.['intake.yaml'] as string;
    const settings = resolveSettings(parseAllDocuments(config)[0]?.toJS(), {});
    expect(settings.destinations.map((d) => [d.name, d.kind, d.default])).toEqual([
      ['alertmanager', 'alertmanager', true],
      ['tickets', 'http', false],
    ]);
    expect(settings.destinations[0]).toMatchObject({
      alertmanager: {
        urls: ['http://alertmanager-operated.monitoring:9093'],
        resendIntervalMs: 30_000,
        tls: { caFile: '/etc/intake/destinations/am-tls/ca.crt' },
      },
    });
    expect(settings.destinations[1]).toMatchObject({
      http: {
        url: 'https://tickets.example.com/hooks/intake',
        headers: { 'X-Team': 'sre' },
        batchSize: 50,
        basicAuth: { username: 'intake', passwordFile: '/etc/intake/destinations/tickets-auth/password' },
      },
      delivery: { maxAttempts: 5, backoffMinMs: 2000 },
    });
    expect(settings.spool?.path).toBe('/var/lib/intake/spool');
    expect(settings.sinks.jetstream).toBeUndefined();
    expect(ingesterPod(docs).containers[0]?.volumeMounts).toContainEqual({
      name: 'spool',
      mountPath: '/var/lib/intake/spool',
    });
  });

  it('leaves the spool off with JetStream, where destinations are delivered from the stream', async () => {
    const docs = await render([
      '-f',
      ALL,
      '-f',
      DESTINATIONS,
      '--set',
      'spool.enabled=false',
      '--set',
      'ingester.replicas=2',
    ]);
    const config = docs.find((d) => d.kind === 'ConfigMap' && d.data?.['intake.yaml'])?.data?.['intake.yaml'] as string;
    const settings = resolveSettings(parseAllDocuments(config)[0]?.toJS(), {});
    expect(settings.destinations).toHaveLength(2);
    expect(settings.spool).toBeUndefined();
    expect(ingesterPod(docs).volumes.map((v) => v.name)).not.toContain('spool');
  });

  it('mounts each destinationSecret read-only at /etc/intake/destinations/<name>/ in the ingesters', async () => {
    const pod = ingesterPod(await render(['-f', DESTINATIONS]));
    const mounts = pod.containers[0]?.volumeMounts.filter((m) => m.mountPath.startsWith('/etc/intake/destinations/'));
    expect(mounts).toEqual([
      { name: 'destination-secret-0', mountPath: '/etc/intake/destinations/tickets-auth', readOnly: true },
      { name: 'destination-secret-1', mountPath: '/etc/intake/destinations/am-tls', readOnly: true },
    ]);
    expect(
      pod.volumes
        .filter((v) => v.secret?.secretName === 'tickets-auth' || v.secret?.secretName === 'am-tls')
        .map((v) => v.name),
    ).toEqual(['destination-secret-0', 'destination-secret-1']);
  });

  it('gives the operator the destination names, and no flag without destinations', async () => {
    const operatorArgs = (docs: Doc[]) =>
      (
        docs.find((d) => d.kind === 'Deployment' && d.metadata?.name?.endsWith('-operator')) as {
          spec: { template: { spec: PodSpec } };
        }
      ).spec.template.spec.containers[0]?.args;
    expect(operatorArgs(await render(['-f', DESTINATIONS]))).toContain('--destinations=alertmanager,tickets');
    expect((operatorArgs(await render([])) ?? []).filter((a) => a.startsWith('--destinations'))).toEqual([]);
  });

  it('fails the render for destinations that cannot work, saying why', async () => {
    expect(await refused(['-f', DESTINATIONS, '--set', 'destinationSecrets={am-tls}'])).toContain(
      'destinations[1] (tickets): /etc/intake/destinations/tickets-auth/password is in Secret tickets-auth, which is not mounted: add it to destinationSecrets',
    );
    expect(await refused(['-f', DESTINATIONS, '--set', 'destinations[1].name=alertmanager'])).toContain(
      'destinations[1] (alertmanager): the name alertmanager is used twice',
    );
    expect(await refused(['-f', DESTINATIONS, '--set', 'ingester.replicas=2'])).toContain(
      'destinations[0] (alertmanager): Alertmanager destinations without sinks.jetstream need one ingester',
    );
    expect(
      await refused([
        '-f',
        DESTINATIONS,
        '--set',
        'destinations[1].http.bearerTokenFile=/etc/intake/destinations/tickets-auth/token',
      ]),
    ).toContain('give basicAuth or bearerTokenFile, not both');
  });

  it('renders one dead-letter alert per destination (the per-destination group) and a lag alert that fires on a growing backlog only (promtool test rules)', async () => {
    const docs = await render(['-f', DESTINATIONS, '--set', 'monitoring.prometheusRule.enabled=true']);
    const rule = docs.find((d) => d.kind === 'PrometheusRule') as {
      spec: { groups: Array<{ name: string; rules: Array<{ alert: string; annotations: Record<string, string> }> }> };
    };
    const reading = (metric: string) =>
      rule.spec.groups.flatMap((g) =>
        g.rules.filter((r) => (r as { expr?: string }).expr?.includes(metric)).map((r) => r.alert),
      );
    expect(reading('intake_destination_dead_lettered_total')).toEqual(['IntakeDestinationDeadLettersGrowing']);
    const dir = mkdtempSync(join(tmpdir(), 'intake-rules-'));
    writeFileSync(join(dir, 'rules.yaml'), JSON.stringify({ groups: rule.spec.groups }));
    const annotations = (alert: string, destination: string) =>
      Object.fromEntries(
        Object.entries(rule.spec.groups[0]?.rules.find((r) => r.alert === alert)?.annotations ?? {}).map(([k, v]) => [
          k,
          v.replaceAll('{{ $labels.destination }}', destination),
        ]),
      );
    const alert = (alert: string, destination: string) => ({
      exp_labels: { severity: 'warning', destination },
      exp_annotations: annotations(alert, destination),
    });
    writeFileSync(
      join(dir, 'test.yaml'),
      JSON.stringify({
        rule_files: ['rules.yaml'],
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: [
              // A backlog growing by 20 a minute on every replica, and a large but steady one.
              { series: 'intake_destination_lag{destination="alertmanager",pod="a"}', values: '0+20x40' },
              { series: 'intake_destination_lag{destination="alertmanager",pod="b"}', values: '0+20x40' },
              { series: 'intake_destination_lag{destination="tickets",pod="a"}', values: '500x40' },
            ],
            alert_rule_test: [
              { eval_time: '12m', alertname: 'IntakeDestinationLagGrowing', exp_alerts: [] },
              {
                eval_time: '30m',
                alertname: 'IntakeDestinationLagGrowing',
                exp_alerts: [alert('IntakeDestinationLagGrowing', 'alertmanager')],
              },
            ],
          },
        ],
      }),
    );
    const r = await new Promise<{ code: number; out: string }>((done) => {
      const child = spawn('promtool', ['test', 'rules', join(dir, 'test.yaml')]);
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      child.on('error', (err) =>
        done({ code: -1, out: `promtool (Debian package prometheus, make tools) could not run: ${err.message}` }),
      );
      child.on('close', (code) => done({ code: code ?? -1, out }));
    });
    rmSync(dir, { recursive: true, force: true });
    expect(r.out).toContain('SUCCESS');
    expect(r.code).toBe(0);
  });
});
