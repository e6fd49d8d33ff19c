/**
 * Ingester settings: defaults, then the YAML file, then environment variables, then flags (each
 * later source wins). The file may also list routes (standalone mode); those are read by
 * routing/file-source.ts, not here.
 */
import {
  DEFAULT_INSPECTOR,
  inspectorSchema,
  resolveInspector,
  type InspectorFile,
  type InspectorSettings,
} from './inspector/settings.js';
import { isIP } from 'node:net';
import { Ajv } from 'ajv';
import { ConfigError, parseListen, type Listen } from '../common/config-files.js';
import { DEFAULT_BULK_REPLAY_LIMITS } from './dead-letters/bulk-replay-slots.js';
import { formatDuration } from '../common/duration.js';
import {
  jetstreamSchema,
  resolveJetStream,
  resolveSpool,
  spoolSchema,
  type JetStreamSettings,
  type SpoolSettings,
} from './sinks/handoff-config.js';
import {
  expositionSchema,
  remoteWriteSchema,
  resolveRemoteWrite,
  type RemoteWriteFile,
  type RemoteWriteSettings,
} from './series/remote-write/settings.js';
import { DEFAULT_MAPPING_LIMITS, type MappingLimits } from '../api/mapping/mapping-model.js';
import { DEFAULT_POOL, defaultWorkers } from '../api/mapping/worker-pool.js';
import {
  destinationsSchema,
  resolveDestinations,
  type DestinationFile,
  type DestinationSettings,
} from './destinations/settings.js';
import type { DeadLetterSettings } from './dead-letters/setup.js';
import type { PartialTenantLimitDefaults, TenantLimitDefaults } from '../api/limits.js';
import { resolveTenantLimits, tenantLimitsSchema } from './limits/settings.js';
import {
  addressGuardSchema,
  DEFAULT_ADDRESS_GUARD,
  resolveAddressGuard,
  type AddressGuardFile,
  type AddressGuardSettings,
} from './destinations/address-guard-settings.js';
import { isHostName, normalHostName } from './http/admin-guard.js';
import {
  msKey,
  normaliseDurations,
  secondsKey,
  type DeprecatedKey,
  type DurationKey,
  type MovedKey,
} from '../common/setting-durations.js';

export interface IngesterSettings {
  listen: Listen;
  adminListen: Listen;
  /** Host names the admin listener answers besides IP literals and localhost (http/admin-guard.ts). */
  adminAllowedHosts: string[];
  tls?: { certFile: string; keyFile: string };
  /** Passed to fastify: trust X-Forwarded-For from proxies at these addresses/CIDRs (false: off). */
  trustProxy: false | string;
  logLevel: string;
  limits: {
    bodyBytes: number;
    eventsPerRequest: number;
    pointsPerRequest: number;
    seriesTTLSeconds: number;
    maxSeriesPerNamespace: number;
    maxSeriesTotal: number;
    maxEventLoopDelayMs: number;
    /** Total characters of one series label text: metric, source, key, tag names and values. */
    maxSeriesLabelChars: number;
    /** Ingest connections held at once; default (absent): from the file-descriptor limit. */
    maxConnections?: number;
    /** ... by one remote address, the trusted proxies exempt; default (absent): half of maxConnections. */
    maxConnectionsPerAddress?: number;
    headersTimeoutMs: number;
    requestTimeoutMs: number;
    keepAliveTimeoutMs: number;
    maxInFlightBodyBytes: number;
    /** Bodies being received: per namespace, and before authentication (http/body-admission.ts); the upload rate (http/upload-rate.ts). */
    maxInFlightBodyBytesPerNamespace: number;
    maxUnauthenticatedBodyBytes: number;
    maxUnauthenticatedBodyBytesPerAddress: number;
    maxUnauthenticatedBodyBytesPerIntegration: number;
    minBodyBytesPerSecond: number;
    bodyRateGraceMs: number;
    /** Nesting of a JSON body ({ and [) at most; deeper is a 400 before anything else reads it. */
    maxJsonDepth: number;
  };
  /** Failures per address and integration (`failures`), and per address across integrations (`failuresPerAddress`): auth/auth-throttle.ts. */
  authThrottle: {
    failures: number;
    failuresPerAddress: number;
    windowSeconds: number;
    blockSeconds: number;
    failureDelayMs: number;
  };
  /** log.enabled defaults to true without jetstream, false with it. */
  sinks: { log: { path: string; timeoutMs: number; enabled?: boolean }; jetstream?: JetStreamSettings };
  /** Durable local spool for events the bus could not take yet (sinks/spool.ts). */
  spool?: SpoolSettings;
  shutdown: { drainDelaySeconds: number; timeoutSeconds: number };
  /** Forward data points by Prometheus Remote Write (absent: off). */
  remoteWrite?: RemoteWriteSettings;
  /** Serve received series on the admin port at /metrics/ingested. */
  exposition: { enabled: boolean };
  /** Guardrails for every data mapping (platform team only; tenants cannot change them). */
  mapping: MappingSettings;
  /** The dead letters (mapping and delivery failures): bounds, shares, replay lease (dead-letters/setup.ts). */
  deadLetter: DeadLetterSettings;
  /** Where accepted events are delivered after the hand-off (destinations/). Empty: nowhere. */
  destinations: DestinationSettings[];
  /** Which addresses destinations whose URL a tenant wrote may connect to (destinations/address-guard-settings.ts). */
  addressGuard: AddressGuardSettings;
  /** Per-tenant limits for what a route does not carry (limits/settings.ts). */
  tenantLimits: TenantLimitDefaults;
  /** The event inspector's bounds (inspector/settings.ts); integrations opt in with spec.inspect. */
  inspector: InspectorSettings;
}

