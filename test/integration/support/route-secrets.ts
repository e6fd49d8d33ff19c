/**
 * Route documents written straight into the API server as the operator writes them (one Secret
 * per integration, labelled for the ingester), for tests and benchmarks of the ingester's
 * Kubernetes mode that need many routes quickly and no operator.
 */
import { createHash } from 'node:crypto';
import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';
import { ROUTE_LABEL, ROUTE_SECRET_KEY } from '../../../api/route.js';

export const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A WebhookIntegration's route document with one sha256 Basic credential. */
export function webhookRoute(name: string, namespace: string, username: string, password: string): object {
  return {
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'WebhookIntegration',
    name,
    namespace,
    credentials: [{ username, secret: { sha256: sha256Hex(password) } }],
  };
}

/** An ApiKey's route document; the key is `<namespace>_<name>`, its Basic username the namespace. */
export function apiKeyRoute(name: string, namespace: string): object {
  return {
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'ApiKey',
    name,
    namespace,
    credentials: [{ username: namespace, secret: { sha256: sha256Hex(`${namespace}_${name}`) } }],
  };
}

/** The route Secret `name` holding `route`. */
export function routeSecret(name: string, route: object): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, labels: { [ROUTE_LABEL]: 'true' } },
    data: { [ROUTE_SECRET_KEY]: Buffer.from(JSON.stringify(route)).toString('base64') },
  };
}

/** Creates the Secrets in `namespace`, `concurrency` requests at a time. */
export async function createSecrets(
  core: CoreV1Api,
  namespace: string,
  secrets: readonly V1Secret[],
  concurrency = 8,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < secrets.length) {
      const body = secrets[next++] as V1Secret;
      await core.createNamespacedSecret({ namespace, body });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Replaces route Secret `name` with one holding `route` (a rotated password, a new mapping). */
export async function replaceRoute(core: CoreV1Api, namespace: string, name: string, route: object): Promise<void> {
  await core.replaceNamespacedSecret({ name, namespace, body: routeSecret(name, route) });
}
