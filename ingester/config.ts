/**
 * Ingester settings: defaults, then the YAML file, then environment variables, then flags (each
 * later source wins). The file may also list routes (standalone mode); those are read by
 * route-sources/file.ts, not here.
 */
import { Ajv } from 'ajv';
import { ConfigError, parseListen, type Listen } from '../common/config-files.js';
import { DEFAULT_MAPPING_LIMITS, type MappingLimits } from '../api/mapping/engine.js';

export interface IngesterSettings {
  listen: Listen;
  adminListen: Listen;
  tls?: { certFile: string; keyFile: string };
  /** Passed to fastify: trust X-Forwarded-For from these proxies (true, hop count, or CIDR list). */
  trustProxy: boolean | number | string;
  logLevel: string;
  limits: {
    bodyBytes: number;
    eventsPerRequest: number;
    pointsPerRequest: number;
    seriesTTLSeconds: number;
    maxSeriesPerNamespace: number;
    maxSeriesTotal: number;
    maxEventLoopDelayMs: number;
  };
  authThrottle: { failures: number; windowSeconds: number; blockSeconds: number };
  sinks: { log: { path: string } };
  shutdown: { drainDelaySeconds: number; timeoutSeconds: number };
  /** Guardrails for every data mapping (platform team only; tenants cannot change them). */
  mapping: MappingLimits;
  /** Where payloads a mapping could not turn into events are kept for replay (bounded). */
  deadLetter: { path: string; maxBytes: number };
}

export const DEFAULT_SETTINGS: IngesterSettings = {
  listen: { host: '127.0.0.1', port: 8080 },
  adminListen: { host: '127.0.0.1', port: 8081 },
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
  },
  authThrottle: { failures: 20, windowSeconds: 60, blockSeconds: 300 },
  sinks: { log: { path: '-' } },
  shutdown: { drainDelaySeconds: 0, timeoutSeconds: 25 },
  mapping: DEFAULT_MAPPING_LIMITS,
  deadLetter: { path: '/tmp/intake-deadletter.jsonl', maxBytes: 64 * 1024 * 1024 },
};

const positive = { type: 'integer', minimum: 1 } as const;
const settingsFileSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    listen: { type: 'string' },
    adminListen: { type: 'string' },
    tls: { type: 'object', additionalProperties: false, required: ['certFile', 'keyFile'], properties: { certFile: { type: 'string' }, keyFile: { type: 'string' } } },
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
      },
    },
    authThrottle: { type: 'object', additionalProperties: false, properties: { failures: positive, windowSeconds: positive, blockSeconds: positive } },
    sinks: { type: 'object', additionalProperties: false, properties: { log: { type: 'object', additionalProperties: false, properties: { path: { type: 'string', minLength: 1 } } } } },
    shutdown: {
      type: 'object',
      additionalProperties: false,
      properties: { drainDelaySeconds: { type: 'number', minimum: 0 }, timeoutSeconds: { type: 'number', exclusiveMinimum: 0 } },
    },
    mapping: {
      type: 'object',
      additionalProperties: false,
      properties: { timeoutMs: positive, maxDepth: positive, maxSequence: positive, maxStringLength: positive },
    },
    deadLetter: { type: 'object', additionalProperties: false, properties: { path: { type: 'string', minLength: 1 }, maxBytes: { type: 'integer', minimum: 4096 } } },
    routes: { type: 'array' },
  },
} as const;

const validateFile = new Ajv({ allErrors: true, strict: false }).compile(settingsFileSchema);

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

export function resolveSettings(file: unknown, overrides: SettingOverrides, source = 'config'): IngesterSettings {
  if (!validateFile(file)) {
    const problems = (validateFile.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}${e.keyword === 'additionalProperties' ? ` (${e.params.additionalProperty})` : ''}`);
    throw new ConfigError(`${source}: ${problems.join('; ')}`);
  }
  const f = file as Record<string, never> & {
    listen?: string;
    adminListen?: string;
    tls?: { certFile: string; keyFile: string };
    trustProxy?: boolean | number | string;
    logLevel?: string;
    limits?: Partial<IngesterSettings['limits']>;
    authThrottle?: Partial<IngesterSettings['authThrottle']>;
    sinks?: { log?: { path?: string } };
    shutdown?: Partial<IngesterSettings['shutdown']>;
    mapping?: Partial<MappingLimits>;
    deadLetter?: Partial<IngesterSettings['deadLetter']>;
  };
  const d = DEFAULT_SETTINGS;
  const settings: IngesterSettings = {
    listen: parseListen(overrides.listen ?? f.listen ?? `${d.listen.host}:${d.listen.port}`, 'listen'),
    adminListen: parseListen(overrides.adminListen ?? f.adminListen ?? `${d.adminListen.host}:${d.adminListen.port}`, 'adminListen'),
    trustProxy: parseTrustProxy(overrides.trustProxy) ?? f.trustProxy ?? d.trustProxy,
    logLevel: overrides.logLevel ?? f.logLevel ?? d.logLevel,
    limits: { ...d.limits, ...f.limits },
    authThrottle: { ...d.authThrottle, ...f.authThrottle },
    sinks: { log: { path: overrides.eventsLog ?? f.sinks?.log?.path ?? d.sinks.log.path } },
    shutdown: { ...d.shutdown, ...f.shutdown },
    mapping: { ...d.mapping, ...f.mapping },
    deadLetter: { ...d.deadLetter, ...f.deadLetter },
  };
  const certFile = overrides.tlsCert ?? f.tls?.certFile;
  const keyFile = overrides.tlsKey ?? f.tls?.keyFile;
  if ((certFile === undefined) !== (keyFile === undefined)) throw new ConfigError('TLS needs both a certificate file and a key file');
  if (certFile !== undefined && keyFile !== undefined) settings.tls = { certFile, keyFile };
  if (settings.listen.port === settings.adminListen.port && settings.listen.host === settings.adminListen.host) {
    throw new ConfigError('listen and adminListen must differ: the admin port holds every tenant\'s series');
  }
  return settings;
}

function parseTrustProxy(value: string | undefined): boolean | number | string | undefined {
  if (value === undefined) return undefined;
  if (value === 'true' || value === 'false') return value === 'true';
  return /^\d+$/.test(value) ? Number(value) : value;
}
