/**
 * A list-watch cache (after client-go's reflector): list, then watch from the list's
 * resourceVersion; on 410 Gone (as an HTTP status or an in-stream ERROR event) relist; on any
 * other failure reconnect with jittered exponential backoff, keeping the cache meanwhile. Callbacks
 * only report keys: work happens in a work queue, never here.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

/**
 * Starts one watch request: client-node's `Watch` (the operator) and `KubeApiClient` (the
 * ingester, kube/api-client.ts) both have this shape. Resolves once the server accepted it, with
 * the controller that stops it; `done` is called once when it ends.
 */
export interface Watcher {
  watch<O>(
    path: string,
    query: Record<string, string | number | boolean>,
    onEvent: (phase: string, obj: O) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController>;
}

export interface InformerOptions<T extends KubernetesObject> {
  name: string;
  watcher: Watcher;
  list: () => Promise<ListResult<T>>;
  /** Collection path for watching, e.g. /api/v1/namespaces/intake/secrets. */
  watchPath: string;
  labelSelector?: string;
  /** Called with the old and new object on add, update and delete (old or new undefined). */
  onEvent: (newObj: T | undefined, oldObj: T | undefined) => void;
  logger: Logger;
  /** Server-side watch timeout; watches are renewed from the last resourceVersion. */
  watchTimeoutSeconds?: number;
  /**
   * What the cache keeps of an object, when its user reads only part of it (after trimmed);
   * onEvent still gets the whole object.
   */
  keep?: (obj: T) => T;
}

/**
 * The cache never holds metadata.managedFields: nothing here reads them, and they were about half
 * of each cached integration (1.2 of 2.5 KB) and a third of each Secret in the operator's heap
 * (docs/benchmarks.md). Writes are built from the desired state, never from a cached object, so
 * none sends them back without them.
 */
function trimmed<T extends KubernetesObject>(obj: T): T {
  if (obj.metadata?.managedFields) delete obj.metadata.managedFields;
  return obj;
}

export const keyOf = (obj: KubernetesObject): string =>
  obj.metadata?.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : (obj.metadata?.name ?? '');

class GoneError extends Error {}

export class Informer<T extends KubernetesObject> {
  private readonly cache = new Map<string, T>();
  private resourceVersion = '';
  private stopped = false;
  private synced = false;
  private abort?: AbortController;
  private readonly syncWaiters: Array<() => void> = [];
  private failures = 0;

  constructor(private readonly o: InformerOptions<T>) {}

  private kept(obj: T): T {
    return this.o.keep ? this.o.keep(trimmed(obj)) : trimmed(obj);
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  get(key: string): T | undefined {
    return this.cache.get(key);
  }

  list(): T[] {
    return [...this.cache.values()];
  }

  /** Resolves once the first list has filled the cache. */
  waitForSync(): Promise<void> {
    return this.synced ? Promise.resolve() : new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  start(): void {
    void this.loop();
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }

  private async loop(): Promise<void> {
    let needList = true;
    while (!this.stopped) {
      try {
        if (needList) await this.relist();
        needList = false;
        await this.watchOnce();
        this.failures = 0;
      } catch (err) {
        if (this.stopped) return;
        if (err instanceof GoneError || (err as { statusCode?: number; code?: number }).statusCode === 410) {
          this.o.logger.info({ informer: this.o.name }, 'watch expired (410); relisting');
          needList = true;
          continue;
        }
        this.failures++;
        // 0.5 s doubling to 10 s, +-20% jitter so replicas do not reconnect in step.
        const delay = Math.min(10_000, 250 * 2 ** Math.min(this.failures, 6)) * (0.8 + Math.random() * 0.4);
        this.o.logger.warn(
          { informer: this.o.name, err: { message: (err as Error).message }, retryInMs: Math.round(delay) },
          'list/watch failed; keeping the cache and retrying',
        );
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  private async relist(): Promise<void> {
    const { items, resourceVersion } = await this.o.list();
    const seen = new Set<string>();
    for (const item of items) {
      const key = keyOf(item);
      seen.add(key);
      const old = this.cache.get(key);
      this.cache.set(key, this.kept(item));
      if (!old || old.metadata?.resourceVersion !== item.metadata?.resourceVersion) this.o.onEvent(item, old);
    }
    for (const [key, old] of this.cache) {
      if (seen.has(key)) continue;
      this.cache.delete(key);
      this.o.onEvent(undefined, old);
    }
    this.resourceVersion = resourceVersion;
    if (!this.synced) {
      this.synced = true;
      for (const wake of this.syncWaiters.splice(0)) wake();
    }
  }

  /** One watch connection; resolves when the server ends it normally, rejects on failure or 410. */
  private watchOnce(): Promise<void> {
    return new Promise((resolve, reject) => {
      let failed: Error | undefined;
      const query: Record<string, string | number | boolean> = {
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: Math.round((this.o.watchTimeoutSeconds ?? 300) * (0.9 + Math.random() * 0.2)),
      };
      if (this.o.labelSelector) query.labelSelector = this.o.labelSelector;
      this.o.watcher
        .watch(
          this.o.watchPath,
          query,
          (phase: string, obj: T & { code?: number; message?: string }) => {
            if (failed) return;
            if (phase === 'ERROR') {
              failed =
                obj.code === 410
                  ? new GoneError('resourceVersion too old')
                  : new Error(`watch error ${obj.code ?? ''}: ${obj.message ?? ''}`);
              this.abort?.abort();
              return;
            }
            if (obj.metadata?.resourceVersion) this.resourceVersion = obj.metadata.resourceVersion;
            if (phase === 'BOOKMARK') return;
            const key = keyOf(obj);
            const old = this.cache.get(key);
            if (phase === 'DELETED') {
              this.cache.delete(key);
              this.o.onEvent(undefined, old ?? obj);
            } else {
              this.cache.set(key, this.kept(obj));
              this.o.onEvent(obj, old);
            }
          },
          (err: unknown) => {
            if (failed) reject(failed);
            else if (err && !(this.stopped && (err as Error).name === 'AbortError')) reject(err as Error);
            else resolve();
          },
        )
        .then(
          (controller) => {
            this.abort = controller;
            if (this.stopped) controller.abort();
          },
          (err: unknown) => reject(err as Error),
        );
    });
  }
}