/** The mapping guardrails plus the worker processes tenants' expressions run in (api/mapping/worker-pool.ts). */
export interface MappingSettings extends MappingLimits {
  /** Worker processes for tenants' expressions (default: cores - 1, at least 2, at most 4). */
  workers: number;
  /** Payloads waiting for a worker at most; past it 503 with Retry-After. */
  maxQueued: number;
  /** Payload bytes waiting for or held by the workers at most; past it 503 with Retry-After. */
  maxQueuedBytes: number;
  /** Heap (old generation) of each worker, MiB; an evaluation past it fails (INTAKE_MEMORY_LIMIT). */
  workerHeapMb: number;
  /** One namespace's share: workers its evaluations hold at once (default: half of `workers`, rounded up). */
  maxWorkersPerNamespace?: number;
  /** One namespace's share of `maxQueued` (default a quarter); past it 503 with Retry-After. */
  maxQueuedPerNamespace?: number;
  /** One namespace's share of `maxQueuedBytes` (default a quarter); past it 503 with Retry-After. */
  maxQueuedBytesPerNamespace?: number;
}

/** Mapped output may be larger than the body it came from, within reason: four times the body limit. */
const OUTPUT_PER_BODY = 4;

export const DEFAULT_SETTINGS: IngesterSettings = {
  listen: { host: '127.0.0.1', port: 8080 },
  adminListen: { host: '127.0.0.1', port: 8081 },
  adminAllowedHosts: [],
  trustProxy: false,
  logLevel: 'info',
  limits: {
    bodyBytes: 1024 * 1024,
    eventsPerRequest: 1000,
    pointsPerRequest: 10000,
    seriesTTLSeconds: 600,
    maxSeriesPerNamespace: 10000,
    maxSeriesTotal: 100000,
    maxEventLoopDelayMs: 1000,
    maxSeriesLabelChars: 2048,
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 30_000,
    keepAliveTimeoutMs: 5_000,
    maxInFlightBodyBytes: 64 * 1024 * 1024,
    maxInFlightBodyBytesPerNamespace: 16 * 1024 * 1024,
    maxUnauthenticatedBodyBytes: 8 * 1024 * 1024,
    maxUnauthenticatedBodyBytesPerAddress: 2 * 1024 * 1024,
    maxUnauthenticatedBodyBytesPerIntegration: 4 * 1024 * 1024,
    minBodyBytesPerSecond: 8192,
    bodyRateGraceMs: 2000,
    maxJsonDepth: 64,
  },
  authThrottle: { failures: 20, failuresPerAddress: 100, windowSeconds: 60, blockSeconds: 300, failureDelayMs: 300 },
  sinks: { log: { path: '-', timeoutMs: 5_000 } },
  shutdown: { drainDelaySeconds: 0, timeoutSeconds: 25 },
  exposition: { enabled: true },
  mapping: {
    ...DEFAULT_MAPPING_LIMITS,
    maxOutputBytes: OUTPUT_PER_BODY * 1024 * 1024,
    workers: defaultWorkers(),
    maxQueued: DEFAULT_POOL.maxQueued,
    maxQueuedBytes: DEFAULT_POOL.maxQueuedBytes,
    workerHeapMb: DEFAULT_POOL.heapMb,
  },
  deadLetter: {
    path: '/tmp/intake-deadletter.sqlite',
    maxBytes: 256 * 1024 * 1024,
    maxBytesPerNamespace: 16 * 1024 * 1024,
    replayLeaseSeconds: 300,
    bulkReplay: DEFAULT_BULK_REPLAY_LIMITS,
  },
  destinations: [],
  addressGuard: DEFAULT_ADDRESS_GUARD,
  tenantLimits: resolveTenantLimits(undefined, 10000),
  inspector: DEFAULT_INSPECTOR,
};

