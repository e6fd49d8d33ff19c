/**
 * What the benchmarks share: servers pinned to a CPU (the built ingester among them) and stopped
 * whatever happens, a port probe, what /proc says of a process and the CPUs (memory, CPU time), the
 * bench tenant's credentials, routes and limits, and the run itself for the follow-on benchmarks (exit codes run.sh
 * understands: 1 on failure, 130 on SIGINT, 143 when its time limit sends SIGTERM).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { alertmanagerArgs, alertmanagerConfig } from '../../test/e2e/support/alertmanager.js';
import { basic } from '../../test/support/credentials.js';
import { ROOT } from '../../test/support/paths.js';
import { freePort } from '../../test/support/ports.js';
import { waitFor } from '../../test/support/waiting.js';

const children: ChildProcess[] = [];
const stderrTails = new WeakMap<ChildProcess, () => string>();

/** The last 4,000 characters a server started by pinnedServer wrote to stderr. */
export const stderrTail = (child: ChildProcess): string => stderrTails.get(child)?.() ?? '';

/**
 * Starts `cmd` on CPU `cpu` (taskset); its stderr tail is printed if it exits with an error. Its
 * stdout is dropped, or kept in `stdoutFile` (node's --trace-gc writes there).
 */
export function pinnedServer(
  name: string,
  cpu: string,
  cmd: string,
  args: string[],
  stdoutFile?: string,
): ChildProcess {
  const stdout = stdoutFile === undefined ? 'ignore' : openSync(stdoutFile, 'a');
  const child = spawn('taskset', ['-c', cpu, cmd, ...args], { stdio: ['ignore', stdout, 'pipe'] });
  if (typeof stdout === 'number') closeSync(stdout);
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  stderrTails.set(child, () => stderr);
  child.on(
    'exit',
    (code) => code && code !== 143 && process.stderr.write(`bench: ${name} exited with ${code}\n${stderr}\n`),
  );
  children.push(child);
  return child;
}

/**
 * The built ingester (`node [nodeFlags] ROOT/dist/cmd/intake.js ingester --config FILE`) pinned to
 * `cpu` (default CPU 0, where every benchmark runs the server). `root`: another build's tree.
 */
export function pinnedIngester(
  name: string,
  configFile: string,
  o: { nodeFlags?: string[]; cpu?: string; root?: string; stdoutFile?: string } = {},
): ChildProcess {
  return pinnedServer(
    name,
    o.cpu ?? '0',
    process.execPath,
    [...(o.nodeFlags ?? []), join(o.root ?? ROOT, 'dist/cmd/intake.js'), 'ingester', '--config', configFile],
    o.stdoutFile,
  );
}

/** Waits until the ingester's admin listener on `adminPort` says ready; names it and what it said if not. */
export async function ingesterReady(
  name: string,
  child: ChildProcess,
  adminPort: number,
  timeoutMs = 20_000,
): Promise<void> {
  try {
    await waitFor(name, async () => (await fetch(`http://127.0.0.1:${adminPort}/readyz`)).ok, timeoutMs, 100);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${name} said:\n${stderrTail(child)}`);
  }
}

/** pinnedIngester, once ready. */
export async function startPinnedIngester(
  name: string,
  configFile: string,
  adminPort: number,
  o: { nodeFlags?: string[]; cpu?: string; root?: string; stdoutFile?: string } = {},
): Promise<ChildProcess> {
  const child = pinnedIngester(name, configFile, o);
  await ingesterReady(name, child, adminPort);
  return child;
}

/** Stops a server (SIGTERM, SIGKILL after `graceMs`) and waits for it to be gone. */
export async function stopProcess(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(timer);
}

/** A child started elsewhere that must be stopped with the others. */
export function track(child: ChildProcess): ChildProcess {
  children.push(child);
  return child;
}

export const canConnect = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => (socket.destroy(), resolve(true)));
    socket.on('error', () => resolve(false));
  });

/** A field of /proc/PID/status in KiB; NaN once the process is gone. */
export function procStatusKiB(pid: number | undefined, field: 'VmHWM' | 'VmRSS'): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

/** The Node flags the image runs every component with (the Dockerfile's NODE_OPTIONS). */
export function imageNodeFlags(): string[] {
  const flags = /^ENV NODE_OPTIONS=(.*)$/m.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))?.[1] ?? '';
  return flags.split(/\s+/).filter(Boolean);
}

/** The image's malloc settings (the Dockerfile's `ENV MALLOC_*` lines), so RSS is what a pod would see. */
export function imageMallocEnv(): Record<string, string> {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  return Object.fromEntries([...dockerfile.matchAll(/^ENV (MALLOC_[A-Z_]+)=(\S+)$/gm)].map((m) => [m[1], m[2]]));
}

/** An HTTP status and body, or status 0 when nothing answered within 2 s (polling a starting server). */
export async function statusOf(url: string): Promise<{ status: number; body: string }> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return { status: res.status, body: await res.text() };
  } catch {
    return { status: 0, body: '' };
  }
}

/** Peak RSS (VmHWM) of a process, in MiB. */
export const peakRssMiB = (pid: number | undefined): number => procStatusKiB(pid, 'VmHWM') / 1024;

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** CPU seconds (user + system) a process has used so far. */
export function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/**
 * CPU seconds (user + system) of a process, of its children it has reaped, and of its live
 * descendants (an ingester's mapping workers): what the whole tree has used so far.
 */
export function processTreeCpuSeconds(pid: number): number {
  const own = (p: number, withReaped: boolean): number => {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const v = stat
        .slice(stat.lastIndexOf(')') + 2)
        .split(' ')
        .map(Number);
      return ((v[11] ?? 0) + (v[12] ?? 0) + (withReaped ? (v[13] ?? 0) + (v[14] ?? 0) : 0)) / CLK_TCK;
    } catch {
      return 0;
    }
  };
  const children = (p: number): number[] => {
    try {
      return readdirSync(`/proc/${p}/task`).flatMap((tid) =>
        readFileSync(`/proc/${p}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
      );
    } catch {
      return [];
    }
  };
  const descendants = (p: number): number => children(p).reduce((sum, c) => sum + own(c, true) + descendants(c), 0);
  return own(pid, true) + descendants(pid);
}

