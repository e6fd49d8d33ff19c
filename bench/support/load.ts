/**
 * The load of the ingester benchmark: wrk (one thread, bench/support/post.lua) on LOAD_CPU against a
 * target, with the CPU the server and both cores used over each run; warm-ups and alternating runs.
 */
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { median } from '../../test/support/stats.js';
import { cpuBusyPercent, cpuTimes, processCpuSeconds } from './processes.js';
import type { Server } from './servers.js';
import { CONNECTIONS, DIR, DURATION_S, LOAD_CPU, log, LUA, RUNS, SERVER_CPU, WARMUP_S } from './settings.js';

export interface Target {
  label: string;
  url: string;
  bodyFile: string;
  headers: { contentType?: string; authorization?: string; apiKey?: string };
  /** Called after each run: e.g. empties the events file so it does not fill the disk. */
  after?: () => void;
  /** The server under load: its CPU use is recorded per run. */
  server?: Server;
  /** wrk's connections for this target, when not CONNECTIONS. */
  connections?: number;
}

export interface WrkRun {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  socketErrors: number;
  /** CPU the server used, in % of one core, over the run (100 = saturated). */
  serverCpu: number;
  /** How busy the load generator's CPU was, in % (wrk, this script and any neighbour). */
  loadCpuBusy: number;
  /** How busy the server's CPU was, in %: above serverCpu, a neighbour took CPU from the server. */
  serverCpuBusy: number;
  /** Monotonic clock (µs, same clock as V8's profiler on Linux) at the start and end of the run. */
  startUs: number;
  endUs: number;
}

export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

export async function wrk(t: Target, seconds: number): Promise<WrkRun> {
  const args = [
    '-c',
    LOAD_CPU,
    'wrk',
    '-t1',
    `-c${t.connections ?? CONNECTIONS}`,
    `-d${seconds}s`,
    '--timeout',
    '5s',
    '--latency',
    '-s',
    LUA,
    t.url,
  ];
  const env = {
    ...process.env,
    WRK_BODY_FILE: t.bodyFile,
    WRK_CONTENT_TYPE: t.headers.contentType ?? 'application/json',
    WRK_AUTHORIZATION: t.headers.authorization ?? '',
    WRK_APIKEY: t.headers.apiKey ?? '',
  };
  const cpuBefore = cpuTimes();
  const serverBefore = t.server ? processCpuSeconds(t.server.pid) : NaN;
  const startUs = monotonicUs();
  const child = spawn('taskset', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 30) * 1000);
  const code = await new Promise<number | null>((done) => child.once('close', (c) => done(c)));
  clearTimeout(timer);
  const endUs = monotonicUs();
  const serverCpu = t.server
    ? ((processCpuSeconds(t.server.pid) - serverBefore) / ((endUs - startUs) / 1e6)) * 100
    : NaN;
  const cpuAfter = cpuTimes();
  const loadCpuBusy = cpuBusyPercent(cpuBefore, cpuAfter, LOAD_CPU);
  const serverCpuBusy = cpuBusyPercent(cpuBefore, cpuAfter, SERVER_CPU);
  appendFileSync(join(DIR, 'wrk.txt'), `### ${t.label} ${seconds}s\n${stdout}${stderr}\n`);
  t.after?.();
  const json = /^WRKJSON (\{.*\})$/m.exec(stdout)?.[1];
  if (code !== 0 || !json) throw new Error(`wrk against ${t.label} failed (exit ${code}):\n${stdout}${stderr}`);
  const r = JSON.parse(json) as Record<string, number>;
  const num = (k: string): number => r[k] as number;
  if (num('status') > 0)
    throw new Error(
      `wrk: ${num('status')} of ${num('requests')} responses from ${t.label} were not 2xx/3xx:\n${stdout}`,
    );
  if (num('requests') === 0) throw new Error(`wrk: no response from ${t.label}:\n${stdout}`);
  return {
    rps: num('requests') / (num('duration_us') / 1e6),
    p50: num('p50_us') / 1000,
    p99: num('p99_us') / 1000,
    requests: num('requests'),
    socketErrors: num('connect') + num('read') + num('write') + num('timeout'),
    serverCpu,
    loadCpuBusy,
    serverCpuBusy,
    startUs,
    endUs,
  };
}

export interface Measured {
  runs: WrkRun[];
  rps: number;
  p50: number;
  p99: number;
  socketErrors: number;
}

export const summarise = (runs: WrkRun[]): Measured => ({
  runs,
  rps: median(runs.map((r) => r.rps)),
  p50: median(runs.map((r) => r.p50)),
  p99: median(runs.map((r) => r.p99)),
  socketErrors: runs.reduce((n, r) => n + r.socketErrors, 0),
});

/** Warm-up of each target, then RUNS rounds in which the targets take turns. */
export const measure = (...targets: Target[]): Promise<Measured[]> =>
  measureWith({ warmupS: WARMUP_S, durationS: DURATION_S, runs: RUNS }, ...targets);

/** measure() with its own warm-up, run length and number of rounds. */
export async function measureWith(
  timing: { warmupS: number; durationS: number; runs: number },
  ...targets: Target[]
): Promise<Measured[]> {
  const { warmupS, durationS, runs: rounds } = timing;
  for (const t of targets) {
    log(`${t.label}: ${warmupS} s warm-up`);
    await wrk(t, warmupS);
  }
  const runs: WrkRun[][] = targets.map(() => []);
  for (let i = 0; i < rounds; i++) {
    for (const [j, t] of targets.entries()) {
      const r = await wrk(t, durationS);
      log(
        `${t.label}: run ${i + 1}/${rounds}: ${r.rps.toFixed(0)} requests/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms`,
      );
      (runs[j] as WrkRun[]).push(r);
    }
  }
  return runs.map(summarise);
}