const positive = { type: 'integer', minimum: 1 } as const;
const settingsFileSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    listen: { type: 'string' },
    adminListen: { type: 'string' },
    adminAllowedHosts: { type: 'array', maxItems: 64, items: { type: 'string' } },
    tls: {
      type: 'object',
      additionalProperties: false,
      required: ['certFile', 'keyFile'],
      properties: { certFile: { type: 'string' }, keyFile: { type: 'string' } },
    },
    trustProxy: { type: ['boolean', 'integer', 'string'] },
    logLevel: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
    limits: {
      type: 'object',
      additionalProperties: false,
      properties: {
        bodyBytes: positive,
        eventsPerRequest: positive,
        pointsPerRequest: positive,
        seriesTTLSeconds: positive,
        maxSeriesPerNamespace: positive,
        maxSeriesTotal: positive,
        maxEventLoopDelayMs: positive,
        maxSeriesLabelChars: positive,
        maxConnections: positive,
        maxConnectionsPerAddress: positive,
        headersTimeoutMs: positive,
        requestTimeoutMs: positive,
        keepAliveTimeoutMs: positive,
        maxInFlightBodyBytes: positive,
        maxInFlightBodyBytesPerNamespace: positive,
        maxUnauthenticatedBodyBytes: positive,
        maxUnauthenticatedBodyBytesPerAddress: positive,
        maxUnauthenticatedBodyBytesPerIntegration: positive,
        minBodyBytesPerSecond: positive,
        bodyRateGraceMs: positive,
        maxJsonDepth: positive,
      },
    },
    authThrottle: {
      type: 'object',
      additionalProperties: false,
      properties: {
        failures: positive,
        failuresPerAddress: positive,
        windowSeconds: positive,
        blockSeconds: positive,
        failureDelayMs: { type: 'integer', minimum: 0 },
      },
    },
    sinks: {
      type: 'object',
      additionalProperties: false,
      properties: {
        log: {
          type: 'object',
          additionalProperties: false,
          properties: { path: { type: 'string', minLength: 1 }, timeoutMs: positive, enabled: { type: 'boolean' } },
        },
        jetstream: jetstreamSchema,
      },
    },
    spool: spoolSchema,
    shutdown: {
      type: 'object',
      additionalProperties: false,
      properties: {
        drainDelaySeconds: { type: 'number', minimum: 0 },
        timeoutSeconds: { type: 'number', exclusiveMinimum: 0 },
      },
    },
    remoteWrite: remoteWriteSchema,
    exposition: expositionSchema,
    mapping: {
      type: 'object',
      additionalProperties: false,
      properties: {
        timeoutMs: positive,
        maxDepth: positive,
        maxSequence: positive,
        maxStringLength: positive,
        maxOutputBytes: positive,
        maxEvents: positive,
        workers: { type: 'integer', minimum: 1, maximum: 64 },
        maxQueued: positive,
        maxQueuedBytes: positive,
        workerHeapMb: { type: 'integer', minimum: 16 },
        maxWorkersPerNamespace: { type: 'integer', minimum: 1, maximum: 64 },
        maxQueuedPerNamespace: positive,
        maxQueuedBytesPerNamespace: positive,
      },
    },
    deadLetter: {
      type: 'object',
      additionalProperties: false,
      properties: {
        path: { type: 'string', minLength: 1 },
        maxBytes: { type: 'integer', minimum: 4096 },
        maxBytesPerNamespace: { type: 'integer', minimum: 4096 },
        replayLeaseSeconds: { type: 'integer', minimum: 1, maximum: 86400 },
        bulkReplay: {
          type: 'object',
          additionalProperties: false,
          properties: {
            maxRunning: { type: 'integer', minimum: 1, maximum: 1000 },
            maxRate: { type: 'number', exclusiveMinimum: 0, maximum: 100000 },
            allNamespaces: { enum: ['shared', 'exclusive'] },
          },
        },
        // With the bus (sinks.jetstream): the stream the letters are kept in, its subjects, their age.
        stream: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,255}$' },
        subjectPrefix: { type: 'string', pattern: '^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$' },
        maxAgeSeconds: { type: 'integer', minimum: 0 },
      },
    },
    destinations: destinationsSchema,
    addressGuard: addressGuardSchema,
    tenantLimits: tenantLimitsSchema,
    inspector: inspectorSchema,
    routes: { type: 'array' },
  },
} as const;

