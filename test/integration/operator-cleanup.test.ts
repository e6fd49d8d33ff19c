/**
 * `intake operator cleanup` (what the chart's post-delete hook runs) against the real API server:
 * after the real operator has written route Secrets for integrations and API keys and its Lease,
 * and is gone, the built CLI removes those and nothing else, and an integration deleted afterwards
 * goes at once. Then the same run with the hook's own ServiceAccount
 * and RBAC, rendered from the chart: they are enough, and allow nothing more (test/node runs the
 * hook itself through `helm uninstall`).
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { jest } from '@jest/globals';
import { parseAllDocuments } from 'yaml';
import {
  apply,
  applyCrds,
  createNamespace,
  KUBECONFIG,
  kubeClients,
  kubeconfigFor,
  kubectl,
  requireCluster,
  runIntake,
  startOperator,
  uniqueName,
  type Proc,
} from './support/cluster.js';
import { ROOT } from '../support/paths.js';
import { waitFor } from '../support/waiting.js';

jest.setTimeout(180_000);
requireCluster();

const HELM = resolve(ROOT, '.tools/bin/helm');
const CHART = resolve(ROOT, 'charts/intake');
const ROUTES = 'intake.dev/route=true,app.kubernetes.io/managed-by=intake-operator';
const { core } = kubeClients();
const namespaces: string[] = [];
let operator: Proc | undefined;

afterAll(async () => {
  await operator?.stop();
  if (namespaces.length > 0) await kubectl(['delete', 'namespace', ...namespaces, '--wait=false']);
});

const names = async (args: string[]): Promise<string[]> => {
  const r = await kubectl(['get', ...args, '-o', 'name']);
  if (r.code !== 0) throw new Error(r.stderr);
  return r.stdout.split('\n').filter(Boolean).sort();
};

/** The real operator reconciles two integrations and a key in `tenant`, then stops: what it leaves behind. */
async function operatorLeavesBehind(system: string, tenant: string): Promise<void> {
  operator = await startOperator(system, [tenant], ['--leader-elect']);
  await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: grafana, namespace: ${tenant}}
