/**
 * The options several commands share, each declared here once, and the checks of their values.
 * Each command adds its own instance (commander binds an Option to one command): with positional
 * options, `intake operator cleanup --namespace NS` gives cleanup's --namespace, not operator's.
 */
import { Option } from 'commander';
import { ConfigError } from '../common/config-files.js';
import { formatDuration, parseDuration } from '../common/duration.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** --log-level; without a default the ingester takes its config file's `logLevel`. */
export const logLevelOption = (defaultLevel?: string): Option => {
  const option = new Option('--log-level <level>', 'operational log level').choices(LOG_LEVELS).env('INTAKE_LOG_LEVEL');
  return defaultLevel === undefined ? option : option.default(defaultLevel);
};

export const kubeconfigOption = (help = 'kubeconfig file (default: in-cluster service account)'): Option =>
  new Option('--kubeconfig <file>', help).env('INTAKE_KUBECONFIG');

export const namespaceOption = (help: string): Option => new Option('--namespace <ns>', help).env('INTAKE_NAMESPACE');

export const watchNamespacesOption = (help: string): Option =>
  new Option('--watch-namespaces <list>', help).env('INTAKE_WATCH_NAMESPACES');

export const leaseNameOption = (help: string): Option =>
  new Option('--lease-name <name>', help).default('intake-operator');

/** Where the admin-listener clients (deadletter, status) find a running ingester. */
export const adminUrlOption = (): Option =>
  new Option('--admin-url <url>', "the ingester's admin listener")
    .default('http://127.0.0.1:8081')
    .env('INTAKE_ADMIN_URL');

export const OUTPUT_FORMATS = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** kubectl's and helm's -o: a table for people, JSON or YAML for programs. */
export const outputOption = (): Option =>
  new Option('-o, --output <format>', 'output format').choices([...OUTPUT_FORMATS]).default('table');

/** The format asked for with -o (table when none). */
export function outputFormat(opts: { output?: unknown }): OutputFormat {
  return OUTPUT_FORMATS.includes(opts.output as OutputFormat) ? (opts.output as OutputFormat) : 'table';
}

/** A flag's name as typed: fooBar -> --foo-bar. */
const flagName = (key: string): string => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/** The value of option `key` as a positive integer, or a ConfigError naming the flag. */
export function positiveInt(opts: Record<string, unknown>, key: string): number {
  const n = Number(opts[key]);
  if (!Number.isInteger(n) || n <= 0) throw new ConfigError(`${flagName(key)} must be a positive integer`);
  return n;
}

/**
 * The value of option `key`, a Go-style duration (`30s`, `5m`), in milliseconds; at least `minMs`.
 * A bare number is the seconds these flags took before: still read, with a warning on stderr.
 */
export function durationMs(
  opts: Record<string, unknown>,
  key: string,
  minMs = 1000,
  warn: (line: string) => void = (line) => void process.stderr.write(line),
): number {
  const value = String(opts[key]);
  let ms: number;
  if (/^\d+$/.test(value)) {
    ms = Number(value) * 1000;
    warn(
      `intake: ${flagName(key)} ${value} (seconds) is deprecated: give a duration, ${flagName(key)} ${formatDuration(ms)}\n`,
    );
  } else {
    try {
      ms = value === '' ? Number.NaN : parseDuration(value);
    } catch {
      ms = Number.NaN;
    }
    if (Number.isNaN(ms))
      throw new ConfigError(`${flagName(key)} must be a duration such as 30s or 5m, got ${JSON.stringify(value)}`);
  }
  if (ms < minMs) throw new ConfigError(`${flagName(key)} must be at least ${formatDuration(minMs)}`);
  return ms;
}

/** The value of option `key` as an http(s) URL, or a ConfigError naming the flag. */
export function httpUrl(opts: Record<string, unknown>, key: string): string {
  const value = String(opts[key]);
  if (!/^https?:\/\/[^\s/]+/.test(value))
    throw new ConfigError(`${flagName(key)} must be an http(s) URL, got ${JSON.stringify(opts[key])}`);
  return value;
}

/** A comma-separated list flag: trimmed, empty entries dropped. */
export const commaList = (value: unknown): string[] =>
  typeof value === 'string'
    ? value
        .split(',')
        .map((n) => n.trim())
        .filter(Boolean)
    : [];
