/**
 * How many API writes the operator makes, counted through the real API server by a proxy that
 * only the operator talks to (support/counting-proxy.ts): a new WebhookIntegration or ApiKey is
 * brought to Ready with at most three (its credentials Secret, its route Secret, its status), a
 * resync of unchanged ones writes nothing (the periodic one, and a restarted operator's first), and
 * deleting one removes its route without a finalizer.
 */
import { jest } from '@jest/globals';
import { routeSecretName } from '../../operator/naming.js';
import {
  apply,
  applyCrds,
  createNamespace,
  kubeClients,
  kubectl,
  requireCluster,
  startOperator,
  uniqueName,
  type Proc,
} from './support/cluster.js';
import { startCountingProxy, type CountingProxy, type RecordedWrite } from './support/counting-proxy.js';
import { waitFor } from '../support/waiting.js';

jest.setTimeout(180_000);

const PER_KIND = 30;
const system = uniqueName('writes-system');
const tenants = [uniqueName('writes-a'), uniqueName('writes-b'), uniqueName('writes-c')];
const { core, custom } = kubeClients();
let proxy: CountingProxy;
let operator: Proc | undefined;

type Kind = 'WebhookIntegration' | 'ApiKey';
interface Resource {
  kind: Kind;
  namespace: string;
  name: string;
}
const PLURAL = { WebhookIntegration: 'webhookintegrations', ApiKey: 'apikeys' } as const;
const resources: Resource[] = Array.from({ length: PER_KIND }, (_, i) => [
  { kind: 'WebhookIntegration' as const, namespace: tenants[i % tenants.length] as string, name: `hook-${i}` },
  { kind: 'ApiKey' as const, namespace: tenants[i % tenants.length] as string, name: `key-${i}` },
]).flat();

const manifest = (r: Resource): string =>
  `apiVersion: intake.dev/v1alpha1\nkind: ${r.kind}\nmetadata: {name: ${r.name}, namespace: ${r.namespace}}\nspec: {}\n`;

/** The writes that concern one resource: its own object and status, its two Secrets, its Events. */
function writesFor(r: Resource, writes: readonly RecordedWrite[]): RecordedWrite[] {
  const object = `/apis/intake.dev/v1alpha1/namespaces/${r.namespace}/${PLURAL[r.kind]}/${r.name}`;
  const credentials = `${r.kind === 'WebhookIntegration' ? 'intake-webhook' : 'intake-apikey'}-${r.name}`;
  const route = routeSecretName(r.kind, r.namespace, r.name);
  const tenantSecrets = `/api/v1/namespaces/${r.namespace}/secrets`;
  const routeSecrets = `/api/v1/namespaces/${system}/secrets`;
  return writes.filter(
    (w) =>
      w.path === object ||
      w.path === `${object}/status` ||
      w.path === `${tenantSecrets}/${credentials}` ||
      (w.path === tenantSecrets && w.createdName === credentials) ||
      w.path === `${routeSecrets}/${route}` ||
      (w.path === routeSecrets && w.createdName === route) ||
      (w.path === `/api/v1/namespaces/${r.namespace}/events` && w.createdName === r.name),
  );
}

const readyCount = async (): Promise<number> => {
  let ready = 0;
  for (const namespace of tenants)
    for (const plural of Object.values(PLURAL)) {
      const list = (await custom.listNamespacedCustomObject({
        group: 'intake.dev',
        version: 'v1alpha1',
        namespace,
        plural,
      })) as { items: Array<{ status?: { conditions?: Array<{ type: string; status: string }> } }> };
      ready += list.items.filter((i) =>
        i.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      ).length;
    }
  return ready;
};

