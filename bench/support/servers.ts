/**
 * The ingester benchmark's servers: each pinned to SERVER_CPU with its log in the work dir and its
 * pid in the pids file (bench/run.sh's trap), stopped whatever happens; the ingester as deployed,
 * the Pushgateway and Alertmanager as peers, and what the tables say about them.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, mkdirSync, openSync, readFileSync, truncateSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { alertmanagerArgs } from '../../test/e2e/support/alertmanager.js';
import { ROOT } from '../../test/support/paths.js';
import { freePort } from '../../test/support/ports.js';
import { DIR, PIDS_FILE, SERVER_CPU } from './settings.js';
import type { Setup } from '../ingest/setup.js';
import type { Target } from './load.js';
import {
  BENCH_AUTH,
  BENCH_PASSWORD,
  BENCH_USER,
  imageMallocEnv,
  imageNodeFlags,
  procStatusKiB,
  stopProcess,
} from './processes.js';

export interface Server {
  name: string;
  child: ChildProcess;
  pid: number;
  logFile: string;
  exited: Promise<number | null>;
}

export const servers: Server[] = [];

/**
 * Starts a server pinned to SERVER_CPU; taskset execs it, so the pid is the server's own. `env`:
 * variables added to this process's own.
 */
export function startServer(name: string, argv: string[], stdoutFile?: string, env?: Record<string, string>): Server {
  const logFile = join(DIR, `${name}.log`);
  const err = openSync(logFile, 'a');
  const out = stdoutFile ? openSync(stdoutFile, 'a') : err;
  const child = spawn('taskset', ['-c', SERVER_CPU, ...argv], {
    stdio: ['ignore', out, err],
    ...(env ? { env: { ...process.env, ...env } } : {}),
  });
  if (out !== err) closeSync(out);
  closeSync(err);
  if (child.pid === undefined) throw new Error(`${name} did not start (is taskset installed?)`);
  appendFileSync(PIDS_FILE, `${child.pid}\n`);
  const exited = new Promise<number | null>((done) =>
    child.once('exit', (code, signal) => done(code ?? (signal ? 128 : null))),
  );
  const server = { name, child, pid: child.pid, logFile, exited };
  servers.push(server);
  return server;
}

export const stopServer = (s: Server, graceMs = 10_000): Promise<void> => stopProcess(s.child, graceMs);

