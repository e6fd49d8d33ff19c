/**
 * How many ingester replicas share the cluster-wide limits (Kubernetes mode): the ready endpoints
 * of the ingester Service, from its EndpointSlices in the ingester's own namespace. This is the
 * set the Service load-balances over, so limit / N per replica adds up to the limit while the
 * traffic is spread evenly (Mimir divides by its healthy distributors the same way).
 *
 * Until the first list, and while the API server is unreachable, the last count is kept (1 at
 * start). The count never goes below 1: this replica is serving, ready or not.
 */
import type { V1EndpointSlice } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { KubeApiClient } from '../../kube/api-client.js';
import { Informer } from '../../kube/informer.js';

/** Where the number of replicas comes from; standalone has none (N = 1). */
export interface ReplicaCount {
  start(onChange: (replicas: number) => void): void;
  stop(): void;
}

/** Ready endpoints across the slices, each pod once (dual-stack Services have one slice per address family). */
export function readyEndpoints(slices: readonly V1EndpointSlice[]): number {
  const ready = new Set<string>();
  for (const slice of slices) {
    for (const endpoint of slice.endpoints ?? []) {
      // `ready` unset means ready (the API's convention); a terminating endpoint is not ready.
      if (endpoint.conditions?.ready === false) continue;
      ready.add(endpoint.targetRef?.uid ?? endpoint.targetRef?.name ?? endpoint.addresses[0] ?? '');
    }
  }
  return ready.size;
}

export class EndpointSliceReplicas implements ReplicaCount {
  private informer?: Informer<V1EndpointSlice>;
  private last = 0;

  constructor(
    private readonly api: KubeApiClient,
    private readonly namespace: string,
    private readonly service: string,
    private readonly logger: Logger,
  ) {}

  start(onChange: (replicas: number) => void): void {
    const labelSelector = `kubernetes.io/service-name=${this.service}`;
    const watchPath = `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(this.namespace)}/endpointslices`;
    const recount = (): void => {
      if (!this.informer?.hasSynced) return;
      const n = Math.max(1, readyEndpoints(this.informer.list()));
      if (n === this.last) return;
      this.logger.info(
        { service: this.service, replicas: n, previous: this.last || undefined },
        'ready ingester replicas changed: per-tenant limits are divided by this number',
      );
      this.last = n;
      onChange(n);
    };
    this.informer = new Informer<V1EndpointSlice>({
      name: 'ingester-endpointslices',
      watcher: this.api,
      logger: this.logger,
      labelSelector,
      watchPath,
      list: () => this.api.list<V1EndpointSlice>(watchPath, { labelSelector }),
      onEvent: recount,
    });
    this.informer.start();
    this.informer.waitForSync().then(recount, () => {});
  }

  stop(): void {
    this.informer?.stop();
  }
}