/** Reconciles the operator has finished (its metrics), whatever their result. */
const reconciles = async (proc: Proc): Promise<number> => {
  const text = await (await fetch(`${proc.adminUrl}/metrics`)).text();
  return [...text.matchAll(/^intake_operator_reconciles_total\{[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
};

const startCountedOperator = (): Promise<Proc> =>
  startOperator(system, tenants, [
    '--kubeconfig',
    proxy.kubeconfig,
    '--workers',
    '4',
    '--resync-period',
    '3',
    '--log-level',
    'info',
  ]);

const routeSecretExists = (r: Resource): Promise<boolean> =>
  core.readNamespacedSecret({ namespace: system, name: routeSecretName(r.kind, r.namespace, r.name) }).then(
    () => true,
    () => false,
  );

beforeAll(async () => {
  requireCluster();
  await applyCrds();
  for (const ns of [system, ...tenants]) await createNamespace(ns);
  proxy = await startCountingProxy();
});

afterAll(async () => {
  await kubectl(['delete', 'namespace', ...tenants, '--wait=false']);
  await operator?.stop();
  await proxy?.close();
  await kubectl(['delete', 'namespace', system, '--wait=false']);
});

describe('operator API writes', () => {
  it('brings new integrations and API keys to Ready with at most three writes each', async () => {
    operator = await startCountedOperator();
    await waitFor('caches synced', async () => (await fetch(`${operator?.adminUrl}/readyz`)).ok, 20_000, 100);
    expect(proxy.writes()).toEqual([]);

    await apply(resources.map((r) => manifest(r)).join('---\n'));
    await waitFor('all Ready', async () => (await readyCount()) === resources.length, 60_000, 250);
    // The status is each reconcile's last write; give a straggler the time to show.
    await new Promise((r) => setTimeout(r, 1000));

    const writes = proxy.writes();
    const perResource = resources.map((r) => ({ ...r, writes: writesFor(r, writes) }));
    expect(perResource.filter((r) => r.writes.length > 3)).toEqual([]);
    // Every write belongs to one of them, and none was refused (a refused write is retried: more writes).
    expect(perResource.reduce((n, r) => n + r.writes.length, 0)).toBe(writes.length);
    expect(writes.filter((w) => w.status >= 300)).toEqual([]);
    // What the three are: two Secrets created and the status patched; no finalizer, no Event.
    const shapes = new Set(
      perResource.map((r) =>
        r.writes
          .map((w) => `${w.method} ${w.path.endsWith('/status') ? 'status' : w.path.split('/').slice(-1)[0]}`)
          .sort()
          .join(', '),
      ),
    );
    expect([...shapes]).toEqual(['PATCH status, POST secrets, POST secrets']);
    const hook = (await custom.getNamespacedCustomObject({
      group: 'intake.dev',
      version: 'v1alpha1',
      namespace: tenants[0] as string,
      plural: 'webhookintegrations',
      name: 'hook-0',
    })) as { metadata: { finalizers?: string[] } };
    expect(hook.metadata.finalizers ?? []).toEqual([]);
  });

  it('writes nothing in a resync of unchanged integrations, periodic or after a restart', async () => {
    const running = operator as Proc;
    proxy.reset();
    // --resync-period 3: every resource is reconciled again within a few seconds.
    const before = await reconciles(running);
    await waitFor(
      'a periodic resync',
      async () => (await reconciles(running)) >= before + resources.length,
      30_000,
      200,
    );
    expect(proxy.writes()).toEqual([]);

    // A new operator knows nothing of its predecessor's writes: it reads everything and finds it done.
    await running.stop();
    proxy.reset();
    operator = await startCountedOperator();
    const restarted = operator;
    await waitFor('first resync', async () => (await reconciles(restarted)) >= resources.length, 60_000, 200);
    await new Promise((r) => setTimeout(r, 1000));
    expect(proxy.writes()).toEqual([]);
  });

  it('removes the route of a deleted resource', async () => {
    const gone = [resources[0], resources[1]] as Resource[];
    proxy.reset();
    for (const r of gone) {
      const deleted = await kubectl(['delete', r.kind.toLowerCase(), r.name, '-n', r.namespace, '--timeout=30s']);
      expect([deleted.code, deleted.stderr]).toEqual([0, '']);
    }
    for (const r of gone)
      await waitFor(`${r.name}'s route deleted`, async () => !(await routeSecretExists(r)), 30_000, 200);
    // Each route deleted; nothing else. (A write may come twice, the second answered 404: a
    // reconcile from a cache that still showed what was already gone. And a route may be gone
    // before the operator deletes it: the garbage collector deletes a route its resource owns,
    // sometimes first, as seen in a full run for the ApiKey's.)
    const writes = proxy.writes();
    const routeDeletes = new Set(
      gone.map((r) => `DELETE /api/v1/namespaces/${system}/secrets/${routeSecretName(r.kind, r.namespace, r.name)}`),
    );
    expect(writes.map((w) => `${w.method} ${w.path}`).filter((w) => !routeDeletes.has(w))).toEqual([]);
    expect(writes.filter((w) => w.status >= 300 && w.status !== 404)).toEqual([]);
  });

  it('writes no new credentials for a resource deleted while its watch lags behind the garbage collector', async () => {
    // The garbage collector deletes the credentials Secret of a deleted integration; when that
    // Secret's deletion reaches the operator before the integration's own, its cache still shows
    // the integration, whose credentials look deleted by hand. A restarted operator whose watch of
    // WebhookIntegrations runs 3 s late, and the test deleting the Secret as the garbage collector
    // would (whose own start on a new kind can take longer than 3 s), make that order certain.
    await operator?.stop();
    proxy.delayWatches('/webhookintegrations', 3000);
    operator = await startCountedOperator();
    const restarted = operator;
    await waitFor('first resync', async () => (await reconciles(restarted)) >= resources.length - 2, 60_000, 200);
    const r = resources[2] as Resource;
    expect(r.kind).toBe('WebhookIntegration');
    const credentials = `intake-webhook-${r.name}`;
    proxy.reset();
    const deleted = await kubectl(['delete', 'webhookintegration', r.name, '-n', r.namespace, '--timeout=30s']);
    expect([deleted.code, deleted.stderr]).toEqual([0, '']);
    await core.deleteNamespacedSecret({ namespace: r.namespace, name: credentials }).catch((error: unknown) => {
      if ((error as { code?: number }).code !== 404) throw error; // the garbage collector was first
    });
    await waitFor(`${r.name}'s route deleted`, async () => !(await routeSecretExists(r)), 30_000, 200);
    // The deletion has reached the operator; anything it wrote from its stale view is done by now.
    await new Promise((done) => setTimeout(done, 1000));
    const left = await core.readNamespacedSecret({ namespace: r.namespace, name: credentials }).then(
      () => true,
      () => false,
    );
    expect(left).toBe(false);
    expect(proxy.writes().map((w) => `${w.method} ${w.path}`)).toEqual([
      `DELETE /api/v1/namespaces/${system}/secrets/${routeSecretName(r.kind, r.namespace, r.name)}`,
    ]);
  });
});