/** Per-CPU jiffies from /proc/stat: busy (neither idle nor iowait) and total. */
export function cpuTimes(): Map<string, { busy: number; total: number }> {
  const out = new Map<string, { busy: number; total: number }>();
  for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
    const m = /^cpu(\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const v = (m[2] as string).split(/\s+/).map(Number);
    // user nice system idle iowait irq softirq steal (guest time is already in user)
    const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
    out.set(m[1] as string, { busy: total - (v[3] ?? 0) - (v[4] ?? 0), total });
  }
  return out;
}

export function cpuBusyPercent(
  before: Map<string, { busy: number; total: number }>,
  after: Map<string, { busy: number; total: number }>,
  cpu: string,
): number {
  const a = before.get(cpu);
  const b = after.get(cpu);
  if (!a || !b || b.total === a.total) return NaN;
  return ((b.busy - a.busy) / (b.total - a.total)) * 100;
}

function stopChildren(): void {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
}

/** Runs a benchmark; every server it started is stopped on exit, failure and signals. `stop` stops the rest (e.g. Prometheus). */
export function runBenchmark(main: () => Promise<void>, stop: () => Promise<void> = async () => {}): void {
  process.on('exit', stopChildren);
  process.on('SIGINT', () => process.exit(130));
  process.on('SIGTERM', () => {
    stopChildren();
    void stop().finally(() => process.exit(143));
  });
  main()
    .catch((err: Error) => {
      process.stderr.write(`bench: ${err.message}\n`);
      process.exitCode = 1;
    })
    .finally(async () => {
      stopChildren();
      await stop();
    });
}

/** The benchmarks' tenant: webhook user, password and API key, and the Basic header. */
export const BENCH_USER = 'bench';
export const BENCH_PASSWORD = 'bench-password';
export const BENCH_API_KEY = 'bench_0123456789abcdef0123456789abcdef';
export const BENCH_AUTH = basic(BENCH_USER, BENCH_PASSWORD);
/** The single event every benchmark posts to a webhook (the ingest scenarios' own has a longer description). */
export const BENCH_EVENT = JSON.stringify({
  source: 'web-01.example.com',
  severity: 'critical',
  class: 'cpu',
  type: 'high',
  description: 'CPU above 95%',
});

/** The bench tenant's webhook integration `name` (namespace bench, Basic: BENCH_USER, BENCH_PASSWORD). */
export const benchWebhook = (name = 'bench', extra: Record<string, unknown> = {}) => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace: 'bench',
  credentials: [{ username: BENCH_USER, secret: { plain: BENCH_PASSWORD } }],
  ...extra,
});

/** The bench tenant's API key `bench` (BENCH_USER, BENCH_API_KEY). */
export const BENCH_API_KEY_ROUTE = {
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'ApiKey',
  name: 'bench',
  namespace: 'bench',
  credentials: [{ username: BENCH_USER, secret: { plain: BENCH_API_KEY } }],
};

/**
 * Throughput benchmarks measure the ingester, not a tenant's rate limit: every per-tenant rate is
 * set out of reach (the limiter still runs on every request, so its cost is in the figures).
 */
const OUT_OF_REACH = 1_000_000_000;
export const BENCH_TENANT_LIMITS = {
  namespace: {
    eventsPerSecond: OUT_OF_REACH,
    eventsBurst: OUT_OF_REACH,
    dataPointsPerSecond: OUT_OF_REACH,
    dataPointsBurst: OUT_OF_REACH,
    mappingCpuMillisPerSecond: OUT_OF_REACH,
    mappingCpuBurstMillis: OUT_OF_REACH,
  },
  integration: { eventsPerSecond: OUT_OF_REACH, eventsBurst: OUT_OF_REACH },
  apiKey: { dataPointsPerSecond: OUT_OF_REACH, dataPointsBurst: OUT_OF_REACH },
} as const;

/** The pinned nats-server with JetStream (storage in `dir`) on CPU `cpu` (1 unless told), once it accepts connections. */
export async function startNatsServer(dir: string, cpu = '1'): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = pinnedServer('nats-server', cpu, join(ROOT, '.tools/bin/nats-server'), [
    '-a',
    '127.0.0.1',
    '-p',
    String(port),
    '-js',
    '-sd',
    join(dir, 'nats'),
  ]);
  await waitFor('nats-server', () => canConnect(port), 10_000, 100);
  return { url: `nats://127.0.0.1:${port}`, child };
}

/** Debian's Alertmanager on CPU 1, routing every alert to a receiver that notifies nobody (no gossip cluster). */
export async function startAlertmanager(dir: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const config = join(dir, 'am.yml');
  writeFileSync(config, alertmanagerConfig());
  const child = pinnedServer(
    'alertmanager',
    '1',
    'prometheus-alertmanager',
    alertmanagerArgs({ configFile: config, storage: join(dir, `am-${port}`), port, logLevel: 'info' }),
  );
  await waitFor('alertmanager', () => canConnect(port), 20_000, 50);
  return { url: `http://127.0.0.1:${port}`, child };
}
