/**
 * `intake operator cleanup` against in-memory fakes of the three API clients it uses: it removes
 * only the operator's finalizer (others' stay), survives a concurrent change (409) and objects that
 * vanish (404), deletes only the route Secrets the operator labelled, in its namespace, keeps to
 * the watched namespaces, and finds nothing on a second run. test/integration/operator-cleanup.test.ts
 * runs it against the real API server.
 */
import type { V1Secret } from '@kubernetes/client-node';
import { jest } from '@jest/globals';
import pino from 'pino';
import { FINALIZER, type IntakeResource } from '../../../api/v1alpha1/types.js';
import { cleanupAfterOperator, type CleanupClients } from '../../../operator/cleanup.js';

type Kind = IntakeResource['kind'];
const PLURAL_KIND: Record<string, Kind> = { webhookintegrations: 'WebhookIntegration', apikeys: 'ApiKey' };
const apiError = (code: number) => Object.assign(new Error(`HTTP ${code}`), { code });

/** A tiny API server in memory: resources with resourceVersions, Secrets and Leases. */
class FakeCluster {
  resources = new Map<string, IntakeResource>();
  secrets = new Map<string, V1Secret>();
  leases = new Set<string>();
  patches = 0;
  /** Called before a patch is applied: lets a test change the object first (a concurrent writer). */
  beforePatch?: (key: string) => void;
  private rv = 1;

  add(kind: Kind, namespace: string, name: string, finalizers: string[]): void {
    this.resources.set(`${kind}/${namespace}/${name}`, {
      apiVersion: 'intake.dev/v1alpha1',
      kind,
      metadata: { namespace, name, finalizers, resourceVersion: String(this.rv++) },
      spec: {},
    } as IntakeResource);
  }

  secret(namespace: string, name: string, labels: Record<string, string>): void {
    this.secrets.set(`${namespace}/${name}`, { metadata: { namespace, name, labels } });
  }

  bump(key: string, finalizers: string[]): void {
    const obj = this.resources.get(key) as IntakeResource;
    this.resources.set(key, {
      ...obj,
      metadata: { ...obj.metadata, finalizers, resourceVersion: String(this.rv++) },
    } as IntakeResource);
  }

  finalizersOf(key: string): string[] | undefined {
    return this.resources.get(key)?.metadata.finalizers;
  }

  clients(): CleanupClients {
    const list = (plural: string, namespace?: string) => ({
      items: [...this.resources.values()].filter(
        (r) => r.kind === PLURAL_KIND[plural] && (!namespace || r.metadata.namespace === namespace),
      ),
      metadata: {},
    });
    const key = (p: { plural: string; namespace: string; name: string }) =>
      `${PLURAL_KIND[p.plural]}/${p.namespace}/${p.name}`;
    const custom = {
      listClusterCustomObject: async (p: { plural: string }) => list(p.plural),
      listNamespacedCustomObject: async (p: { plural: string; namespace: string }) => list(p.plural, p.namespace),
      getNamespacedCustomObject: async (p: { plural: string; namespace: string; name: string }) => {
        const obj = this.resources.get(key(p));
        if (!obj) throw apiError(404);
        return obj;
      },
      patchNamespacedCustomObject: async (p: {
        plural: string;
        namespace: string;
        name: string;
        body: { metadata: { finalizers: string[]; resourceVersion: string } };
      }) => {
        this.beforePatch?.(key(p));
        this.patches++;
        const obj = this.resources.get(key(p));
        if (!obj) throw apiError(404);
        if (obj.metadata.resourceVersion !== p.body.metadata.resourceVersion) throw apiError(409);
        this.bump(key(p), p.body.metadata.finalizers);
        return this.resources.get(key(p));
      },
    };
    const core = {
      listNamespacedSecret: async (p: { namespace: string; labelSelector: string }) => {
        const wanted = p.labelSelector.split(',').map((kv) => kv.split('='));
        return {
          items: [...this.secrets.values()].filter(
            (s) =>
              s.metadata?.namespace === p.namespace &&
              wanted.every(([k, v]) => s.metadata?.labels?.[k as string] === v),
          ),
          metadata: {},
        };
      },
      deleteNamespacedSecret: async (p: { namespace: string; name: string }) => {
        if (!this.secrets.delete(`${p.namespace}/${p.name}`)) throw apiError(404);
        return {};
      },
    };
    const coordination = {
      deleteNamespacedLease: async (p: { namespace: string; name: string }) => {
        if (!this.leases.delete(`${p.namespace}/${p.name}`)) throw apiError(404);
        return {};
      },
    };
    return { custom, core, coordination } as unknown as CleanupClients;
  }
}

const ROUTE = { 'intake.dev/route': 'true', 'app.kubernetes.io/managed-by': 'intake-operator' };
const logger = pino({ level: 'silent' });
const options = { namespace: 'intake-system', watchNamespaces: [], leaseName: 'intake-operator', logger };

