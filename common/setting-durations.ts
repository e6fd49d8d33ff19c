/**
 * One spelling for every duration in a settings file: Go-style strings as the CRDs use
 * (`timeout: 2s`, `replayLease: 5m`; duration.ts). The keys they replace (a number of
 * milliseconds or seconds, its unit in its name: `timeoutMs: 2000`) are still read, each with a
 * deprecation warning, and so are settings that moved to another block. Both spellings of one
 * setting with different values are refused: which one was meant is unknowable.
 *
 * The file is brought to the shape its schema checks and its resolution reads (numbers in the old
 * units, under the old names: they are the settings' internal names), so both read one shape
 * whichever spelling the file used. The caller lists the keys (ingester/config.ts).
 */
import { ConfigError } from './config-files.js';
import { formatDuration, parseDuration } from './duration.js';

/** A duration setting: `key` (a string) as the file spells it, `internal` (a number of `unit`) as it was spelt. */
export interface DurationKey {
  /** The block holding it, e.g. ['sinks', 'jetstream']. */
  block: readonly string[];
  key: string;
  internal: string;
  unit: 'ms' | 's';
  /** Shortest accepted, in milliseconds (default 1ms: 0 is no duration). */
  minMs?: number;
  maxMs?: number;
  /** Seconds held as a plain number, fractions allowed (else whole seconds). */
  fractional?: boolean;
}

/** A setting that moved to another block, still read where it was; `duration` names its new key when it is one. */
export interface MovedKey {
  from: readonly string[];
  fromKey: string;
  to: readonly string[];
  toKey: string;
  duration?: string;
}

export const msKey = (block: readonly string[], key: string, internal: string, minMs?: number): DurationKey => ({
  block,
  key,
  internal,
  unit: 'ms',
  ...(minMs === undefined ? {} : { minMs }),
});

export const secondsKey = (
  block: readonly string[],
  key: string,
  internal: string,
  bounds: { minMs?: number; maxMs?: number; fractional?: boolean } = {},
): DurationKey => ({ block, key, internal, unit: 's', ...bounds });

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
export function normaliseDurations(
  file: unknown,
  keys: { durations: readonly DurationKey[]; moved: readonly MovedKey[] },
): { file: unknown; deprecated: DeprecatedKey[] } {
  if (!isObject(file)) return { file, deprecated: [] };
  const root = structuredClone(file);
  const deprecated: DeprecatedKey[] = [];
  // Moved first: a moved duration is then an old spelling of its new key.
  for (const m of keys.moved) {
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
    // A duration moved lands under its internal name; its new spelling is the duration key's.
    const duration = keys.durations.find((d) => d.block.join('.') === m.to.join('.') && d.key === m.duration);
    if (duration) {
      const use = dotted(m.to, duration.key);
      const spelt = typeof value === 'number' ? `: ${formatDuration(value * (duration.unit === 's' ? 1000 : 1))}` : '';
      deprecated.push({ key: old, use, message: `${old} is deprecated: use ${use}${spelt}` });
      if (duration.key in to) checkSame(to, duration, old);
      continue;
    }
    deprecated.push({ key: old, use: now, message: `${old} is deprecated: use ${now}` });
  }
  for (const d of keys.durations) {
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
  // Internal seconds: whole ones unless the setting holds fractions.
  if (total % 1000 !== 0 && !d.fractional)
    throw new ConfigError(`${where}: ${JSON.stringify(value)}: give whole seconds`);
  return total / 1000;
}
