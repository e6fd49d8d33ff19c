/**
 * The Helm chart against the real API server: lint, render, server-side dry-run, install; then
 * the real operator and ingester run with the chart's ServiceAccount tokens (not admin) through
 * the whole flow, and `kubectl auth can-i` shows what they cannot do; upgrade and uninstall.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { jest } from '@jest/globals';
import { parseAllDocuments } from 'yaml';
import { resolveSettings } from '../../ingester/config.js';
import {
  apply, applyCrds, createNamespace, KUBECONFIG, kubeClients, kubectl, postEvent, ROOT, startIngester, startOperator, uniqueName, waitFor, type Proc,
} from './support/cluster.js';

jest.setTimeout(180_000);

const HELM = resolve(ROOT, '.tools/bin/helm');
const CHART = resolve(ROOT, 'charts/intake');
const ALL = resolve(ROOT, 'test/integration/fixtures/all-features.yaml');
const REMOTE_WRITE = ['--set', 'ingester.remoteWrite.enabled=true', '--set', 'ingester.remoteWrite.url=https://mimir.example/api/v1/push', '--set', 'ingester.remoteWrite.tenantHeader=X-Scope-OrgID',
  '--set', 'ingester.remoteWrite.secretName=rw', '--set', 'ingester.remoteWrite.basicAuth.username=intake', '--set', 'ingester.remoteWrite.tls.ca=true'];
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

/** A kubeconfig that authenticates as a ServiceAccount, with a token minted by TokenRequest. */
async function kubeconfigFor(serviceAccount: string): Promise<string> {
  const token = (await ok(kubectl(['create', 'token', serviceAccount, '-n', ns, '--duration=1h']))).trim();
  const { kc } = kubeClients();
  const cluster = kc.getCurrentCluster();
  const path = join(mkdtempSync(join(tmpdir(), 'intake-sa-')), 'kubeconfig');
  writeFileSync(path, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "${cluster?.server}", certificate-authority-data: "${cluster?.caData}"}}]