const validateFile = new Ajv({ allErrors: true, strict: false }).compile(settingsFileSchema);

/**
 * Every duration in the file: a Go-style string under `key`; the schema above and the settings
 * hold it as a number under `internal`, the key it replaces (read still, with a warning).
 * destinations[] spell theirs as strings already (destinations/settings.ts).
 */
const JETSTREAM = ['sinks', 'jetstream'];
const DEAD_LETTER = ['deadLetter'];
const SETTING_DURATIONS: readonly DurationKey[] = [
  secondsKey(['limits'], 'seriesTTL', 'seriesTTLSeconds', { minMs: 1000 }),
  msKey(['limits'], 'maxEventLoopDelay', 'maxEventLoopDelayMs'),
  msKey(['limits'], 'headersTimeout', 'headersTimeoutMs'),
  msKey(['limits'], 'requestTimeout', 'requestTimeoutMs'),
  msKey(['limits'], 'keepAliveTimeout', 'keepAliveTimeoutMs'),
  msKey(['limits'], 'bodyRateGrace', 'bodyRateGraceMs'),
  secondsKey(['authThrottle'], 'window', 'windowSeconds', { minMs: 1000 }),
  secondsKey(['authThrottle'], 'block', 'blockSeconds', { minMs: 1000 }),
  msKey(['authThrottle'], 'failureDelay', 'failureDelayMs', 0),
  msKey(['sinks', 'log'], 'timeout', 'timeoutMs'),
  msKey(JETSTREAM, 'timeout', 'timeoutMs'),
  msKey(JETSTREAM, 'inFlightWait', 'inFlightWaitMs', 0),
  msKey(JETSTREAM, 'reconnectWait', 'reconnectWaitMs'),
  secondsKey([...JETSTREAM, 'streamConfig'], 'maxAge', 'maxAgeSeconds', { minMs: 0 }),
  secondsKey([...JETSTREAM, 'streamConfig'], 'duplicateWindow', 'duplicateWindowSeconds', { minMs: 900_000 }),
  msKey(['spool'], 'replayBackoffMin', 'replayBackoffMinMs'),
  msKey(['spool'], 'replayBackoffMax', 'replayBackoffMaxMs'),
  secondsKey(['shutdown'], 'drainDelay', 'drainDelaySeconds', { minMs: 0, fractional: true }),
  secondsKey(['shutdown'], 'timeout', 'timeoutSeconds', { fractional: true }),
  msKey(['remoteWrite'], 'flushInterval', 'flushIntervalMs'),
  msKey(['remoteWrite'], 'maxSampleAge', 'maxSampleAgeMs', 60_000),
  msKey(['remoteWrite'], 'timeout', 'timeoutMs'),
  msKey(['remoteWrite'], 'backoffMin', 'minBackoffMs'),
  msKey(['remoteWrite'], 'backoffMax', 'maxBackoffMs'),
  msKey(['mapping'], 'timeout', 'timeoutMs'),
  secondsKey(DEAD_LETTER, 'replayLease', 'replayLeaseSeconds', { minMs: 1000, maxMs: 86_400_000 }),
  secondsKey(DEAD_LETTER, 'maxAge', 'maxAgeSeconds', { minMs: 0 }),
];

