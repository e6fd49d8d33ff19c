/**
 * One spelling for every duration in the settings file: Go-style strings as the CRDs use
 * (`timeout: 2s`, `replayLease: 5m`; common/duration.ts). The keys they replace (a number of
 * milliseconds or seconds, its unit in its name: `timeoutMs: 2000`) are still read, each with a
 * deprecation warning, and so are the dead-letter keys that moved into `deadLetter:`. Both
 * spellings of one setting with different values are refused: which one was meant is unknowable.
 *
 * The file is brought to the shape the rest of config.ts checks and resolves (numbers in the old
 * units, under the old names: they are the settings' internal names), so the schema and the
 * resolution read one shape whichever spelling the file used.
 */
import { ConfigError } from '../common/config-files.js';
import { formatDuration, parseDuration } from '../common/duration.js';

/** A duration setting: `key` (a string) as the file spells it, `internal` (a number of `unit`) as it was spelt. */
interface DurationKey {
  /** The block holding it, e.g. ['sinks', 'jetstream']. */
  block: readonly string[];
  key: string;
  internal: string;
  unit: 'ms' | 's';
  /** Shortest accepted, in milliseconds (default 1ms: 0 is no duration). */
  minMs?: number;
  maxMs?: number;
}

const ms = (block: readonly string[], key: string, internal: string, minMs?: number): DurationKey => ({
  block,
  key,
  internal,
  unit: 'ms',
  ...(minMs === undefined ? {} : { minMs }),
});
const sec = (block: readonly string[], key: string, internal: string, minMs?: number, maxMs?: number): DurationKey => ({
  block,
  key,
  internal,
  unit: 's',
  ...(minMs === undefined ? {} : { minMs }),
  ...(maxMs === undefined ? {} : { maxMs }),
});

const LIMITS = ['limits'];
const AUTH = ['authThrottle'];
const JETSTREAM = ['sinks', 'jetstream'];
const STREAM = ['sinks', 'jetstream', 'streamConfig'];
const SPOOL = ['spool'];
const SHUTDOWN = ['shutdown'];
const REMOTE_WRITE = ['remoteWrite'];
const DEAD_LETTER = ['deadLetter'];

/** Every duration in the settings file (destinations[] spell theirs as strings already). */
export const DURATION_KEYS: readonly DurationKey[] = [
  sec(LIMITS, 'seriesTTL', 'seriesTTLSeconds', 1000),
  ms(LIMITS, 'maxEventLoopDelay', 'maxEventLoopDelayMs'),
  ms(LIMITS, 'headersTimeout', 'headersTimeoutMs'),
  ms(LIMITS, 'requestTimeout', 'requestTimeoutMs'),
  ms(LIMITS, 'keepAliveTimeout', 'keepAliveTimeoutMs'),
  ms(LIMITS, 'bodyRateGrace', 'bodyRateGraceMs'),
  sec(AUTH, 'window', 'windowSeconds', 1000),
  sec(AUTH, 'block', 'blockSeconds', 1000),
  ms(AUTH, 'failureDelay', 'failureDelayMs', 0),
  ms(['sinks', 'log'], 'timeout', 'timeoutMs'),
  ms(JETSTREAM, 'timeout', 'timeoutMs'),
  ms(JETSTREAM, 'inFlightWait', 'inFlightWaitMs', 0),
  ms(JETSTREAM, 'reconnectWait', 'reconnectWaitMs'),
  sec(STREAM, 'maxAge', 'maxAgeSeconds', 0),
  sec(STREAM, 'duplicateWindow', 'duplicateWindowSeconds', 900_000),
  ms(SPOOL, 'replayBackoffMin', 'replayBackoffMinMs'),
  ms(SPOOL, 'replayBackoffMax', 'replayBackoffMaxMs'),
  // Fractions of a second are fine here (the internal value is a number, not an integer).
  sec(SHUTDOWN, 'drainDelay', 'drainDelaySeconds', 0),
  sec(SHUTDOWN, 'timeout', 'timeoutSeconds'),
  ms(REMOTE_WRITE, 'flushInterval', 'flushIntervalMs'),
  ms(REMOTE_WRITE, 'maxSampleAge', 'maxSampleAgeMs', 60_000),
  ms(REMOTE_WRITE, 'timeout', 'timeoutMs'),
  ms(REMOTE_WRITE, 'backoffMin', 'minBackoffMs'),
  ms(REMOTE_WRITE, 'backoffMax', 'maxBackoffMs'),
  ms(['mapping'], 'timeout', 'timeoutMs'),
  sec(DEAD_LETTER, 'replayLease', 'replayLeaseSeconds', 1000, 86_400_000),
  sec(DEAD_LETTER, 'maxAge', 'maxAgeSeconds', 0),
];

/** Dead-letter settings that sat under sinks.jetstream, now in deadLetter (internal names as spelt there). */
const MOVED_KEYS: ReadonlyArray<{ from: readonly string[]; fromKey: string; to: readonly string[]; toKey: string }> = [
  { from: JETSTREAM, fromKey: 'deadLetterStream', to: DEAD_LETTER, toKey: 'stream' },
  { from: JETSTREAM, fromKey: 'deadLetterSubjectPrefix', to: DEAD_LETTER, toKey: 'subjectPrefix' },
  { from: JETSTREAM, fromKey: 'deadLetterMaxAgeSeconds', to: DEAD_LETTER, toKey: 'maxAgeSeconds' },
];