describe('cleanupAfterOperator', () => {
  it("removes only the operator's finalizer, deletes its route Secrets and its Lease, and nothing else", async () => {
    const c = new FakeCluster();
    c.add('WebhookIntegration', 'team-a', 'grafana', [FINALIZER]);
    c.add('WebhookIntegration', 'team-b', 'zabbix', ['example.com/backup', FINALIZER]);
    c.add('ApiKey', 'team-a', 'node-exporter', [FINALIZER]);
    c.add('ApiKey', 'team-b', 'untouched', ['example.com/backup']);
    c.secret('intake-system', 'route-wi-1', ROUTE);
    c.secret('intake-system', 'route-ak-2', ROUTE);
    // Not the operator's routes: a Secret of the user's, a route label someone else set, another namespace.
    c.secret('intake-system', 'tls', {});
    c.secret('intake-system', 'hand-made', { 'intake.dev/route': 'true' });
    c.secret('team-a', 'intake-webhook-grafana', {
      'app.kubernetes.io/managed-by': 'intake-operator',
      'intake.dev/credentials': 'true',
    });
    c.leases.add('intake-system/intake-operator');
    c.leases.add('intake-system/someone-else');

    const result = await cleanupAfterOperator(c.clients(), options);

    expect(result.finalizersRemoved.sort()).toEqual([
      'ApiKey/team-a/node-exporter',
      'WebhookIntegration/team-a/grafana',
      'WebhookIntegration/team-b/zabbix',
    ]);
    expect(c.finalizersOf('WebhookIntegration/team-a/grafana')).toEqual([]);
    expect(c.finalizersOf('WebhookIntegration/team-b/zabbix')).toEqual(['example.com/backup']);
    expect(c.finalizersOf('ApiKey/team-a/node-exporter')).toEqual([]);
    expect(c.finalizersOf('ApiKey/team-b/untouched')).toEqual(['example.com/backup']);
    expect(result.routeSecretsDeleted.sort()).toEqual(['route-ak-2', 'route-wi-1']);
    expect([...c.secrets.keys()].sort()).toEqual([
      'intake-system/hand-made',
      'intake-system/tls',
      'team-a/intake-webhook-grafana',
    ]);
    expect(result.leaseDeleted).toBe(true);
    expect([...c.leases]).toEqual(['intake-system/someone-else']);
  });

  it('finds nothing to do on a second run', async () => {
    const c = new FakeCluster();
    c.add('WebhookIntegration', 'team-a', 'grafana', [FINALIZER]);
    c.secret('intake-system', 'route-wi-1', ROUTE);
    c.leases.add('intake-system/intake-operator');
    await cleanupAfterOperator(c.clients(), options);
    const patches = c.patches;
    expect(await cleanupAfterOperator(c.clients(), options)).toEqual({
      finalizersRemoved: [],
      routeSecretsDeleted: [],
      leaseDeleted: false,
    });
    expect(c.patches).toBe(patches);
  });

  it('keeps a finalizer another controller adds concurrently: retries on the fresh object after a conflict', async () => {
    const c = new FakeCluster();
    c.add('WebhookIntegration', 'team-a', 'grafana', [FINALIZER]);
    let raced = false;
    c.beforePatch = (key) => {
      if (raced) return;
      raced = true;
      c.bump(key, [FINALIZER, 'example.com/late']);
    };
    const result = await cleanupAfterOperator(c.clients(), options);
    expect(result.finalizersRemoved).toEqual(['WebhookIntegration/team-a/grafana']);
    expect(c.finalizersOf('WebhookIntegration/team-a/grafana')).toEqual(['example.com/late']);
    expect(c.patches).toBe(2);
  });

  it('skips an object deleted meanwhile, and one whose finalizer is already gone', async () => {
    const c = new FakeCluster();
    c.add('WebhookIntegration', 'team-a', 'gone', [FINALIZER]);
    c.add('WebhookIntegration', 'team-a', 'cleared', [FINALIZER]);
    c.beforePatch = (key) => {
      if (key.endsWith('/gone')) c.resources.delete(key);
      if (key.endsWith('/cleared') && c.finalizersOf(key)?.length) c.bump(key, []);
    };
    const result = await cleanupAfterOperator(c.clients(), options);
    expect(result.finalizersRemoved).toEqual([]);
    expect(c.resources.has('WebhookIntegration/team-a/gone')).toBe(false);
    expect(c.finalizersOf('WebhookIntegration/team-a/cleared')).toEqual([]);
  });

  it('with watched namespaces, touches integrations there only (it may not list others)', async () => {
    const c = new FakeCluster();
    c.add('WebhookIntegration', 'team-a', 'grafana', [FINALIZER]);
    c.add('WebhookIntegration', 'team-b', 'zabbix', [FINALIZER]);
    const clients = c.clients();
    const listCluster = jest.fn(clients.custom.listClusterCustomObject);
    const result = await cleanupAfterOperator(
      { ...clients, custom: { ...clients.custom, listClusterCustomObject: listCluster } },
      { ...options, watchNamespaces: ['team-a'] },
    );
    expect(result.finalizersRemoved).toEqual(['WebhookIntegration/team-a/grafana']);
    expect(c.finalizersOf('WebhookIntegration/team-b/zabbix')).toEqual([FINALIZER]);
    expect(listCluster).not.toHaveBeenCalled();
  });

  it('fails on an error that is not a missing object (the hook Job then fails, and helm says so)', async () => {
    const c = new FakeCluster();
    c.add('WebhookIntegration', 'team-a', 'grafana', [FINALIZER]);
    c.beforePatch = () => {
      throw apiError(403);
    };
    await expect(cleanupAfterOperator(c.clients(), options)).rejects.toMatchObject({ code: 403 });
  });
});
