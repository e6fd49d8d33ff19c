/**
 * Settings of the durable hand-off: `sinks.jetstream` and `spool` in the ingester config file.
 * Kept apart from config.ts so the hand-off owns its schema, defaults and checks.
 */
import { ConfigError } from '../../common/config-files.js';
import { formatDuration } from '../../common/duration.js';

export interface JetStreamSettings {
  /** One URL or several (a cluster); nats:// or tls://. */
  servers: string[];
  stream: string;
  subjectPrefix: string;
  /** Create (or update to) the stream below; false: only check an existing stream. */
  createStream: boolean;
  /** How long a request waits for PubAcks before the rest goes to the spool. */
  timeoutMs: number;
  /** Events being published at once (request path); past it a request waits up to inFlightWaitMs. */
  maxInFlight: number;
  inFlightWaitMs: number;
  /** Delay between reconnect attempts to the bus. */
  reconnectWaitMs: number;
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
  /** A NATS credentials file (JWT + seed), or a file holding an NKey seed; never both. */
  credsFile?: string;
  nkeySeedFile?: string;
  /** Where dead letters are kept with the bus (created by intake), and for how long: the file's deadLetter.stream, .subjectPrefix, .maxAge. */
  deadLetterStream: string;
  deadLetterSubjectPrefix: string;
  deadLetterMaxAgeSeconds: number;
  /** Alertmanager destinations keep their alert states in the key-value bucket `<prefix>-<destination>`. */
  alertBucketPrefix: string;
  /**
   * The stream intake creates; with createStream its limits (maxAgeSeconds, maxBytes, maxMsgs) are
   * also applied to an existing stream.
   */
  streamConfig: {
    replicas: number;
    /** -1: unlimited. With discard:new a full stream rejects publishes (spool, then 503). */
    maxBytes: number;
    maxMsgs: number;
    /**
     * Events older than this are removed, read by a consumer or not (0: kept until maxBytes/maxMsgs, i.e.
     * forever). Bounds the stream in steady state; an event a destination has not taken by then is lost.
     */
    maxAgeSeconds: number;
    duplicateWindowSeconds: number;
    storage: 'file' | 'memory';
  };
}

export interface SpoolSettings {
  /**
   * The storage directory: the spool's SQLite file, and without the bus the outbox, the alert
   * states and the dead letters (the key is `spool.path` for all of them).
   */
  path: string;
  maxBytes: number;
  /** The most one namespace's events may take of maxBytes (default a quarter of it). */
  maxBytesPerNamespace: number;
  /** Events handed to the bus per replay round. */
  replayBatch: number;
  replayBackoffMinMs: number;
  replayBackoffMaxMs: number;
}

/** JetStream's duplicate window must cover the sender's retries and the time in the spool. */
export const MIN_DUPLICATE_WINDOW_SECONDS = 900;

/**
 * Three days: longer than a weekend outage of a destination or of every ingester, so nothing is
 * removed before a destination could take it, yet a stream no longer grows forever (limits retention:
 * an event read is not removed earlier, because consumers other than intake's may read it).
 */
export const DEFAULT_STREAM_MAX_AGE_SECONDS = 3 * 24 * 3600;

export const DEFAULT_JETSTREAM: Omit<JetStreamSettings, 'servers'> = {
  stream: 'INTAKE_EVENTS',
  subjectPrefix: 'intake.events',
  createStream: true,
  timeoutMs: 2000,
  maxInFlight: 4096,
  inFlightWaitMs: 100,
  reconnectWaitMs: 2000,
  deadLetterStream: 'INTAKE_DEADLETTER',
  deadLetterSubjectPrefix: 'intake.deadletter',
  deadLetterMaxAgeSeconds: 14 * 24 * 3600,
  alertBucketPrefix: 'intake-alerts',
  streamConfig: {
    replicas: 1,
    maxBytes: -1,
    maxMsgs: -1,
    maxAgeSeconds: DEFAULT_STREAM_MAX_AGE_SECONDS,
    duplicateWindowSeconds: MIN_DUPLICATE_WINDOW_SECONDS,
    storage: 'file',
  },
};

export const DEFAULT_SPOOL: Omit<SpoolSettings, 'path' | 'maxBytesPerNamespace'> = {
  maxBytes: 1024 * 1024 * 1024,
  replayBatch: 256,
  replayBackoffMinMs: 200,
  replayBackoffMaxMs: 30_000,
};

const positive = { type: 'integer', minimum: 1 } as const;
const file = { type: 'string', minLength: 1 } as const;
const limit = { type: 'integer', minimum: -1 } as const;

/** JSON Schema fragments for the settings file (config.ts). */
export const jetstreamSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    url: {
      anyOf: [
        { type: 'string', minLength: 1 },
        { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
      ],
    },
    stream: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,255}$' },
    subjectPrefix: { type: 'string', pattern: '^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$' },
    createStream: { type: 'boolean' },
    timeoutMs: positive,
    maxInFlight: positive,
    inFlightWaitMs: { type: 'integer', minimum: 0 },
    reconnectWaitMs: positive,
    tls: { type: 'object', additionalProperties: false, properties: { caFile: file, certFile: file, keyFile: file } },
    credsFile: file,
    nkeySeedFile: file,
    alertBucketPrefix: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,200}$' },
    streamConfig: {
      type: 'object',
      additionalProperties: false,
      properties: {
        replicas: { type: 'integer', minimum: 1, maximum: 5 },
        maxBytes: limit,
        maxMsgs: limit,
        maxAgeSeconds: { type: 'integer', minimum: 0 },
        duplicateWindowSeconds: { type: 'integer', minimum: MIN_DUPLICATE_WINDOW_SECONDS },
        storage: { enum: ['file', 'memory'] },
      },
    },
  },
} as const;