/** A key of an earlier spelling found in the file. */
export interface DeprecatedKey {
  key: string;
  use: string;
  message: string;
}

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const dotted = (block: readonly string[], key: string): string => [...block, key].join('.');

function blockOf(root: Obj, path: readonly string[], create = false): Obj | undefined {
  let at: Obj = root;
  for (const name of path) {
    const next = at[name];
    if (!isObject(next)) {
      if (!create || next !== undefined) return undefined;
      at[name] = {};
    }
    at = at[name] as Obj;
  }
  return at;
}

/**
 * The file with every duration in its internal unit and the moved keys in place, plus the
 * deprecated keys it used. A copy: the caller's document is left as read. Throws a ConfigError
 * naming the field for a duration that is not one, out of bounds, or given twice with two values.
 */
export function normaliseDurations(file: unknown): { file: unknown; deprecated: DeprecatedKey[] } {
  if (!isObject(file)) return { file, deprecated: [] };
  const root = structuredClone(file);
  const deprecated: DeprecatedKey[] = [];
  // Moved first: a deadLetterMaxAgeSeconds moved is then an old spelling of deadLetter.maxAge.
  for (const m of MOVED_KEYS) {
    const from = blockOf(root, m.from);
    if (!from || !(m.fromKey in from)) continue;
    const value = from[m.fromKey];
    delete from[m.fromKey];
    const to = blockOf(root, m.to, true);
    const old = dotted(m.from, m.fromKey);
    const now = dotted(m.to, m.toKey);
    if (!to) throw new ConfigError(`${old} moved to ${now}, but ${m.to.join('.')} is not a mapping`);
    if (m.toKey in to && to[m.toKey] !== value)
      throw new ConfigError(`${old} and ${now} are both given, with different values: keep ${now} alone`);
    to[m.toKey] = value;
    // The seconds key moved lands under its internal name: the duration pass below names its new spelling.
    if (m.toKey === 'maxAgeSeconds') {
      const spelt = typeof value === 'number' ? `: ${formatDuration(value * 1000)}` : '';
      deprecated.push({
        key: old,
        use: 'deadLetter.maxAge',
        message: `${old} is deprecated: use deadLetter.maxAge${spelt}`,
      });
      if ('maxAge' in to)
        checkSame(
          to,
          DURATION_KEYS.find((d) => d.block === DEAD_LETTER && d.key === 'maxAge')!,
          old,
        );
      continue;
    }
    deprecated.push({ key: old, use: now, message: `${old} is deprecated: use ${now}` });
  }
  for (const d of DURATION_KEYS) {
    const block = blockOf(root, d.block);
    if (!block) continue;
    const where = dotted(d.block, d.key);
    const oldWhere = dotted(d.block, d.internal);
    const hasOld = d.internal in block;
    if (hasOld && !deprecated.some((k) => k.use === where)) {
      const value = block[d.internal];
      const spelt = typeof value === 'number' ? `: ${formatDuration(value * (d.unit === 's' ? 1000 : 1))}` : '';
      deprecated.push({ key: oldWhere, use: where, message: `${oldWhere} is deprecated: use ${where}${spelt}` });
    }
    if (!(d.key in block)) continue;
    const internal = toInternal(block[d.key], d, where);
    if (hasOld) checkSame(block, d, oldWhere, internal);
    delete block[d.key];
    block[d.internal] = internal;
  }
  return { file: root, deprecated };
}

function checkSame(block: Obj, d: DurationKey, oldWhere: string, internal?: number): void {
  const where = dotted(d.block, d.key);
  const now = internal ?? toInternal(block[d.key], d, where);
  if (block[d.internal] !== now)
    throw new ConfigError(
      `${oldWhere} and ${where} are both given, with different values (${JSON.stringify(block[d.internal])} and ${JSON.stringify(block[d.key])}): keep ${where} alone`,
    );
}

/** A Go-style duration string as the number the settings hold (milliseconds or seconds). */
function toInternal(value: unknown, d: DurationKey, where: string): number {
  if (typeof value !== 'string')
    throw new ConfigError(
      `${where}: ${JSON.stringify(value)} is not a duration: give one with its unit, e.g. "30s", "500ms", "5m"`,
    );
  if (value === '') throw new ConfigError(`${where}: empty: give a duration, e.g. "30s"`);
  let total: number;
  try {
    total = parseDuration(value);
  } catch (err) {
    throw new ConfigError(`${where}: ${(err as Error).message}`);
  }
  const minMs = d.minMs ?? 1;
  if (total < minMs)
    throw new ConfigError(`${where}: ${JSON.stringify(value)} is too short: at least ${formatDuration(minMs)}`);
  if (d.maxMs !== undefined && total > d.maxMs)
    throw new ConfigError(`${where}: ${JSON.stringify(value)} is too long: at most ${formatDuration(d.maxMs)}`);
  if (!Number.isInteger(total)) throw new ConfigError(`${where}: ${JSON.stringify(value)}: give whole milliseconds`);
  if (d.unit === 'ms') return total;
  // Internal seconds: an integer unless the schema says otherwise (shutdown's are plain numbers).
  if (total % 1000 !== 0 && d.block !== SHUTDOWN)
    throw new ConfigError(`${where}: ${JSON.stringify(value)}: give whole seconds`);
  return total / 1000;
}