/** Every dead-letter setting is in deadLetter; these sat under sinks.jetstream. */
const MOVED_SETTINGS: readonly MovedKey[] = [
  { from: JETSTREAM, fromKey: 'deadLetterStream', to: DEAD_LETTER, toKey: 'stream' },
  { from: JETSTREAM, fromKey: 'deadLetterSubjectPrefix', to: DEAD_LETTER, toKey: 'subjectPrefix' },
  { from: JETSTREAM, fromKey: 'deadLetterMaxAgeSeconds', to: DEAD_LETTER, toKey: 'maxAgeSeconds', duration: 'maxAge' },
];

/** Overrides from flags or environment; undefined means "not given". */
export interface SettingOverrides {
  listen?: string;
  adminListen?: string;
  tlsCert?: string;
  tlsKey?: string;
  logLevel?: string;
  eventsLog?: string;
  trustProxy?: string;
}

/**
 * The config file's shape, checked the same way at startup and at every reload; returns the file
 * with its durations in the settings' units (setting-durations.ts) and the deprecated keys it used.
 */
export function checkSettingsFile(file: unknown, source: string): { file: unknown; deprecated: DeprecatedKey[] } {
  let normal: ReturnType<typeof normaliseDurations>;
  try {
    normal = normaliseDurations(file, { durations: SETTING_DURATIONS, moved: MOVED_SETTINGS });
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(`${source}: ${err.message}`);
    throw err;
  }
  normal.deprecated.push(...routeToleranceSeconds(normal.file));
  if (!validateFile(normal.file)) {
    const problems = (validateFile.errors ?? []).map(
      (e) =>
        `${e.instancePath || '/'} ${e.message}${e.keyword === 'additionalProperties' ? ` (${e.params.additionalProperty})` : ''}`,
    );
    throw new ConfigError(`${source}: ${problems.join('; ')}`);
  }
  return normal;
}

/** Standalone routes spell the signature tolerance as the CRD does (routing/file-source.ts reads both). */
function routeToleranceSeconds(file: unknown): DeprecatedKey[] {
  const routes = (file as { routes?: unknown } | null)?.routes;
  if (!Array.isArray(routes)) return [];
  return routes.flatMap((r: { authentication?: { signature?: { toleranceSeconds?: unknown } } } | null, i) => {
    const seconds = r?.authentication?.signature?.toleranceSeconds;
    if (typeof seconds !== 'number') return [];
    const key = `routes[${i}].authentication.signature.toleranceSeconds`;
    const use = `routes[${i}].authentication.signature.tolerance`;
    return [{ key, use, message: `${key} is deprecated: use ${use}: ${formatDuration(seconds * 1000)}` }];
  });
}

