/**
 * The list pages' live feed: one Server-Sent Events stream per browser tab, fed by Kubernetes
 * watches made as the user (never a poll loop). It starts with a snapshot of both kinds, then
 * forwards each change; when a watch ends (the API server closes watches every few minutes, or
 * answers 410 Gone) the kind is listed again and a fresh snapshot sent, so the page never drifts.
 */
import type { ServerResponse } from 'node:http';
import { KubeError, KINDS, type Plural, type UserClient } from './kube.js';

/** The parts of an object the pages show; managedFields and the last-applied annotation are big and unused. */
export function slim(obj: Record<string, unknown>): Record<string, unknown> {
  const metadata = { ...(obj.metadata as Record<string, unknown>) };
  delete metadata.managedFields;
  const annotations = metadata.annotations as Record<string, string> | undefined;
  if (annotations?.['kubectl.kubernetes.io/last-applied-configuration']) {
    const rest = { ...annotations };
    delete rest['kubectl.kubernetes.io/last-applied-configuration'];
    metadata.annotations = rest;
  }
  return { ...obj, metadata };
}

export interface LiveOptions {
  /** Pause before listing again after a watch failed (not after a normal close). */
  retryMs?: number;
  keepAliveMs?: number;
}

export function streamNamespace(
  user: UserClient,
  namespace: string,
  res: ServerResponse,
  options: LiveOptions = {},
): () => void {
  const { retryMs = 2000, keepAliveMs = 20_000 } = options;
  let closed = false;
  const aborts = new Set<AbortController>();
  const timers = new Set<NodeJS.Timeout>();
  const send = (event: string, data: unknown) => {
    if (!closed) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };

  const follow = async (plural: Plural): Promise<void> => {
    if (closed) return;
    let resourceVersion: string | undefined;
    try {
      const list = await user.list(namespace, plural);
      resourceVersion = list.metadata?.resourceVersion;
      send('snapshot', { plural, items: list.items.map(slim) });
    } catch (err) {
      const e = KubeError.from(err);
      send('failure', { plural, status: e.status, message: e.message });
      // Forbidden stays forbidden until RBAC changes: the user reloads then. Anything else: try again.
      if (e.status !== 403 && e.status !== 401) again(plural, retryMs);
      return;
    }
    const controller = await user.watch
      .watch(
        `/apis/intake.dev/v1alpha1/namespaces/${encodeURIComponent(namespace)}/${plural}`,
        { resourceVersion, allowWatchBookmarks: true },
        (phase, obj: Record<string, unknown>) => {
          if (phase === 'ADDED' || phase === 'MODIFIED' || phase === 'DELETED')
            send('change', { plural, type: phase, object: slim(obj) });
        },
        (err: unknown) => {
          if (controller) aborts.delete(controller);
          // A normal close (err null) lists again at once; a failure after a pause.
          again(plural, err ? retryMs : 0);
        },
      )
      .catch(() => {
        again(plural, retryMs);
        return undefined;
      });
    if (controller) {
      if (closed) controller.abort();
      else aborts.add(controller);
    }
  };

  const again = (plural: Plural, delayMs: number) => {
    if (closed) return;
    const t = setTimeout(() => {
      timers.delete(t);
      void follow(plural);
    }, delayMs);
    timers.add(t);
  };

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  });
  res.write(': intake console\n\n');
  const keepAlive = setInterval(() => !closed && res.write(': keep-alive\n\n'), keepAliveMs);
  for (const plural of Object.keys(KINDS) as Plural[]) void follow(plural);

  const stop = () => {
    if (closed) return;
    closed = true;
    clearInterval(keepAlive);
    for (const t of timers) clearTimeout(t);
    for (const a of aborts) a.abort();
  };
  res.on('close', stop);
  return stop;
}
