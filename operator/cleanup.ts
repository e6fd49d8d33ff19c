/**
 * What the operator leaves in a cluster when it is gone for good: `intake operator cleanup`, run by
 * the chart's post-delete hook once `helm uninstall` has removed the operator (and its RBAC, so it
 * cannot put anything back). It deletes the route Secrets it wrote in the ingesters' namespace and
 * its leader Lease. The tenants' integrations and API keys stay, kept with the CRDs, and so do their
 * credentials Secrets: they are owned by the integrations they belong to and go with them.
 * Idempotent: a second run finds nothing.
 */
import type { CoordinationV1Api, CoreV1Api, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { ROUTE_LABEL } from '../api/route.js';
import { DESTINATION_LABEL } from '../api/destination-document.js';
import { statusOf } from '../kube/config.js';
import { MANAGED_BY } from './naming.js';

const PAGE = 500;

export interface CleanupClients {
  core: Pick<CoreV1Api, 'listNamespacedSecret' | 'deleteNamespacedSecret'>;
  coordination: Pick<CoordinationV1Api, 'deleteNamespacedLease'>;
}

export interface CleanupOptions {
  /** The ingesters' namespace: where the route Secrets and the Lease are. */
  namespace: string;
  /** The operator's leader Lease (its --lease-name); undefined: none to delete. */
  leaseName?: string;
  logger: Logger;
}

export interface CleanupResult {
  /** Route Secrets deleted (names, in the ingesters' namespace). */
  routeSecretsDeleted: string[];
  leaseDeleted: boolean;
}

export async function cleanupAfterOperator(clients: CleanupClients, o: CleanupOptions): Promise<CleanupResult> {
  const result: CleanupResult = { routeSecretsDeleted: [], leaseDeleted: false };
  for (const secret of await routeSecrets(clients.core, o.namespace)) {
    const name = secret.metadata?.name as string;
    try {
      await clients.core.deleteNamespacedSecret({ namespace: o.namespace, name });
      result.routeSecretsDeleted.push(name);
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
  }

  if (o.leaseName) {
    try {
      await clients.coordination.deleteNamespacedLease({ namespace: o.namespace, name: o.leaseName });
      result.leaseDeleted = true;
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
  }
  o.logger.info(
    {
      routeSecretsDeleted: result.routeSecretsDeleted.length,
      leaseDeleted: result.leaseDeleted,
    },
    'cleaned up after the operator',
  );
  return result;
}

/**
 * The route Secrets the operator wrote (and the documents of teams' Destinations beside them):
 * labelled as routes (or destinations) and as managed by it, nothing else.
 */
async function routeSecrets(core: CleanupClients['core'], namespace: string): Promise<V1Secret[]> {
  const items: V1Secret[] = [];
  for (const label of [ROUTE_LABEL, DESTINATION_LABEL]) items.push(...(await labelledSecrets(core, namespace, label)));
  return items;
}

async function labelledSecrets(core: CleanupClients['core'], namespace: string, label: string): Promise<V1Secret[]> {
  const labelSelector = `${label}=true,${Object.entries(MANAGED_BY)
    .map(([k, v]) => `${k}=${v}`)
    .join(',')}`;
  const items: V1Secret[] = [];
  let _continue: string | undefined;
  do {
    const l = await core.listNamespacedSecret({
      namespace,
      labelSelector,
      limit: PAGE,
      ...(_continue ? { _continue } : {}),
    });
    items.push(...l.items);
    _continue = l.metadata?._continue;
  } while (_continue);
  return items;
}
