/**
 * The `remoteWrite:` settings block: where received data points are forwarded with Prometheus
 * Remote Write, and how. Validated at load time; every mistake names the setting.
 */
import { ConfigError } from '../../../common/config-files.js';

export interface RemoteWriteSettings {
  url: string;
  /** 2.0 falls back to 1.0 for good when the receiver answers 415 or a 2xx without the *-Written headers. */
  protocol: '1.0' | '2.0';
  /** When set, every request carries this header with the tenant (the API key's namespace). */
  tenantHeader?: string;
  tenant: 'namespace';
  headers: Record<string, string>;
  basicAuth?: { username: string; passwordFile: string };
  bearerTokenFile?: string;
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
  batchSize: number;
  flushIntervalMs: number;
  maxQueuedSamples: number;
  /**
   * The queue's memory: the compressed requests of the batches waiting for the receiver, and for
   * the batch being built an upper bound per sample and per series entry. Counting samples alone
   * let label-heavy points grow the queue to gigabytes while the receiver failed.
   */
  maxQueuedBytes: number;
  /**
   * One namespace's share of maxQueuedBytes (default an eighth): a namespace whose receiver keeps
   * failing fills its own share and is refused alone, the others keep sending.
   */
  maxQueuedBytesPerTenant: number;
  /**
   * A point older than this (its `time` against the ingester's clock) is refused with 400: the
   * receiver would refuse the whole batch it travels in (Prometheus: "out of bounds", about 1 h
   * behind its newest sample), losing the other points of that batch.
   */
  maxSampleAgeMs: number;
  /**
   * Deprecated (samples are not memory: 43,800 label-heavy ones filled 64 MiB), still applied when
   * set, with a warning. Unset, a namespace's share in samples is maxQueuedSamples in the same
   * proportion as maxQueuedBytesPerTenant to maxQueuedBytes.
   */
  maxQueuedSamplesPerTenant?: number;
  /** Requests in flight per tenant; series are spread over this many ordered lanes by hash. */
  maxInFlightPerTenant: number;
  timeoutMs: number;
  minBackoffMs: number;
  maxBackoffMs: number;
}

export const REMOTE_WRITE_DEFAULTS = {
  protocol: '1.0',
  tenant: 'namespace',
  headers: {},
  batchSize: 2000,
  flushIntervalMs: 1000,
  maxQueuedSamples: 1_000_000,
  maxQueuedBytes: 64 * 1024 * 1024,
  // Prometheus' lower bound is 1 h behind its newest sample, which clients may put up to 5 min in
  // the future; 10 more minutes for the time a sample waits in the queue and for clock skew.
  maxSampleAgeMs: 45 * 60_000,
  maxInFlightPerTenant: 2,
  timeoutMs: 30_000,
  minBackoffMs: 100,
  maxBackoffMs: 10_000,
} as const;

/**
 * A namespace's default share of the queue's bytes: eight namespaces whose receivers fail at once
 * fill the queue; fewer leave room for the others.
 */
const DEFAULT_SHARE = 1 / 8;

/** Headers the protocol owns (the spec forbids overriding them) or that come from other settings. */
const RESERVED_HEADERS = [
  'content-encoding',
  'content-type',
  'content-length',
  'user-agent',
  'x-prometheus-remote-write-version',
  'authorization',
  'host',
];
const HEADER_NAME = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";
const positive = { type: 'integer', minimum: 1 } as const;