users: [{name: sa, user: {token: "${token}"}}]
contexts: [{name: c, context: {cluster: c, user: sa}}]
current-context: c
`);
  return path;
}

const canI = async (sa: string, args: string[]): Promise<string> => (await kubectl(['auth', 'can-i', ...args, `--as=system:serviceaccount:${ns}:${sa}`])).stdout.trim();

beforeAll(async () => {
  await applyCrds();
  await ok(kubectl(['apply', '--server-side', '-f', resolve(ROOT, 'test/integration/fixtures/monitoring-crds.yaml')]));
  await kubectl(['wait', '--for=condition=Established', 'crd/servicemonitors.monitoring.coreos.com', 'crd/podmonitors.monitoring.coreos.com', 'crd/prometheusrules.monitoring.coreos.com', '--timeout=30s']);
  await createNamespace(ns);
  await createNamespace(tenant);
});

afterAll(async () => {
  for (const p of running) await p.stop();
  await helm(['uninstall', release, '-n', ns]);
  await kubectl(['delete', 'namespace', ns, tenant, '--wait=false']);
});

describe('charts/intake', () => {
  it('passes helm lint --strict, with defaults and with every feature on', async () => {
    await ok(helm(['lint', '--strict', CHART]));
    await ok(helm(['lint', '--strict', CHART, '-f', ALL]));
  });

  it('refuses values the schema does not know', async () => {
    const r = await helm(['template', 'x', CHART, '--set', 'ingester.replicaz=3']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/replicaz/);
  });

  it('renders remote write as a config the ingester accepts, with exposition off and not scraped', async () => {
    const rendered = await ok(helm(['template', release, CHART, '-n', ns, '--kube-version', 'v1.34.3', '-f', ALL, ...REMOTE_WRITE]));
    const docs = parseAllDocuments(rendered).map((d) => d.toJS() as { kind?: string; data?: Record<string, string>; spec?: Record<string, unknown> }).filter((d) => d?.kind);
    const config = docs.find((d) => d.kind === 'ConfigMap' && d.data?.['intake.yaml'])?.data?.['intake.yaml'] as string;
    const settings = resolveSettings(parseAllDocuments(config)[0]?.toJS(), {});
    expect(settings.exposition.enabled).toBe(false);
    expect(settings.remoteWrite).toMatchObject({ url: 'https://mimir.example/api/v1/push', tenantHeader: 'X-Scope-OrgID', basicAuth: { username: 'intake', passwordFile: '/etc/intake/remote-write/password' }, tls: { caFile: '/etc/intake/remote-write/ca.crt' } });
    expect(rendered).not.toMatch(/path: \/metrics\/ingested/);
    expect(rendered).toMatch(/alert: IntakeRemoteWriteFailing/);
  });

  it.each([['defaults', []], ['every feature on', ['-f', ALL]], ['remote write on', ['-f', ALL, ...REMOTE_WRITE]]])('renders objects the API server accepts (%s)', async (_what, extra) => {
    const rendered = await ok(helm(['template', release, CHART, '-n', ns, '--kube-version', 'v1.34.3', ...(extra as string[])]));
    const r = await kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=chart-test', '--dry-run=server', '-n', ns, '-f', '-'], rendered);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/deployment.apps\/\S+-intake-ingester serverside-applied \(server dry run\)/);
  });

  it('renders the ingester as a StatefulSet with a spool PVC per pod when the spool is persistent', async () => {
    const rendered = await ok(helm(['template', release, CHART, '-n', ns, '--kube-version', 'v1.34.3', '-f', ALL, '--set', 'spool.persistence.enabled=true']));
    const r = await kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=chart-test', '--dry-run=server', '-n', ns, '-f', '-'], rendered);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/statefulset.apps\/\S+-intake-ingester serverside-applied \(server dry run\)/);
    expect(rendered).toMatch(/volumeClaimTemplates:\s+- metadata:\s+name: spool/);
    expect(rendered).toContain('path: /var/lib/intake/spool');
  });

  it('installs for real', async () => {
    // Other tests installed the CRDs with kubectl; hand them to this release the way Helm adopts
    // existing objects, so the chart's CRD templates (and their keep policy) are installed for real.
    for (const crd of ['crd/webhookintegrations.intake.dev', 'crd/apikeys.intake.dev']) {
      await ok(kubectl(['label', crd, 'app.kubernetes.io/managed-by=Helm', '--overwrite']));
      await ok(kubectl(['annotate', crd, `meta.helm.sh/release-name=${release}`, `meta.helm.sh/release-namespace=${ns}`, '--overwrite']));
    }
    await ok(helm(['install', release, CHART, '-n', ns, '--set', 'publicBaseUrl=https://intake.test']));
    const crd = await ok(kubectl(['get', 'crd', 'webhookintegrations.intake.dev', '-o', 'jsonpath={.metadata.annotations.helm\\.sh/resource-policy}']));
    expect(crd).toBe('keep');
    const deployments = await kubectl(['get', 'deployments', '-n', ns, '-o', 'name']);
    expect(deployments.stdout).toContain(`deployment.apps/${release}-intake-operator`);
    expect(deployments.stdout).toContain(`deployment.apps/${release}-intake-ingester`);
  });

  it('grants the ServiceAccounts enough to run the whole flow, with their own tokens', async () => {
    const operatorKubeconfig = await kubeconfigFor(`${release}-intake-operator`);
    const ingesterKubeconfig = await kubeconfigFor(`${release}-intake-ingester`);
    const operator = await startOperator(ns, [], ['--kubeconfig', operatorKubeconfig, '--leader-elect']);
    running.push(operator);
    const ingester = await startIngester(ns, ['--kubeconfig', ingesterKubeconfig]);
    running.push(ingester);
    await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: least-privilege, namespace: ${tenant}}
spec: {}
`);
    const secret = await waitFor('credentials', () => core.readNamespacedSecret({ namespace: tenant, name: 'intake-webhook-least-privilege' }).catch(() => undefined), 15_000);
    const auth = Buffer.from(secret.data?.authorization ?? '', 'base64').toString();
    await waitFor('accepted', async () => (await postEvent(ingester.url, 'least-privilege', auth)) === 200, 10_000);
    await kubectl(['delete', 'webhookintegration', 'least-privilege', '-n', tenant]);
    await waitFor('401 after delete', async () => (await postEvent(ingester.url, 'least-privilege', auth)) === 401, 10_000);
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
    expect(await canI(operator, ['update', 'leases.coordination.k8s.io/some-other-lease', '-n', ns])).toBe('no');
    expect(await canI(operator, ['update', 'leases.coordination.k8s.io/intake-operator', '-n', ns])).toBe('yes');
  });

  it('upgrades with changed values and uninstalls without orphans, keeping the CRDs', async () => {
    await ok(helm(['upgrade', release, CHART, '-n', ns, '-f', ALL]));
    expect((await kubectl(['get', 'ingress', '-n', ns, '-o', 'name'])).stdout).toContain(`${release}-intake`);
    await ok(helm(['upgrade', release, CHART, '-n', ns, '--set', 'publicBaseUrl=https://intake.test']));
    expect((await kubectl(['get', 'ingress', '-n', ns, '-o', 'name'])).stdout.trim()).toBe('');
    await ok(helm(['uninstall', release, '-n', ns]));
    const selector = `app.kubernetes.io/instance=${release}`;
    const kinds = 'deployments,services,configmaps,serviceaccounts,roles,rolebindings,ingresses,networkpolicies,poddisruptionbudgets,horizontalpodautoscalers';
    const left = await kubectl(['get', kinds, '-n', ns, '-l', selector, '-o', 'name']);
    expect(left.stdout.trim()).toBe('');
    const cluster = await kubectl(['get', 'clusterroles,clusterrolebindings', '-l', selector, '-o', 'name']);
    expect(cluster.stdout.trim()).toBe('');
    expect((await kubectl(['get', 'crd', 'webhookintegrations.intake.dev'])).code).toBe(0);
  });
});
