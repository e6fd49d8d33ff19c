/**
 * The ingester benchmark's settings (bench/ingest/ingest.ts documents the environment), its work dir and
 * the constants its scenarios share.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../test/support/paths.js';

const envNumber = (name: string, fallback: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw.replace(/s$/, ''));
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(raw)}`);
  return n;
};

export const DURATION_S = envNumber('BENCH_DURATION', 10);
export const WARMUP_S = envNumber('BENCH_WARMUP', 3);
export const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 32);
export const RUNS = envNumber('BENCH_RUNS', 3);
/**
 * Connections for the Alertmanager notifications, fewer than CONNECTIONS. Chosen when the preset
 * ran through JSONata with a wall-clock timeout: with 32 notifications in flight on one core each
 * one's clock ran past 500 ms and valid notifications were answered 422 (docs/benchmarks.md). The
 * preset is a plain function now and mapping limits count CPU time, but the scenario keeps 4 so
 * that its runs compare with the earlier ones.
 */
export const NOTIFICATION_CONNECTIONS = envNumber('BENCH_NOTIFICATION_CONNECTIONS', 4);
export const PROFILE = process.env.BENCH_PROFILE ?? '';
/**
 * The presets scenario (bench/ingest/presets.ts): per preset one warm-up and PRESET_RUNS short runs each
 * of the native function and the JSONata expression, alternately. BENCH_NO_PRESETS=1 skips it,
 * BENCH_NO_PRESET_JSONATA=1 measures the native presets only.
 */
export const PRESET_WARMUP_S = envNumber('BENCH_PRESET_WARMUP', 1);
export const PRESET_DURATION_S = envNumber('BENCH_PRESET_DURATION', 3);
export const PRESET_RUNS = envNumber('BENCH_PRESET_RUNS', 1);
export const NO_PRESETS = process.env.BENCH_NO_PRESETS === '1';
export const NO_PRESET_JSONATA = process.env.BENCH_NO_PRESET_JSONATA === '1';
export const SERVER_CPU = '0';
export const LOAD_CPU = '1';

export const LUA = join(ROOT, 'bench/support/post.lua');
export const DIR = process.env.BENCH_DIR || mkdtempSync(join(tmpdir(), 'intake-bench-'));
mkdirSync(DIR, { recursive: true });
/** Every server's pid, one a line: bench/run.sh's trap kills them if this process dies first. */
export const PIDS_FILE = join(DIR, 'pids');

export const OK_EVENT =
  '{"response":{"processed":1,"cached":0,"received":1},"success":true,"message":"Processed 1 event(s)"}';
export const SERIES = 100_000;
export const SERIES_BATCH = 10_000;
export const RENDERS = 10;
export const MiB = 1024 * 1024;
/** Alerts in one Alertmanager notification of the mapping scenario. */
export const NOTIFICATION_ALERTS = 100;

export const log = (message: string): void => {
  process.stderr.write(`bench: ${message}\n`);
};
