/**
 * A team's destination as the operator publishes it for the ingesters: one labelled Secret per
 * `Destination` resource in the ingesters' own namespace, holding this document (the route
 * documents' pattern, docs/design.md §3). The operator reads the credentials and TLS material
 * from Secrets of the Destination's namespace and puts them in the document, so the ingesters
 * never read a tenant's namespace: they keep their one permission, Secrets of their own namespace.
 *
 * The settings are the ones of a platform destination (`destinations:` in the ingester's
 * settings), with the credentials inline instead of in files.
 */
import { Ajv } from 'ajv';
import { parseDuration } from '../common/duration.js';
import { destinationSettingsProperties } from './destination-schema.js';

export const DESTINATION_LABEL = 'intake.dev/destination';
export const DESTINATION_SECRET_KEY = 'destination.json';

/** Credentials and TLS material, inline (the published Secret is readable by the ingesters and the operator only). */
export interface InlineAuth {
  basicAuth?: { username: string; password: string };
  bearerToken?: string;
  /** PEM text. */
  tls?: { ca?: string; cert?: string; key?: string; insecureSkipVerify?: boolean };
}

export interface DestinationDocument {
  apiVersion: 'intake.dev/v1alpha1';
  kind: 'Destination';
  /** The Destination's metadata.name: what integrations of its namespace name. */
  name: string;
  namespace: string;
  suspend?: boolean;
  alertmanager?: InlineAuth & {
    urls: string[];
    resendInterval?: string;
    resolvedRetention?: string;
    resolveAfter?: string;
    timeout?: string;
    maxAlertsPerNamespace?: number;
    maxAlerts?: number;
  };
  http?: InlineAuth & { url: string; headers?: Record<string, string>; timeout?: string; batchSize?: number };
  delivery?: {
    maxAttempts?: number;
    backoffMin?: string;
    backoffMax?: string;
    maxInFlight?: number;
    maxInFlightBytes?: number;
  };
  circuitBreaker?: {
    enabled?: boolean;
    consecutiveFailures?: number;
    failureRatio?: number;
    window?: string;
    minRequests?: number;
    openFor?: string;
  };
  rateLimit?: { eventsPerSecond: number; burst?: number };
  /** Pause after failing continuously for `after` (default 24h); `enabled: false`: never. */
  autoPause?: { enabled?: boolean; after?: string };
}

/**
 * The ingesters' name of a team destination: `<namespace>/<name>`. A platform destination's name
 * never holds a `/`, so the two never meet; route documents carry this name for a team's own
 * destination, and metrics, dead letters and logs show it.
 */
export const teamDestinationName = (namespace: string, name: string): string => `${namespace}/${name}`;

/** The namespace of a team destination's name; undefined for a platform destination's. */
export function namespaceOfDestination(name: string): string | undefined {
  const slash = name.indexOf('/');
  return slash < 0 ? undefined : name.slice(0, slash);
}

/**
 * A name safe in NATS consumer and key-value bucket names (no `/` or `.`): a platform
 * destination's name as it is (what every release used), a team's `<namespace>_<name>` (`_` is
 * in neither a namespace nor a destination name, so this names nothing else).
 */
export const busSafeDestinationName = (name: string): string => name.replace('/', '_');

const NAME = '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$';
const secretText = { type: 'string', minLength: 1, maxLength: 65536 } as const;
const inlineAuthProperties = {
  basicAuth: {
    type: 'object',
    additionalProperties: false,
    required: ['username', 'password'],
    properties: { username: { type: 'string', minLength: 1 }, password: secretText },
  },
  bearerToken: secretText,
  tls: {
    type: 'object',
    additionalProperties: false,
    properties: { ca: secretText, cert: secretText, key: secretText, insecureSkipVerify: { type: 'boolean' } },
  },
} as const;

/**
 * JSON Schema of a destination document: the settings file's destination block (both from
 * api/destination-schema.ts) with credentials inline.
 */
