/**
 * What the operator's caches keep, and how they are filled. Every resource and Secret the operator
 * manages is cached for as long as it runs: with 10,000 WebhookIntegrations and 10,000 ApiKeys
 * that is 60,000 objects, so each keeps only what a reconcile reads, and the first list is read a
 * page at a time (each page cut down as it arrives) instead of three whole lists of 20,000 held,
 * parsed and copied at once.
 */
import type { V1OwnerReference, V1Secret } from '@kubernetes/client-node';
import type { ListResult } from '../kube/informer.js';

/** Items per list page: a page of Secrets or resources is a few MiB of JSON at most, read and cut before the next. */
export const LIST_PAGE = 500;

/** One page of a list as client-node returns it. */
export interface ListPage<T> {
  items: T[];
  metadata?: { resourceVersion?: string; _continue?: string; continue?: string };
}

/**
 * Reads a whole list a page at a time (limit and continue: every page is of the same snapshot),
 * each item passed through `keep` as its page arrives so only what the cache keeps stays.
 */
export async function pagedList<T, U = T>(
  page: (limit: number, token: string | undefined) => Promise<ListPage<T>>,
  keep: (item: T) => U,
): Promise<ListResult<U>> {
  const items: U[] = [];
  let token: string | undefined;
  let resourceVersion = '';
  do {
    const answer = await page(LIST_PAGE, token);
    for (const item of answer.items) items.push(keep(item));
    resourceVersion = answer.metadata?.resourceVersion ?? '';
    token = answer.metadata?._continue ?? answer.metadata?.continue ?? undefined;
  } while (token);
  return { items, resourceVersion };
}

/** A plain copy of a string map (labels, annotations, data), undefined when empty. */
function strings(map: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!map) return undefined;
  const keys = Object.keys(map);
  if (keys.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const k of keys) out[k] = map[k] as string;
  return out;
}

const owner = (r: V1OwnerReference): V1OwnerReference => ({
  apiVersion: r.apiVersion,
  kind: r.kind,
  name: r.name,
  uid: r.uid,
  ...(r.controller ? { controller: true } : {}),
});

/**
 * A Secret the operator wrote (credentials or route), cut to what a reconcile reads: its name,
 * version, labels, annotations and owners (compared before a write) and its data (the generated
 * secrets, the published route). client-node's list answers are class instances with every
 * optional field present, timestamps as Dates; a watch event's Secret carries uid, timestamps
 * and type. None of that is read, and a cached Secret is never written back (writes are built
 * from the desired state).
 */
export function keptSecret(secret: V1Secret): V1Secret {
  const m = secret.metadata ?? {};
  const labels = strings(m.labels);
  const annotations = strings(m.annotations);
  const data = strings(secret.data);
  return {
    metadata: {
      name: m.name,
      namespace: m.namespace,
      resourceVersion: m.resourceVersion,
      ...(labels ? { labels } : {}),
      ...(annotations ? { annotations } : {}),
      ...(m.ownerReferences?.length ? { ownerReferences: m.ownerReferences.map(owner) } : {}),
      ...(m.deletionTimestamp ? { deletionTimestamp: m.deletionTimestamp } : {}),
    },
    ...(data ? { data } : {}),
  };
}

/** A resource as listed, without metadata.managedFields (about half of each one's bytes; nothing reads them). */
export function withoutManagedFields<T extends { metadata?: { managedFields?: unknown } }>(obj: T): T {
  if (obj.metadata?.managedFields) delete obj.metadata.managedFields;
  return obj;
}
