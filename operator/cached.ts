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

/** Entries beyond this empty the pool (a cache of shared strings, not a record of every one). */
const MAX_POOLED = 65_536;

/**
 * One copy of each string that many cached objects repeat: every resource's and Secret's parse
 * makes its own copy of its namespace, kind, labels and conditions' reasons, messages and times,
 * the same for thousands of objects (about a quarter of a cached integration's bytes).
 */
export class StringPool {
  private readonly pool = new Map<string, string>();

  intern<T>(value: T): T {
    if (typeof value !== 'string') return value;
    const known = this.pool.get(value);
    if (known !== undefined) return known as T;
    if (this.pool.size >= MAX_POOLED) this.pool.clear();
    this.pool.set(value, value);
    return value;
  }

  get size(): number {
    return this.pool.size;
  }
}

const shared = new StringPool();

/** A plain copy of a string map, undefined when empty; values pooled unless `unique` (a Secret's data). */
function strings(map: Record<string, string> | undefined, unique = false): Record<string, string> | undefined {
  if (!map) return undefined;
  const keys = Object.keys(map);
  if (keys.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const k of keys) out[k] = unique ? (map[k] as string) : shared.intern(map[k] as string);
  return out;
}

const owner = (r: V1OwnerReference): V1OwnerReference => ({
  apiVersion: shared.intern(r.apiVersion),
  kind: shared.intern(r.kind),
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
  const data = strings(secret.data, true);
  return {
    metadata: {
      name: m.name,
      namespace: shared.intern(m.namespace),
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

type CachedResource = {
  apiVersion?: string;
  kind?: string;
  metadata?: { namespace?: string; creationTimestamp?: unknown; managedFields?: unknown };
  status?: { conditions?: Array<Record<string, unknown>> };
};

/**
 * A resource (WebhookIntegration, ApiKey, IntakeQuota) as its cache keeps it: whole but for
 * managedFields, its repeated strings (kind, namespace, the conditions) pooled. Changed in place:
 * the object is the one the informer hands to its handlers, with the same values.
 */
export function keptResource<T extends object>(resource: T): T {
  const obj = withoutManagedFields(resource as CachedResource);
  if (obj.apiVersion) obj.apiVersion = shared.intern(obj.apiVersion);
  if (obj.kind) obj.kind = shared.intern(obj.kind);
  const m = obj.metadata;
  if (m) {
    m.namespace = shared.intern(m.namespace);
    if (typeof m.creationTimestamp === 'string') m.creationTimestamp = shared.intern(m.creationTimestamp);
  }
  for (const condition of obj.status?.conditions ?? [])
    for (const key of Object.keys(condition)) condition[key] = shared.intern(condition[key]);
  return resource;
}