/** `onDeprecated` hears of each key of an earlier spelling the file used (the caller logs it once, at start-up). */
export function resolveSettings(
  file: unknown,
  overrides: SettingOverrides,
  source = 'config',
  onDeprecated: (key: DeprecatedKey) => void = () => undefined,
): IngesterSettings {
  const checked = checkSettingsFile(file, source);
  for (const key of checked.deprecated) onDeprecated(key);
  const f = checked.file as Record<string, never> & {
    listen?: string;
    adminListen?: string;
    adminAllowedHosts?: string[];
    tls?: { certFile: string; keyFile: string };
    trustProxy?: boolean | number | string;
    logLevel?: string;
    limits?: Partial<IngesterSettings['limits']>;
    authThrottle?: Partial<IngesterSettings['authThrottle']>;
    sinks?: {
      log?: { path?: string; timeoutMs?: number; enabled?: boolean };
      jetstream?: Parameters<typeof resolveJetStream>[0];
    };
    spool?: Parameters<typeof resolveSpool>[0];
    shutdown?: Partial<IngesterSettings['shutdown']>;
    remoteWrite?: RemoteWriteFile;
    exposition?: { enabled?: boolean };
    mapping?: Partial<MappingSettings>;
    deadLetter?: Partial<IngesterSettings['deadLetter']> & {
      stream?: string;
      subjectPrefix?: string;
      maxAgeSeconds?: number;
    };
    destinations?: DestinationFile[];
    addressGuard?: AddressGuardFile;
    tenantLimits?: PartialTenantLimitDefaults;
    inspector?: InspectorFile;
  };
  const d = DEFAULT_SETTINGS;
  const limits = { ...d.limits, ...f.limits };
  const settings: IngesterSettings = {
    listen: parseListen(overrides.listen ?? f.listen ?? `${d.listen.host}:${d.listen.port}`, 'listen'),
    adminListen: parseListen(
      overrides.adminListen ?? f.adminListen ?? `${d.adminListen.host}:${d.adminListen.port}`,
      'adminListen',
    ),
    adminAllowedHosts: checkAdminAllowedHosts(f.adminAllowedHosts ?? d.adminAllowedHosts),
    trustProxy: checkTrustProxy(parseTrustProxy(overrides.trustProxy) ?? f.trustProxy ?? d.trustProxy),
    logLevel: overrides.logLevel ?? f.logLevel ?? d.logLevel,
    limits,
    authThrottle: resolveAuthThrottle(d.authThrottle, f.authThrottle),
    sinks: {
      log: {
        path: overrides.eventsLog ?? f.sinks?.log?.path ?? d.sinks.log.path,
        timeoutMs: f.sinks?.log?.timeoutMs ?? d.sinks.log.timeoutMs,
      },
    },
    shutdown: { ...d.shutdown, ...f.shutdown },
    exposition: { ...d.exposition, ...f.exposition },
    // The output bound follows the body limit unless given: a larger body may map to more.
    mapping: { ...d.mapping, maxOutputBytes: OUTPUT_PER_BODY * limits.bodyBytes, ...f.mapping },
    deadLetter: deadLetterSettings(d.deadLetter, f.deadLetter),
    destinations: resolveDestinations(f.destinations),
    addressGuard: resolveAddressGuard(f.addressGuard),
    tenantLimits: resolveTenantLimits(
      f.tenantLimits,
      f.limits?.maxSeriesPerNamespace ?? d.limits.maxSeriesPerNamespace,
    ),
    inspector: resolveInspector(f.inspector),
  };
  const jetstream = resolveJetStream(f.sinks?.jetstream, f.deadLetter);
  const spool = resolveSpool(f.spool, jetstream, settings.destinations.length > 0);
  if (jetstream) settings.sinks.jetstream = jetstream;
  if (spool) settings.spool = spool;
  settings.sinks.log.enabled = f.sinks?.log?.enabled ?? jetstream === undefined;
  if (!settings.sinks.log.enabled && !jetstream && settings.destinations.length === 0) {
    throw new ConfigError(
      'sinks: with sinks.log.enabled false, configure sinks.jetstream or destinations: events must go somewhere',
    );
  }
  fitShares(settings, f as Parameters<typeof fitShares>[1]);
  if (f.remoteWrite) settings.remoteWrite = resolveRemoteWrite(f.remoteWrite);
  if (!settings.exposition.enabled && !settings.remoteWrite)
    throw new ConfigError(
      'exposition.enabled is false and remoteWrite is not set: received data points would go nowhere',
    );
  const certFile = overrides.tlsCert ?? f.tls?.certFile;
  const keyFile = overrides.tlsKey ?? f.tls?.keyFile;
  if ((certFile === undefined) !== (keyFile === undefined))
    throw new ConfigError('TLS needs both a certificate file and a key file');
  if (certFile !== undefined && keyFile !== undefined) settings.tls = { certFile, keyFile };
  if (settings.listen.port === settings.adminListen.port && settings.listen.host === settings.adminListen.host) {
    throw new ConfigError("listen and adminListen must differ: the admin port holds every tenant's series");
  }
  return settings;
}

/** The store's own settings; those of the bus stream go to the bus settings (resolveJetStream). */
function deadLetterSettings(
  d: IngesterSettings['deadLetter'],
  f: (Partial<IngesterSettings['deadLetter']> & Record<string, unknown>) | undefined,
): IngesterSettings['deadLetter'] {
  const { stream: _s, subjectPrefix: _p, maxAgeSeconds: _a, bulkReplay, ...store } = f ?? {};
  return { ...d, ...store, bulkReplay: { ...d.bulkReplay, ...bulkReplay } };
}

/**
 * A per-tenant (or per-address) share is at most the whole it is a share of: a share larger than
 * its whole would never be what refuses, so one tenant could take everything. A share given in
 * the file that exceeds its whole is refused, naming both fields; a default share is lowered to a
 * smaller whole that was given.
 */