export const destinationDocumentSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['apiVersion', 'kind', 'name', 'namespace'],
  properties: {
    apiVersion: { const: 'intake.dev/v1alpha1' },
    kind: { const: 'Destination' },
    name: { type: 'string', pattern: NAME },
    namespace: { type: 'string', pattern: NAME },
    ...destinationSettingsProperties(inlineAuthProperties),
  },
} as const;

const validate = new Ajv({ allErrors: true, strict: true }).compile<DestinationDocument>(destinationDocumentSchema);

/**
 * Checks a document: its schema, and the rules across fields the ingester's settings checks
 * apply (so the operator refuses what an ingester would skip). Returns the problems, each naming
 * its field; none: the document is valid.
 */
export function destinationDocumentProblems(doc: unknown): string[] {
  if (!validate(doc))
    return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
  const problems: string[] = [];
  if ((doc.alertmanager === undefined) === (doc.http === undefined))
    problems.push('give exactly one of alertmanager or http');
  for (const [kind, block] of [
    ['alertmanager', doc.alertmanager],
    ['http', doc.http],
  ] as const) {
    if (!block) continue;
    if (block.basicAuth && block.bearerToken !== undefined)
      problems.push(`${kind}: give basicAuth or bearerToken, not both`);
    if (block.tls && (block.tls.cert === undefined) !== (block.tls.key === undefined))
      problems.push(`${kind}.tls: a client certificate and its key go together`);
    if (block.basicAuth?.username.includes(':')) problems.push(`${kind}.basicAuth.username: contains a colon`);
    for (const url of 'urls' in block ? block.urls : [block.url]) {
      let parsed: URL | undefined;
      try {
        parsed = new URL(url);
      } catch {
        problems.push(`${kind}: ${JSON.stringify(url)} is not a URL`);
      }
      if (parsed && (parsed.username || parsed.password))
        problems.push(`${kind}: put credentials in basicAuth or bearerToken, not in the URL`);
    }
    for (const [field, value] of Object.entries(block))
      if (DURATION_FIELDS.has(field) && parseDuration(value as string) <= 0)
        problems.push(`${kind}.${field}: must be longer than 0`);
  }
  const reserved = Object.keys(doc.http?.headers ?? {}).find((k) => RESERVED_HEADERS.has(k.toLowerCase()));
  if (reserved)
    problems.push(`http.headers: ${reserved} is set by intake (use basicAuth or bearerToken for credentials)`);
  const a = doc.alertmanager;
  if (a?.maxAlertsPerNamespace !== undefined && a.maxAlertsPerNamespace > (a.maxAlerts ?? 50_000))
    problems.push('alertmanager.maxAlertsPerNamespace: must not exceed alertmanager.maxAlerts');
  const d = doc.delivery;
  if (d?.backoffMin !== undefined && parseDuration(d.backoffMin) <= 0)
    problems.push('delivery.backoffMin: must be longer than 0');
  if (parseDuration(d?.backoffMax ?? '5m') < parseDuration(d?.backoffMin ?? '1s'))
    problems.push('delivery.backoffMax: must be at least delivery.backoffMin');
  const b = doc.circuitBreaker;
  if (b && b.enabled !== false && b.consecutiveFailures === 0 && (b.failureRatio ?? 0.5) >= 1)
    problems.push('circuitBreaker: never opens with consecutiveFailures 0 and failureRatio 1; set enabled: false');
  if (doc.autoPause?.after !== undefined && parseDuration(doc.autoPause.after) <= 0)
    problems.push('autoPause.after: must be longer than 0 (enabled: false turns auto-pause off)');
  return problems;
}

const DURATION_FIELDS = new Set(['resendInterval', 'resolvedRetention', 'resolveAfter', 'timeout']);

/** Headers intake sets itself (the ingester's settings refuse them too). */
const RESERVED_HEADERS = new Set([
  'content-type',
  'content-length',
  'idempotency-key',
  'authorization',
  'host',
  'user-agent',
  'transfer-encoding',
  'connection',
]);
