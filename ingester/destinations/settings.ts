/**
 * Settings of the destinations (`destinations:` in the ingester config file): where accepted
 * events are delivered after the hand-off (docs/design.md §5). Kept apart from config.ts so the
 * destinations own their schema, defaults and checks.
 */
import { ConfigError } from '../../common/config-files.js';
import { parseDuration } from '../../common/duration.js';
import { destinationSettingsProperties, MAX_DESTINATION_IN_FLIGHT } from '../../api/destination-schema.js';
import type { TlsFiles } from '../outbound/credentials.js';
import { resolveProtection, type ProtectionFile, type ProtectionSettings } from './protection/settings.js';

/** Destination names: what `WebhookIntegration.spec.destinations` lists (a route document also `<namespace>/<name>`). */
export const DESTINATION_NAME_PATTERN = '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$';

export type { TlsFiles } from '../outbound/credentials.js';

/** Credentials are read from files (mounted Secrets) at each request, so a rotation needs no restart. */
export interface ClientAuth {
  basicAuth?: { username: string; passwordFile: string };
  bearerTokenFile?: string;
  tls?: TlsFiles;
}

export interface DeliverySettings {
  /** Attempts per event (first delivery included) before it goes to the dead letter. */
  maxAttempts: number;
  /** Exponential backoff with full jitter between attempts: random(0, min(max, min * 2^n)). */
  backoffMinMs: number;
  backoffMaxMs: number;
  /** Events this process delivers to the destination at once. */
  maxInFlight: number;
  /** Bytes of those events (their stored JSON) held at once; one message's events may pass it. */
  maxInFlightBytes: number;
}

export interface AlertmanagerSettings extends ClientAuth {
  urls: string[];
  /** Firing alerts are sent again this often; they expire in Alertmanager after 4 intervals. */
  resendIntervalMs: number;
  /** Resolved alerts keep being sent this long (an Alertmanager that was down still learns of the resolve). */
  resolvedRetentionMs: number;
  /** Firing alerts with no event for this long are resolved (0: never; they wait for a clear). */
  resolveAfterMs: number;
  timeoutMs: number;
  /**
   * Alert states kept per namespace and for the whole destination. An event that would start a
   * new alert past either is not kept or sent (counted and logged); existing alerts still update
   * and resolve, and a resolved one frees its place after resolvedRetention.
   */
  maxAlertsPerNamespace: number;
  maxAlerts: number;
}

export interface HttpSettings extends ClientAuth {
  url: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /** 1: the body is one event object; more: a JSON array of up to batchSize events. */
  batchSize: number;
}

interface DestinationBase {
  name: string;
  /** Integrations that name no destinations are delivered to every default destination. */
  default: boolean;
  delivery: DeliverySettings;
  /** The receiver's protection: circuit breaker and rate limit (protection/). */
  protection: ProtectionSettings;
  /**
   * Set for a team's own destination (a `Destination` resource; its name is then
   * `<namespace>/<name>`): the namespace that owns it, whose integrations alone may use it. A
   * team's URL goes through the address guard. (A standalone file may set it too.)
   */
  namespace?: string;
  /** Paused (a team destination's spec.suspend, or the settings' suspend): events are held, not sent nor dead-lettered, until this is false again (protection/pause.ts). */
  suspend?: boolean;
}

export type DestinationSettings =
  | (DestinationBase & { kind: 'alertmanager'; alertmanager: AlertmanagerSettings })
  | (DestinationBase & { kind: 'http'; http: HttpSettings });

export const DEFAULT_DELIVERY: DeliverySettings = {
  maxAttempts: 10,
  backoffMinMs: 1000,
  backoffMaxMs: 300_000,
  maxInFlight: 256,
  maxInFlightBytes: 16 * 1024 * 1024,
};
/**
 * Thirty-two posts of MAX_ALERTS_PER_POST: one on each of the destination's eight connections, and
 * the rest ready behind them. Alertmanager answers the posts it works on together at about the
 * same time, and a connection whose next post is ready sends it as soon as the answer is read,
 * instead of after the loop has prepared a batch; the more batches are under way, the more of
 * their state writes share one transaction, and the less each alert costs the ingester. From the
 * outbox, against sixteen posts (4096) in alternating runs: a median 86% of Alertmanager alone
 * against 77.5%, and 37,000 alerts per ingester CPU-second against 31,400 (docs/benchmarks.md).
 */
const ALERTMANAGER_MAX_IN_FLIGHT = 8192;
/**
 * An HTTP destination that batches keeps eight requests in flight by default: with 256 events, a
 * batchSize of 100 left two and a half, and delivery waited on the receiver's answers with the
 * ingester idle a quarter of the time (docs/benchmarks.md). maxInFlightBytes still bounds memory.
 */