export function logTail(s: Server, lines = 15): string {
  try {
    return readFileSync(s.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

export async function waitReady(s: Server, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (s.child.exitCode !== null || s.child.signalCode !== null)
      throw new Error(`${s.name} exited during start-up; its log (${s.logFile}) ends:\n${logTail(s)}`);
    try {
      if (await probe()) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new Error(`${s.name} not ready after ${timeoutMs / 1000} s; its log (${s.logFile}) ends:\n${logTail(s)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const peakRssMiB = (s: Server): number => procStatusKiB(s.pid, 'VmHWM') / 1024;
export const rssMiB = (s: Server): number => procStatusKiB(s.pid, 'VmRSS') / 1024;

export async function request(
  url: string,
  init: RequestInit = {},
  timeoutMs = 30_000,
): Promise<{ status: number; text: string; ms: number }> {
  const start = performance.now();
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  return { status: res.status, text, ms: performance.now() - start };
}

/**
 * The environment the image runs the ingester in, beside its flags: the malloc settings (the
 * Dockerfile's `ENV MALLOC_*`), which decide how much freed memory stays resident.
 */
export const deployedEnv = (): Record<string, string> => imageMallocEnv();

/**
 * The Node flags the image runs the ingester with (the Dockerfile's NODE_OPTIONS), so the benchmark
 * measures the process as deployed. BENCH_NODE_OPTIONS replaces them (e.g. "" to compare).
 */
export function deployedNodeFlags(): string[] {
  const fromEnv = process.env.BENCH_NODE_OPTIONS;
  return fromEnv === undefined ? imageNodeFlags() : fromEnv.split(/\s+/).filter(Boolean);
}

/** A second ingester with these Node flags: same config, its own ports and event file (DIR/events-NAME.jsonl). */
export async function startSecondIngester(
  s: Setup,
  name: string,
  flags: string[],
  entry = join(ROOT, 'dist/cmd/intake.js'),
): Promise<{ server: Server; ingest: number; eventsFile: string }> {
  const [ingest, admin] = [await freePort(), await freePort()];
  const eventsFile = join(DIR, `events-${name}.jsonl`);
  const argv = [
    process.execPath,
    ...flags,
    entry,
    'ingester',
    '--config',
    s.configFile,
    '--listen',
    `127.0.0.1:${ingest}`,
    '--admin-listen',
    `127.0.0.1:${admin}`,
  ];
  const server = startServer(`ingester-${name}`, argv, eventsFile, deployedEnv());
  await waitReady(server, async () => (await request(`http://127.0.0.1:${admin}/readyz`, {}, 1000)).status === 200);
  return { server, ingest, eventsFile };
}

/**
 * The second ingester of BENCH_COMPARE_NODE_OPTIONS, or of BENCH_COMPARE_ENTRY (another build's
 * dist/cmd/intake.js, with the same flags as the first: a before and after in the same rounds).
 */
export async function startComparedIngester(
  s: Setup,
  flags: string[],
  entry?: string,
): Promise<{ server: Server; target: Target }> {
  const { server, ingest, eventsFile } = await startSecondIngester(s, 'compared', flags, entry);
  const target: Target = {
    label: entry
      ? `ingester (${entry}) single event`
      : `ingester (node flags: ${flags.join(' ') || 'none'}) single event`,
    url: `http://127.0.0.1:${ingest}/events/webhook_bench`,
    bodyFile: s.bodies.event,
    headers: { authorization: BENCH_AUTH },
    after: () => truncateSync(eventsFile, 0),
    server,
  };
  return { server, target };
}

export async function startIngester(s: Setup, nodeArgs: string[] = []): Promise<Server> {
  const server = startServer(
    'ingester',
    [
      process.execPath,
      ...deployedNodeFlags(),
      ...nodeArgs,
      join(ROOT, 'dist/cmd/intake.js'),
      'ingester',
      '--config',
      s.configFile,
    ],
    s.eventsFile,
    deployedEnv(),
  );
  await waitReady(
    server,
    async () => (await request(`http://127.0.0.1:${s.ports.admin}/readyz`, {}, 1000)).status === 200,
  );
  return server;
}

/** The node:http floor (bench/ingest/baseline.ts) on its port, once it answers (401 without credentials). */
export async function startBaseline(s: Setup, nodeArgs: string[] = []): Promise<Server> {
  const server = startServer('baseline', [
    process.execPath,
    ...nodeArgs,
    join(ROOT, 'dist/bench/ingest/baseline.js'),
    String(s.ports.baseline),
    BENCH_USER,
    BENCH_PASSWORD,
  ]);
  await waitReady(
    server,
    async () =>
      (await request(`http://127.0.0.1:${s.ports.baseline}/`, { method: 'POST', body: '{}' }, 1000)).status === 401,
  );
  return server;
}

export function machine(): string {
  const model =
    /^model name\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpus()[0]?.model ?? 'unknown';
  // This script runs pinned to one CPU, where nproc would say 1: run.sh passes the machine's.
  const nproc = process.env.BENCH_NPROC || String(cpus().length);
  return `${nproc} cores (${model}), node ${process.version}`;
}

export function alertmanagerVersion(): string {
  const r = spawnSync('prometheus-alertmanager', ['--version'], { encoding: 'utf8', timeout: 5000 });
  return /version (\S+)/.exec(`${r.stdout}${r.stderr}`)?.[1] ?? 'unknown';
}

export async function startAlertmanager(s: Setup): Promise<Server> {
  const storage = join(DIR, 'alertmanager-data');
  mkdirSync(storage, { recursive: true });
  const server = startServer('alertmanager', [
    'prometheus-alertmanager',
    ...alertmanagerArgs({ configFile: s.alertmanagerConfig, storage, port: s.ports.alertmanager, logLevel: 'warn' }),
  ]);
  await waitReady(
    server,
    async () => (await request(`http://127.0.0.1:${s.ports.alertmanager}/-/ready`, {}, 1000)).status === 200,
  );
  const post = await request(`http://127.0.0.1:${s.ports.alertmanager}/api/v2/alerts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: readFileSync(s.bodies.alert),
  });
  if (post.status !== 200) throw new Error(`alertmanager answered the alert with ${post.status} ${post.text}`);
  const held = await request(`http://127.0.0.1:${s.ports.alertmanager}/api/v2/alerts`);
  if (!held.text.includes('"alertname":"cpu_high"'))
    throw new Error(`alertmanager does not hold the posted alert: ${held.text.slice(0, 300)}`);
  return server;
}

export function pushgatewayVersion(): string {
  const r = spawnSync('prometheus-pushgateway', ['--version'], { encoding: 'utf8', timeout: 5000 });
  return /version (\S+)/.exec(`${r.stdout}${r.stderr}`)?.[1] ?? 'unknown';
}

export async function stopAll(): Promise<void> {
  await Promise.all(servers.map((s) => stopServer(s, 5000)));
}