/** JSON Schema of the block, embedded in the settings file schema. */
export const remoteWriteSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    url: { type: 'string', pattern: '^https?://' },
    protocol: { enum: ['1.0', '2.0'] },
    tenantHeader: { type: 'string', pattern: HEADER_NAME },
    tenant: { enum: ['namespace'] },
    headers: { type: 'object', propertyNames: { pattern: HEADER_NAME }, additionalProperties: { type: 'string' } },
    basicAuth: {
      type: 'object',
      additionalProperties: false,
      required: ['username', 'passwordFile'],
      properties: { username: { type: 'string', minLength: 1 }, passwordFile: { type: 'string', minLength: 1 } },
    },
    bearerTokenFile: { type: 'string', minLength: 1 },
    tls: {
      type: 'object',
      additionalProperties: false,
      properties: {
        caFile: { type: 'string', minLength: 1 },
        certFile: { type: 'string', minLength: 1 },
        keyFile: { type: 'string', minLength: 1 },
      },
    },
    batchSize: positive,
    flushIntervalMs: positive,
    maxQueuedSamples: positive,
    maxQueuedSamplesPerTenant: positive,
    maxQueuedBytes: { type: 'integer', minimum: 65536 },
    maxQueuedBytesPerTenant: { type: 'integer', minimum: 65536 },
    maxSampleAgeMs: { type: 'integer', minimum: 60_000 },
    maxInFlightPerTenant: { type: 'integer', minimum: 1, maximum: 64 },
    timeoutMs: positive,
    minBackoffMs: positive,
    maxBackoffMs: positive,
  },
} as const;

export const expositionSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { enabled: { type: 'boolean' } },
} as const;

export type RemoteWriteFile = Partial<RemoteWriteSettings> & { url: string };

/** Defaults plus the file's block (already checked against remoteWriteSchema), or a ConfigError. */
export function resolveRemoteWrite(block: RemoteWriteFile): RemoteWriteSettings {
  let url: URL;
  try {
    url = new URL(block.url);
  } catch {
    throw new ConfigError(`remoteWrite.url is not a valid URL`);
  }
  if (url.username || url.password)
    throw new ConfigError('remoteWrite.url must not hold credentials: use remoteWrite.basicAuth with a passwordFile');
  const maxQueuedBytes = block.maxQueuedBytes ?? REMOTE_WRITE_DEFAULTS.maxQueuedBytes;
  const settings: RemoteWriteSettings = {
    ...REMOTE_WRITE_DEFAULTS,
    maxQueuedBytesPerTenant: Math.max(65536, Math.floor(maxQueuedBytes * DEFAULT_SHARE)),
    ...block,
    tenant: 'namespace',
    headers: { ...block.headers },
  };
  const reserved = [...RESERVED_HEADERS, ...(settings.tenantHeader ? [settings.tenantHeader.toLowerCase()] : [])];
  for (const name of Object.keys(settings.headers)) {
    if (reserved.includes(name.toLowerCase())) {
      throw new ConfigError(
        `remoteWrite.headers.${name} is set by intake itself (protocol headers, credentials, tenantHeader) and cannot be overridden`,
      );
    }
  }
  if (settings.basicAuth && settings.bearerTokenFile)
    throw new ConfigError('remoteWrite: set basicAuth or bearerTokenFile, not both');
  if ((settings.tls?.certFile === undefined) !== (settings.tls?.keyFile === undefined)) {
    throw new ConfigError('remoteWrite.tls: a client certificate needs both certFile and keyFile');
  }
  if (settings.tls && url.protocol !== 'https:')
    throw new ConfigError('remoteWrite.tls is set but remoteWrite.url is not https');
  if (settings.minBackoffMs > settings.maxBackoffMs)
    throw new ConfigError('remoteWrite.backoffMin must not exceed remoteWrite.backoffMax');
  if (settings.batchSize > settings.maxQueuedSamples)
    throw new ConfigError('remoteWrite.batchSize must not exceed remoteWrite.maxQueuedSamples');
  if (
    settings.maxQueuedSamplesPerTenant !== undefined &&
    settings.maxQueuedSamplesPerTenant > settings.maxQueuedSamples
  )
    throw new ConfigError('remoteWrite.maxQueuedSamplesPerTenant must not exceed remoteWrite.maxQueuedSamples');
  if (settings.maxQueuedBytesPerTenant > settings.maxQueuedBytes)
    throw new ConfigError('remoteWrite.maxQueuedBytesPerTenant must not exceed remoteWrite.maxQueuedBytes');
  return settings;
}