const BATCHES_IN_FLIGHT = 8;
const DEFAULT_ALERTMANAGER = {
  resendInterval: '60s',
  resolvedRetention: '15m',
  timeout: '10s',
  maxAlertsPerNamespace: 10_000,
  maxAlerts: 50_000,
};
const DEFAULT_HTTP = { timeout: '5s', batchSize: 1 };

const file = { type: 'string', minLength: 1 } as const;
const clientAuthProperties = {
  basicAuth: {
    type: 'object',
    additionalProperties: false,
    required: ['username', 'passwordFile'],
    properties: { username: { type: 'string', minLength: 1 }, passwordFile: file },
  },
  bearerTokenFile: file,
  tls: {
    type: 'object',
    additionalProperties: false,
    properties: { caFile: file, certFile: file, keyFile: file, insecureSkipVerify: { type: 'boolean' } },
  },
} as const;

/** JSON Schema fragment for the settings file (config.ts). */
export const destinationsSchema = {
  type: 'array',
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['name'],
    properties: {
      name: { type: 'string', pattern: DESTINATION_NAME_PATTERN },
      namespace: { type: 'string', pattern: DESTINATION_NAME_PATTERN },
      default: { type: 'boolean' },
      ...destinationSettingsProperties(clientAuthProperties),
    },
  },
} as const;

interface AuthFile {
  basicAuth?: { username: string; passwordFile: string };
  bearerTokenFile?: string;
  tls?: TlsFiles;
}

export interface DestinationFile extends ProtectionFile {
  name: string;
  namespace?: string;
  default?: boolean;
  suspend?: boolean;
  alertmanager?: AuthFile & {
    urls: string[];
    resendInterval?: string;
    resolvedRetention?: string;
    resolveAfter?: string;
    timeout?: string;
    maxAlertsPerNamespace?: number;
    maxAlerts?: number;
  };
  http?: AuthFile & { url: string; headers?: Record<string, string>; timeout?: string; batchSize?: number };
  delivery?: {
    maxAttempts?: number;
    backoffMin?: string;
    backoffMax?: string;
    maxInFlight?: number;
    maxInFlightBytes?: number;
  };
}

/** Headers intake sets itself; a destination may not override them. */
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