export const spoolSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['path'],
  properties: {
    path: file,
    maxBytes: { type: 'integer', minimum: 65536 },
    maxBytesPerNamespace: { type: 'integer', minimum: 65536 },
    replayBatch: { type: 'integer', minimum: 1, maximum: 10000 },
    replayBackoffMinMs: positive,
    replayBackoffMaxMs: positive,
  },
} as const;

type DeadLetterKeys = 'deadLetterStream' | 'deadLetterSubjectPrefix' | 'deadLetterMaxAgeSeconds';
type JetStreamFile = Partial<Omit<JetStreamSettings, 'servers' | 'streamConfig' | DeadLetterKeys>> & {
  url: string | string[];
  streamConfig?: Partial<JetStreamSettings['streamConfig']>;
};

/** Defaults applied; called after the schema passed. The dead letters' stream is named in the file's deadLetter block. */
export function resolveJetStream(
  f: JetStreamFile | undefined,
  deadLetter: { stream?: string; subjectPrefix?: string; maxAgeSeconds?: number } = {},
): JetStreamSettings | undefined {
  if (!f) return undefined;
  const { url, streamConfig, ...rest } = f;
  const settings: JetStreamSettings = {
    ...DEFAULT_JETSTREAM,
    ...rest,
    ...(deadLetter.stream === undefined ? {} : { deadLetterStream: deadLetter.stream }),
    ...(deadLetter.subjectPrefix === undefined ? {} : { deadLetterSubjectPrefix: deadLetter.subjectPrefix }),
    ...(deadLetter.maxAgeSeconds === undefined ? {} : { deadLetterMaxAgeSeconds: deadLetter.maxAgeSeconds }),
    servers: Array.isArray(url) ? url : [url],
    streamConfig: { ...DEFAULT_JETSTREAM.streamConfig, ...streamConfig },
  };
  if (settings.credsFile && settings.nkeySeedFile)
    throw new ConfigError('sinks.jetstream: give credsFile or nkeySeedFile, not both');
  if ((settings.tls?.certFile === undefined) !== (settings.tls?.keyFile === undefined))
    throw new ConfigError('sinks.jetstream.tls: certFile and keyFile go together');
  if (settings.deadLetterStream === settings.stream)
    throw new ConfigError('deadLetter.stream must differ from sinks.jetstream.stream');
  const { maxAgeSeconds, duplicateWindowSeconds } = settings.streamConfig;
  // The server refuses such a stream; the bus would never come up.
  if (maxAgeSeconds > 0 && maxAgeSeconds < duplicateWindowSeconds) {
    throw new ConfigError(
      `sinks.jetstream.streamConfig: maxAge (${formatDuration(maxAgeSeconds * 1000)}) must be 0s or at least duplicateWindow (${formatDuration(duplicateWindowSeconds * 1000)})`,
    );
  }
  if (subjectsOverlap(settings.deadLetterSubjectPrefix, settings.subjectPrefix)) {
    throw new ConfigError(
      `deadLetter.subjectPrefix ${settings.deadLetterSubjectPrefix} and sinks.jetstream.subjectPrefix ${settings.subjectPrefix} must not contain one another (two streams cannot share subjects)`,
    );
  }
  return settings;
}

/** Whether the subject spaces `a.>` and `b.>` share a subject (one prefix equals or contains the other). */
export function subjectsOverlap(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`);
}

/**
 * With the bus, the spool holds what the bus could not take yet. Without it, the block names the
 * storage directory and bounds the outbox destinations are delivered from, so destinations
 * without the bus need it.
 */
export function resolveSpool(
  f: (Partial<SpoolSettings> & { path: string }) | undefined,
  jetstream: JetStreamSettings | undefined,
  hasDestinations = false,
): SpoolSettings | undefined {
  if (!f) {
    if (hasDestinations && !jetstream)
      throw new ConfigError(
        'destinations are delivered from a durable queue: configure sinks.jetstream (the bus) or spool.path (the storage directory of a local outbox, standalone)',
      );
    return undefined;
  }
  // Alone, the storage directory holds only the dead letters (dead-letters/setup.ts: deadletters.sqlite).
  const maxBytes = f.maxBytes ?? DEFAULT_SPOOL.maxBytes;
  // A quarter: one namespace's burst while the bus is down leaves three quarters to the others.
  const settings: SpoolSettings = { ...DEFAULT_SPOOL, maxBytesPerNamespace: Math.floor(maxBytes / 4), ...f };
  if (settings.replayBackoffMaxMs < settings.replayBackoffMinMs)
    throw new ConfigError('spool: replayBackoffMax must be at least replayBackoffMin');
  if (settings.maxBytesPerNamespace > settings.maxBytes)
    throw new ConfigError(
      `spool: maxBytesPerNamespace (${settings.maxBytesPerNamespace}) must be at most maxBytes (${settings.maxBytes})`,
    );
  return settings;
}