spec: {}
---
apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: zabbix, namespace: ${tenant}}
spec: {}
---
apiVersion: intake.dev/v1alpha1
kind: ApiKey
metadata: {name: meter, namespace: ${tenant}}
spec: {}
`);
  await waitFor(
    'route Secrets written',
    async () =>
      (await names(['secrets', '-n', system, '-l', ROUTES])).length === 3 &&
      (await names(['secrets', '-n', tenant])).length >= 3,
    60_000,
    250,
  );
  await waitFor('the Lease', async () => (await kubectl(['get', 'lease', 'intake-operator', '-n', system])).code === 0);
  // A plain Secret in the operator's namespace that is not a route: not the cleanup's to delete.
  await kubectl(['create', 'secret', 'generic', 'unrelated', '-n', system, '--from-literal=k=v']);
  await operator.stop();
  operator = undefined;
}

describe('intake operator cleanup', () => {
  it("removes the operator's route Secrets and Lease, keeps everything else; a second run finds nothing", async () => {
    await applyCrds();
    const [system, tenant] = [uniqueName('cleanup-system'), uniqueName('cleanup-tenant')];
    namespaces.push(system, tenant);
    await createNamespace(system);
    await createNamespace(tenant);
    await operatorLeavesBehind(system, tenant);
    const credentials = await names(['secrets', '-n', tenant]);

    const args = ['operator', 'cleanup', '--kubeconfig', KUBECONFIG, '--namespace', system];
    const first = await runIntake(args);
    expect([first.code, first.stdout]).toEqual([0, '']);
    // The operator's log (stderr): what it did, as counts.
    expect(first.stderr).toMatch(/"routeSecretsDeleted":3,"leaseDeleted":true/);

    expect(await names(['secrets', '-n', system, '-l', ROUTES])).toEqual([]);
    expect(await names(['secrets', '-n', system])).toContain('secret/unrelated');
    expect((await kubectl(['get', 'lease', 'intake-operator', '-n', system])).code).not.toBe(0);
    // The integrations keep their credentials (owned by them, they go with them).
    expect(await names(['secrets', '-n', tenant])).toEqual(credentials);

    // Deleting an integration does not wait for an operator: it is gone at once, its credentials after it.
    const deleted = await kubectl(['delete', 'webhookintegration', 'grafana', '-n', tenant, '--timeout=30s']);
    expect([deleted.code, deleted.stderr]).toEqual([0, '']);
    await waitFor(
      'credentials garbage-collected',
      () =>
        core.readNamespacedSecret({ namespace: tenant, name: 'intake-webhook-grafana' }).then(
          () => false,
          () => true,
        ),
      30_000,
      250,
    );

    // Again: nothing left to do.
    const second = await runIntake(args);
    expect([second.code, second.stdout]).toEqual([0, '']);
    expect(second.stderr).toMatch(/"routeSecretsDeleted":0,"leaseDeleted":false/);
  });

  it("runs with the chart's hook ServiceAccount and RBAC, which allow it nothing more", async () => {
    await applyCrds();
    const [system, tenant] = [uniqueName('hook-system'), uniqueName('hook-tenant')];
    namespaces.push(system, tenant);
    await createNamespace(system);
    await createNamespace(tenant);
    await operatorLeavesBehind(system, tenant);

    // The hook's objects as `helm uninstall` creates them, but the Job: this cluster has no node to run it.
    const release = uniqueName('hook');
    const rendered = await new Promise<string>((done, fail) => {
      const child = spawn(HELM, [
        'template',
        release,
        CHART,
        '-n',
        system,
        '--set',
        `operator.watchNamespaces={${tenant}}`,
        '--show-only',
        'templates/cleanup-hook.yaml',
      ]);
      let out = '';
      let err = '';
      child.stdout?.on('data', (d) => (out += d));
      child.stderr?.on('data', (d) => (err += d));
      child.on('close', (code) => (code === 0 ? done(out) : fail(new Error(err))));
    });
    type Doc = {
      kind: string;
      metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
      spec?: { template: { spec: { serviceAccountName: string; containers: Array<{ args: string[] }> } } };
    };
    const docs = parseAllDocuments(rendered)
      .map((d) => d.toJS() as Doc)
      .filter(Boolean);
    for (const d of docs) expect(d.metadata.annotations?.['helm.sh/hook']).toBe('post-delete');
    const job = docs.find((d) => d.kind === 'Job');
    if (!job?.spec) throw new Error('no Job in the hook');
    const objects = docs.filter((d) => d.kind !== 'Job');
    expect(objects.map((d) => `${d.kind}/${d.metadata.namespace ?? ''}`).sort()).toEqual([
      `Role/${system}`,
      `RoleBinding/${system}`,
      `ServiceAccount/${system}`,
    ]);
    const applied = await kubectl(['apply', '-f', '-'], objects.map((d) => JSON.stringify(d)).join('\n'));
    expect([applied.code, applied.stderr]).toEqual([0, '']);

    const sa = job.spec.template.spec.serviceAccountName;
    const can = async (args: string[]) =>
      (await kubectl(['auth', 'can-i', ...args, `--as=system:serviceaccount:${system}:${sa}`])).stdout.trim();
    expect(await can(['delete', 'secrets', '-n', system])).toBe('yes');
    for (const denied of [
      ['get', 'secrets', '-n', tenant],
      ['list', 'secrets', '-n', tenant],
      ['create', 'secrets', '-n', system],
      ['update', 'secrets', '-n', system],
      ['delete', 'webhookintegrations.intake.dev', '-n', tenant],
      ['get', 'webhookintegrations.intake.dev', '-n', tenant],
      ['patch', 'webhookintegrations.intake.dev', '-n', tenant],
      ['patch', 'webhookintegrations.intake.dev', '-n', system],
      ['update', 'leases/intake-operator', '-n', system],
      ['delete', 'leases/another', '-n', system],
      ['list', 'webhookintegrations.intake.dev', '-A'],
    ])
      expect([denied.join(' '), await can(denied)]).toEqual([denied.join(' '), 'no']);

    // The Job's own arguments, with a token of its ServiceAccount.
    const run = await runIntake([
      ...job.spec.template.spec.containers[0]!.args,
      '--kubeconfig',
      await kubeconfigFor(sa, system),
    ]);
    expect([run.code, run.stdout]).toEqual([0, '']);
    expect(run.stderr).toMatch(/"routeSecretsDeleted":3,"leaseDeleted":true/);
    expect(await names(['secrets', '-n', system, '-l', ROUTES])).toEqual([]);
  });
});