/** Defaults applied and cross-field rules checked; called after the schema passed. */
export function resolveDestinations(files: readonly DestinationFile[] | undefined): DestinationSettings[] {
  const out: DestinationSettings[] = [];
  const seen = new Set<string>();
  for (const [i, f] of (files ?? []).entries()) {
    const where = `destinations[${i}] (${f.name})`;
    if (seen.has(f.name)) throw new ConfigError(`${where}: the name ${f.name} is used twice`);
    seen.add(f.name);
    if ((f.alertmanager === undefined) === (f.http === undefined))
      throw new ConfigError(`${where}: give exactly one of alertmanager or http`);
    const ms = (value: string, field: string): number => {
      const n = parseDuration(value);
      if (n <= 0) throw new ConfigError(`${where}: ${field} must be longer than 0`);
      return n;
    };
    const d = f.delivery ?? {};
    const delivery: DeliverySettings = {
      maxAttempts: d.maxAttempts ?? DEFAULT_DELIVERY.maxAttempts,
      backoffMinMs:
        d.backoffMin === undefined ? DEFAULT_DELIVERY.backoffMinMs : ms(d.backoffMin, 'delivery.backoffMin'),
      backoffMaxMs:
        d.backoffMax === undefined ? DEFAULT_DELIVERY.backoffMaxMs : ms(d.backoffMax, 'delivery.backoffMax'),
      // Alertmanager takes 256 alerts a post (MAX_ALERTS_PER_POST); eight posts in flight keep its
      // answers from pacing delivery (the destination keeps each alert's posts in order).
      maxInFlight: d.maxInFlight ?? defaultMaxInFlight(f),
      maxInFlightBytes: d.maxInFlightBytes ?? DEFAULT_DELIVERY.maxInFlightBytes,
    };
    if (delivery.backoffMaxMs < delivery.backoffMinMs)
      throw new ConfigError(`${where}: delivery.backoffMax must be at least delivery.backoffMin`);
    const base = {
      name: f.name,
      ...(f.namespace !== undefined ? { namespace: f.namespace } : {}),
      default: f.default ?? false,
      delivery,
      protection: resolveProtection(f, where),
      suspend: f.suspend ?? false,
    };
    if (f.alertmanager) {
      const a = f.alertmanager;
      const auth = resolveAuth(a, `${where}.alertmanager`);
      const maxAlerts = a.maxAlerts ?? DEFAULT_ALERTMANAGER.maxAlerts;
      // A namespace's share above the whole would never refuse: one namespace could take every state.
      if (a.maxAlertsPerNamespace !== undefined && a.maxAlertsPerNamespace > maxAlerts)
        throw new ConfigError(
          `${where}.alertmanager.maxAlertsPerNamespace (${a.maxAlertsPerNamespace}) must not exceed ${where}.alertmanager.maxAlerts (${maxAlerts})`,
        );
      out.push({
        ...base,
        kind: 'alertmanager',
        alertmanager: {
          ...auth,
          urls: a.urls.map((u) => checkUrl(u, `${where}.alertmanager.urls`)),
          resendIntervalMs: ms(a.resendInterval ?? DEFAULT_ALERTMANAGER.resendInterval, 'alertmanager.resendInterval'),
          resolvedRetentionMs: ms(
            a.resolvedRetention ?? DEFAULT_ALERTMANAGER.resolvedRetention,
            'alertmanager.resolvedRetention',
          ),
          resolveAfterMs: a.resolveAfter === undefined ? 0 : ms(a.resolveAfter, 'alertmanager.resolveAfter'),
          timeoutMs: ms(a.timeout ?? DEFAULT_ALERTMANAGER.timeout, 'alertmanager.timeout'),
          maxAlertsPerNamespace:
            a.maxAlertsPerNamespace ?? Math.min(DEFAULT_ALERTMANAGER.maxAlertsPerNamespace, maxAlerts),
          maxAlerts,
        },
      });
      continue;
    }
    const h = f.http as NonNullable<DestinationFile['http']>;
    const reserved = Object.keys(h.headers ?? {}).find((k) => RESERVED_HEADERS.has(k.toLowerCase()));
    if (reserved)
      throw new ConfigError(
        `${where}.http.headers: ${reserved} is set by intake (use basicAuth or bearerTokenFile for credentials)`,
      );
    out.push({
      ...base,
      kind: 'http',
      http: {
        ...resolveAuth(h, `${where}.http`),
        url: checkUrl(h.url, `${where}.http.url`),
        headers: { ...h.headers },
        timeoutMs: ms(h.timeout ?? DEFAULT_HTTP.timeout, 'http.timeout'),
        batchSize: h.batchSize ?? DEFAULT_HTTP.batchSize,
      },
    });
  }
  return out;
}

function resolveAuth(a: AuthFile, where: string): ClientAuth {
  if (a.basicAuth && a.bearerTokenFile) throw new ConfigError(`${where}: give basicAuth or bearerTokenFile, not both`);
  if (a.tls && (a.tls.certFile === undefined) !== (a.tls.keyFile === undefined))
    throw new ConfigError(`${where}.tls: certFile and keyFile go together`);
  const auth: ClientAuth = {};
  if (a.basicAuth) auth.basicAuth = { ...a.basicAuth };
  if (a.bearerTokenFile) auth.bearerTokenFile = a.bearerTokenFile;
  if (a.tls) auth.tls = { ...a.tls };
  return auth;
}

function checkUrl(value: string, where: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${where}: ${JSON.stringify(value)} is not a URL`);
  }
  if (url.username || url.password)
    throw new ConfigError(`${where}: put credentials in basicAuth.passwordFile or bearerTokenFile, not in the URL`);
  return value.replace(/\/+$/, '');
}

/** The destinations an integration's events go to: the ones it names, else the defaults. */
/**
 * How long an event handed to a delivery stays claimed (JetStream ack_wait, the outbox lease)
 * before it is handed out again: longer than one delivery with its timeout, so a slow receiver
 * does not cause duplicates, short enough that a replica that died is taken over quickly.
 */
export function claimTimeoutMs(d: DestinationSettings): number {
  return Math.max(5000, 4 * (d.kind === 'alertmanager' ? d.alertmanager.timeoutMs : d.http.timeoutMs) + 1000);
}

/** Alertmanager: thirty-two posts of 256 alerts; HTTP: eight requests of batchSize events, at least 256. */
function defaultMaxInFlight(f: DestinationFile): number {
  if (f.alertmanager) return ALERTMANAGER_MAX_IN_FLIGHT;
  const batchSize = f.http?.batchSize ?? DEFAULT_HTTP.batchSize;
  return Math.min(MAX_DESTINATION_IN_FLIGHT, Math.max(DEFAULT_DELIVERY.maxInFlight, BATCHES_IN_FLIGHT * batchSize));
}
