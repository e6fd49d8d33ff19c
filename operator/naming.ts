/** Names the operator derives: integration names, Secret names, queue keys. */
import { createHash } from 'node:crypto';
import type { IntakeResource, WebhookIntegration } from '../api/v1alpha1/types.js';

/** The label on every Secret the operator writes (credentials and routes). */
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'intake-operator' };

/** On the credentials Secret: the value of intake.dev/rotate its secrets were generated for. */
export const ROTATED_FOR_ANNOTATION = 'intake.dev/rotated-for';

const INTEGRATION_NAME = /^[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?$/;

/** spec.name, else metadata.name made a valid integration name (dots to dashes, at most 63 characters). */
export function integrationNameOf(wi: WebhookIntegration): string {
  return wi.spec?.name || toRouteName(wi.metadata.name ?? '');
}

/** A metadata.name (a DNS subdomain, dots allowed, up to 253) in the route-name shape. */
export function toRouteName(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, '-')
    .slice(0, 63)
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
}

export const isValidIntegrationName = (name: string): boolean => INTEGRATION_NAME.test(name);

const shortHash = (value: string): string => createHash('sha256').update(value).digest('hex').slice(0, 10);

/** A Secret name from a prefix and a resource name, hashed when too long for a DNS subdomain. */
function secretName(prefix: string, name: string): string {
  const full = `${prefix}-${name}`;
  return full.length <= 253 ? full : `${full.slice(0, 241)}-${shortHash(full)}`;
}

export function credentialsSecretName(obj: IntakeResource): string {
  return secretName(obj.kind === 'WebhookIntegration' ? 'intake-webhook' : 'intake-apikey', obj.metadata.name ?? '');
}

/** Route Secrets live in one namespace for every tenant: name them by a hash of kind/namespace/name. */
export function routeSecretName(kind: IntakeResource['kind'], namespace: string, name: string): string {
  const full = `${kind}/${namespace}/${name}`;
  return `route-${kind === 'WebhookIntegration' ? 'wi' : 'ak'}-${createHash('sha256').update(full).digest('hex').slice(0, 24)}`;
}

/** A team Destination's published document lives beside the routes: named like them. */
export function destinationSecretName(namespace: string, name: string): string {
  return `destination-${createHash('sha256').update(`Destination/${namespace}/${name}`).digest('hex').slice(0, 24)}`;
}

/** The kinds the work queue holds. */
export type QueueKind = IntakeResource['kind'] | 'IntakeQuota' | 'Destination';

/** Work queue keys: Kind/namespace/name. */
export const queueKey = (kind: QueueKind, namespace: string, name: string): string => `${kind}/${namespace}/${name}`;

export function parseQueueKey(key: string): { kind: QueueKind; namespace: string; name: string } {
  const [kind, namespace, name] = key.split('/') as [QueueKind, string, string];
  return { kind, namespace, name };
}
