/**
 * `intake operator cleanup` against in-memory fakes of the two API clients it uses: it deletes
 * only the route Secrets the operator labelled, in its namespace, and its Lease, skips what
 * vanished meanwhile (404), and finds nothing on a second run. test/integration/operator-cleanup.test.ts
 * runs it against the real API server.
 */
import type { V1Secret } from '@kubernetes/client-node';
import pino from 'pino';
import { cleanupAfterOperator, type CleanupClients } from '../../../operator/cleanup.js';

const apiError = (code: number) => Object.assign(new Error(`HTTP ${code}`), { code });

/** A tiny API server in memory: Secrets and Leases. */
class FakeCluster {
  secrets = new Map<string, V1Secret>();
  leases = new Set<string>();
  /** Called before a Secret is deleted: lets a test change the cluster first (a concurrent writer). */
  beforeDelete?: (key: string) => void;

  secret(namespace: string, name: string, labels: Record<string, string>): void {
    this.secrets.set(`${namespace}/${name}`, { metadata: { namespace, name, labels } });
  }

  clients(): CleanupClients {
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
        this.beforeDelete?.(`${p.namespace}/${p.name}`);
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
    return { core, coordination } as unknown as CleanupClients;
  }
}

const ROUTE = { 'intake.dev/route': 'true', 'app.kubernetes.io/managed-by': 'intake-operator' };
const logger = pino({ level: 'silent' });
const options = { namespace: 'intake-system', leaseName: 'intake-operator', logger };

describe('cleanupAfterOperator', () => {
  it('deletes its route Secrets and its Lease, and nothing else', async () => {
    const c = new FakeCluster();
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
    c.secret('intake-system', 'route-wi-1', ROUTE);
    c.leases.add('intake-system/intake-operator');
    await cleanupAfterOperator(c.clients(), options);
    expect(await cleanupAfterOperator(c.clients(), options)).toEqual({ routeSecretsDeleted: [], leaseDeleted: false });
  });

  it('skips a route Secret deleted meanwhile', async () => {
    const c = new FakeCluster();
    c.secret('intake-system', 'route-wi-1', ROUTE);
    c.secret('intake-system', 'route-wi-2', ROUTE);
    c.beforeDelete = (key) => {
      if (key.endsWith('/route-wi-1')) c.secrets.delete(key);
    };
    const result = await cleanupAfterOperator(c.clients(), options);
    expect(result.routeSecretsDeleted).toEqual(['route-wi-2']);
    expect(c.secrets.size).toBe(0);
  });

  it('fails on an error that is not a missing object (the hook Job then fails, and helm says so)', async () => {
    const c = new FakeCluster();
    c.secret('intake-system', 'route-wi-1', ROUTE);
    c.beforeDelete = () => {
      throw apiError(403);
    };
    await expect(cleanupAfterOperator(c.clients(), options)).rejects.toMatchObject({ code: 403 });
  });
});
