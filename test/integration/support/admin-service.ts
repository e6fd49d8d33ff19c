/**
 * The ingester admin Service as the operator finds the replicas through it: the Service and the
 * EndpointSlice its controller would write, listing documentation addresses as pods (the API
 * server refuses loopback ones), which a PodNetwork (pod-network.ts) connects to the local
 * ingesters playing those pods.
 */
import { apply } from './cluster.js';

export const ADMIN_SERVICE = 'intake-ingester-admin';
export const ADMIN_PORT = 8081;

/** The operator's flags for a merge round every second (activity and delivery status) through that Service. */
export const ACTIVITY_EVERY_SECOND = [
  '--ingester-admin-service',
  ADMIN_SERVICE,
  '--activity-interval',
  '1s',
  '--activity-writes-per-second',
  '20',
];

/** Applies the Service in `namespace` and its slice, every pod in `pods` ready. */
export async function applyAdminService(namespace: string, pods: readonly string[]): Promise<void> {
  await apply(`apiVersion: v1
kind: Service
metadata: {name: ${ADMIN_SERVICE}, namespace: ${namespace}}
spec:
  ports: [{name: admin, port: ${ADMIN_PORT}, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: ${ADMIN_SERVICE}-pods
  namespace: ${namespace}
  labels: {kubernetes.io/service-name: ${ADMIN_SERVICE}, endpointslice.kubernetes.io/managed-by: intake-test}
addressType: IPv4
ports: [{name: admin, port: ${ADMIN_PORT}, protocol: TCP}]
endpoints:
${pods.map((ip) => `  - {addresses: ["${ip}"], conditions: {ready: true}}`).join('\n')}
`);
}
