/** Names the operator derives: integration names, Secret names, queue keys. */
import { createHash } from 'node:crypto';
import type { IntakeResource, WebhookIntegration } from '../api/v1alpha1/types.js';

const INTEGRATION_NAME = /^[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?$/;

/** spec.name, else metadata.name made a valid integration name (dots to dashes, at most 63 characters). */
export function integrationNameOf(wi: WebhookIntegration): string {
  return wi.spec?.name || toRouteName(wi.metadata.name ?? '');
}

/** A metadata.name (a DNS subdomain, dots allowed, up to 253) in the route-name shape. */
export function toRouteName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9_-]/g, '-').slice(0, 63).replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
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

/** Work queue keys: Kind/namespace/name. */
export const queueKey = (kind: IntakeResource['kind'], namespace: string, name: string): string => `${kind}/${namespace}/${name}`;

export function parseQueueKey(key: string): { kind: IntakeResource['kind']; namespace: string; name: string } {
  const [kind, namespace, name] = key.split('/') as [IntakeResource['kind'], string, string];
  return { kind, namespace, name };
}

/** Parses a Go-style duration (0s, 90s, 15m, 1h30m, 250ms) into milliseconds. */
export function parseDuration(value: string | undefined): number {
  if (value === undefined || value === '') return 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(value); m; m = re.exec(value)) {
    total += Number(m[1]) * unit[m[2] as keyof typeof unit];
    consumed = re.lastIndex;
  }
  if (consumed !== value.length) throw new Error(`invalid duration ${JSON.stringify(value)}: use e.g. 0s, 90s, 15m, 1h30m`);
  return total;
}
