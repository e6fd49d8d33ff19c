/**
 * Where the ingester replicas answer: the endpoints of the ingester admin Service, from its
 * EndpointSlices (label kubernetes.io/service-name) in the operator's namespace. Endpoints that
 * are not serving (gone, or not started) are left out; a terminating one that still serves is
 * asked too (its counts are still real).
 */
import { DiscoveryV1Api, type KubeConfig, type V1EndpointSlice, Watch } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Informer } from '../../kube/informer.js';

export interface Replica {
  /** address:port, stable while the pod lives. */
  key: string;
  url: string;
}

const ADMIN_PORT_NAME = 'admin';

export function replicasOf(slices: readonly V1EndpointSlice[]): Replica[] {
  const out = new Map<string, Replica>();
  for (const slice of slices) {
    const port = slice.ports?.find((p) => p.name === ADMIN_PORT_NAME) ?? slice.ports?.[0];
    if (port?.port === undefined) continue;
    for (const endpoint of slice.endpoints ?? []) {
      if (endpoint.conditions?.serving === false) continue;
      if (endpoint.conditions?.serving === undefined && endpoint.conditions?.ready === false) continue;
      const address = endpoint.addresses[0];
      if (!address) continue;
      const host = address.includes(':') ? `[${address}]` : address;
      const key = `${host}:${port.port}`;
      out.set(key, { key, url: `http://${key}` });
    }
  }
  return [...out.values()];
}

export class ReplicaDiscovery {
  private readonly informer: Informer<V1EndpointSlice>;

  constructor(kubeConfig: KubeConfig, namespace: string, service: string, logger: Logger) {
    const api = kubeConfig.makeApiClient(DiscoveryV1Api);
    const labelSelector = `kubernetes.io/service-name=${service}`;
    this.informer = new Informer<V1EndpointSlice>({
      name: 'ingester-admin-endpointslices',
      watcher: new Watch(kubeConfig),
      logger,
      labelSelector,
      watchPath: `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/endpointslices`,
      list: async () => {
        const list = await api.listNamespacedEndpointSlice({ namespace, labelSelector });
        return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
      },
      onEvent: () => {},
    });
  }

  start(): void {
    this.informer.start();
  }

  stop(): void {
    this.informer.stop();
  }

  replicas(): Replica[] {
    return replicasOf(this.informer.list());
  }
}
