/** Loads Kubernetes client configuration: a kubeconfig file when given, else in-cluster. */
import { KubeConfig } from '@kubernetes/client-node';

export function loadKubeConfig(path?: string): KubeConfig {
  const kc = new KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromCluster();
  return kc;
}

/** The HTTP status of a failed client-node call, if it was an API error. */
export function statusOf(err: unknown): number | undefined {
  const e = err as { code?: unknown; statusCode?: unknown };
  if (typeof e?.code === 'number') return e.code;
  if (typeof e?.statusCode === 'number') return e.statusCode;
  return undefined;
}

/** The API server refuses new objects in a namespace being deleted; the namespace takes ours with it. */
export function isNamespaceTerminating(err: unknown): boolean {
  const e = err as { body?: unknown; message?: unknown };
  return statusOf(err) === 403 && /NamespaceTerminating/.test(`${String(e?.body ?? '')} ${String(e?.message ?? '')}`);
}