function fitShares(
  settings: IngesterSettings,
  given: Partial<Record<'limits' | 'mapping' | 'deadLetter', Record<string, unknown>>>,
): void {
  const pairs = [
    ['limits', 'maxSeriesPerNamespace', 'maxSeriesTotal'],
    ['limits', 'maxConnectionsPerAddress', 'maxConnections'],
    ['limits', 'maxInFlightBodyBytesPerNamespace', 'maxInFlightBodyBytes'],
    ['limits', 'maxUnauthenticatedBodyBytesPerAddress', 'maxUnauthenticatedBodyBytes'],
    ['limits', 'maxUnauthenticatedBodyBytesPerIntegration', 'maxUnauthenticatedBodyBytes'],
    ['mapping', 'maxWorkersPerNamespace', 'workers'],
    ['mapping', 'maxQueuedPerNamespace', 'maxQueued'],
    ['mapping', 'maxQueuedBytesPerNamespace', 'maxQueuedBytes'],
    ['deadLetter', 'maxBytesPerNamespace', 'maxBytes'],
  ] as const;
  for (const [block, share, whole] of pairs) {
    const values = settings[block] as unknown as Record<string, number | undefined>;
    const [part, all] = [values[share], values[whole]];
    if (part === undefined || all === undefined || part <= all) continue;
    // The default worker count follows the machine's cores: a share given for a larger machine fits itself.
    if (given[block]?.[share] === undefined || (whole === 'workers' && given[block]?.[whole] === undefined))
      values[share] = all;
    else throw new ConfigError(`${block}.${share} (${part}) must not exceed ${block}.${whole} (${all})`);
  }
}

/** Names only: IP literals and localhost are always answered, and a port or a pattern would never match a Host. */
function checkAdminAllowedHosts(names: string[]): string[] {
  const bad = names.find((n) => !isHostName(n));
  if (bad !== undefined)
    throw new ConfigError(
      `adminAllowedHosts: ${JSON.stringify(bad.slice(0, 100))} is not a DNS name (no port, no wildcard; IP addresses and localhost need no entry)`,
    );
  return names.map(normalHostName);
}

/** Across integrations an address may fail five times as often as at one, unless given; never less than at one. */
function resolveAuthThrottle(
  d: IngesterSettings['authThrottle'],
  f: Partial<IngesterSettings['authThrottle']> | undefined,
): IngesterSettings['authThrottle'] {
  const failures = f?.failures ?? d.failures;
  const t = { ...d, ...f, failuresPerAddress: f?.failuresPerAddress ?? 5 * failures };
  if (t.failuresPerAddress < failures)
    throw new ConfigError('authThrottle.failuresPerAddress must be at least authThrottle.failures');
  return t;
}

/**
 * `true` would trust every address in X-Forwarded-For, so any client could choose the address the
 * brute-force throttle sees; a hop count is ignored by fastify 5. Only the proxies' addresses or
 * CIDRs (or proxy-addr's range names) are accepted.
 */
function checkTrustProxy(value: boolean | number | string): false | string {
  if (value === true) {
    throw new ConfigError(
      'trustProxy: true would let any client choose its address through X-Forwarded-For; give the addresses or CIDRs of the proxies in front of intake (e.g. "10.0.0.0/8"), or uniquelocal for any private address',
    );
  }
  if (typeof value === 'number') {
    // fastify 5 ignores X-Forwarded-For when given only a hop count (it cannot check the peer).
    throw new ConfigError(
      'trustProxy: hop counts are not supported; give the proxies\' addresses or CIDRs (e.g. "10.0.0.0/8"), or uniquelocal for any private address',
    );
  }
  if (typeof value === 'string') {
    const bad = value
      .split(',')
      .map((s) => s.trim())
      .find((s) => !isAddressOrCidr(s));
    if (bad !== undefined)
      throw new ConfigError(
        `trustProxy: ${JSON.stringify(bad.slice(0, 60))} is not an IP address or CIDR; give comma-separated addresses/CIDRs of the proxies, or loopback, linklocal, uniquelocal`,
      );
  }
  return value;
}

/** Names proxy-addr (fastify's trustProxy) accepts for address ranges. */
const RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function isAddressOrCidr(text: string): boolean {
  if (RANGE_NAMES.has(text)) return true;
  const [address, prefix, ...rest] = text.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

function parseTrustProxy(value: string | undefined): boolean | number | string | undefined {
  if (value === undefined) return undefined;
  if (value === 'true' || value === 'false') return value === 'true';
  return /^\d+$/.test(value) ? Number(value) : value;
}
