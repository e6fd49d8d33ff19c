/**
 * What the operator leaves in a cluster when it is gone for good: `intake operator cleanup`, run by
 * the chart's post-delete hook once `helm uninstall` has removed the operator (and its RBAC, so it
 * cannot put anything back). It removes the operator's `intake.dev/cleanup` finalizer from every
 * WebhookIntegration and ApiKey (the tenants' own objects, kept with the CRDs: deleting one, its
 * namespace or the CRDs would otherwise wait for an operator that never comes), the route Secrets
 * it wrote in the ingesters' namespace, and its leader Lease. Credentials Secrets stay: they are
 * owned by the integrations they belong to and go with them. Idempotent: a second run finds nothing.
 */
import {
  setHeaderOptions,
  type CoordinationV1Api,
  type CoreV1Api,
  type CustomObjectsApi,
  type V1Secret,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { ROUTE_LABEL } from '../api/route.js';
import { DESTINATION_LABEL } from '../api/destination-document.js';
import { FINALIZER, GROUP, PLURALS, VERSION, type IntakeResource } from '../api/v1alpha1/types.js';
import { statusOf } from '../kube/config.js';
import { MANAGED_BY } from './naming.js';

const MERGE_PATCH = setHeaderOptions('Content-Type', 'application/merge-patch+json');
/** A finalizer patch that loses to a concurrent change is retried on the fresh object this often. */
const CONFLICT_RETRIES = 5;
const PAGE = 500;

export interface CleanupClients {
  core: Pick<CoreV1Api, 'listNamespacedSecret' | 'deleteNamespacedSecret'>;
  custom: Pick<
    CustomObjectsApi,
    | 'listClusterCustomObject'
    | 'listNamespacedCustomObject'
    | 'getNamespacedCustomObject'
    | 'patchNamespacedCustomObject'
  >;
  coordination: Pick<CoordinationV1Api, 'deleteNamespacedLease'>;
}

export interface CleanupOptions {
  /** The ingesters' namespace: where the route Secrets and the Lease are. */
  namespace: string;
  /** The namespaces the operator watched; empty means all (as the operator's --watch-namespaces). */
  watchNamespaces: string[];
  /** The operator's leader Lease (its --lease-name); undefined: none to delete. */
  leaseName?: string;
  logger: Logger;
}

export interface CleanupResult {
  /** Integrations and API keys whose finalizer was removed, as Kind/namespace/name. */
  finalizersRemoved: string[];
  /** Route Secrets deleted (names, in the ingesters' namespace). */
  routeSecretsDeleted: string[];
  leaseDeleted: boolean;
}

export async function cleanupAfterOperator(clients: CleanupClients, o: CleanupOptions): Promise<CleanupResult> {
  const result: CleanupResult = { finalizersRemoved: [], routeSecretsDeleted: [], leaseDeleted: false };
  const scopes = o.watchNamespaces.length > 0 ? o.watchNamespaces : [undefined];
  for (const kind of ['WebhookIntegration', 'ApiKey'] as const)
    for (const namespace of scopes)
      for (const obj of await listResources(clients.custom, kind, namespace))
        if ((obj.metadata.finalizers ?? []).includes(FINALIZER) && (await removeFinalizer(clients.custom, kind, obj)))
          result.finalizersRemoved.push(`${kind}/${obj.metadata.namespace}/${obj.metadata.name}`);

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
      finalizersRemoved: result.finalizersRemoved.length,
      routeSecretsDeleted: result.routeSecretsDeleted.length,
      leaseDeleted: result.leaseDeleted,
    },
    'cleaned up after the operator',
  );
  return result;
}

async function listResources(
  custom: CleanupClients['custom'],
  kind: IntakeResource['kind'],
  namespace: string | undefined,
): Promise<IntakeResource[]> {
  const plural = PLURALS[kind];
  const items: IntakeResource[] = [];
  let _continue: string | undefined;
  do {
    const page = { group: GROUP, version: VERSION, plural, limit: PAGE, ...(_continue ? { _continue } : {}) };
    const l = (
      namespace
        ? await custom.listNamespacedCustomObject({ ...page, namespace })
        : await custom.listClusterCustomObject(page)
    ) as { items: IntakeResource[]; metadata?: { _continue?: string; continue?: string } };
    items.push(...l.items);
    _continue = l.metadata?._continue ?? l.metadata?.continue;
  } while (_continue);
  return items;
}

/**
 * Removes our finalizer and only ours, guarded by resourceVersion so another controller's change
 * to the list is never overwritten. False when the object is gone or no longer has it.
 */
async function removeFinalizer(
  custom: CleanupClients['custom'],
  kind: IntakeResource['kind'],
  obj: IntakeResource,
): Promise<boolean> {
  const ref = {
    group: GROUP,
    version: VERSION,
    plural: PLURALS[kind],
    namespace: obj.metadata.namespace as string,
    name: obj.metadata.name as string,
  };
  let current = obj;
  for (let attempt = 0; ; attempt++) {
    const finalizers = current.metadata.finalizers ?? [];
    if (!finalizers.includes(FINALIZER)) return false;
    const body = {
      metadata: {
        finalizers: finalizers.filter((f) => f !== FINALIZER),
        resourceVersion: current.metadata.resourceVersion,
      },
    };
    try {
      await custom.patchNamespacedCustomObject({ ...ref, body }, MERGE_PATCH);
      return true;
    } catch (err) {
      const status = statusOf(err);
      if (status === 404) return false;
      if (status !== 409 || attempt >= CONFLICT_RETRIES) throw err;
    }
    try {
      current = (await custom.getNamespacedCustomObject(ref)) as IntakeResource;
    } catch (err) {
      if (statusOf(err) === 404) return false;
      throw err;
    }
  }
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
