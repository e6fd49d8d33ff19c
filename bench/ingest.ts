/**
 * The ingester benchmark (`make bench`, entry bench/run.sh). A benchmark, not a test: it prints what
 * it measured on this machine in this run, and PASS/MISS against the targets; it fails only when
 * something does not work (a server does not start, a request is answered other than 200).
 *
 * In one invocation, on loopback only:
 * - the built ingester (`node dist/cmd/intake.js ingester --config FILE`), config written to a temp
 *   dir, events (stdout) appended to a temp file as a container runtime would, stderr to a log;
 * - bench/baseline.ts: bare node:http doing the minimum of the same work;
 * - the Prometheus Pushgateway, when installed, as the peer for single metric pushes;
 * - Prometheus Alertmanager, when installed, as the peer for single events: `POST /api/v2/alerts`,
 *   one alert per request, routed to a receiver with no integrations (it notifies nobody), its
 *   own temp storage dir, no cluster listener.
 * Data mapping (issue 9), on the same ingester: Alertmanager webhook notifications of 100 alerts
 * (one in ten resolved) through `mapping: {preset: alertmanager}`, and single events through a
 * small custom JSONata mapping measured alternately with unmapped single events.
 * Servers run on CPU 0 (`taskset -c 0`), wrk (one thread) and this script on CPU 1. Each load
 * scenario gets a warm-up, then RUNS measured runs; the tables quote medians. Servers compared by
 * ratio are measured alternately, run by run, so a noisy neighbour hurts both alike.
 *
 * Environment: BENCH_DURATION (s per run, 10), BENCH_WARMUP (s, 3), BENCH_CONNECTIONS (32),
 * BENCH_RUNS (3), BENCH_OUT (also write the result as markdown there), BENCH_NO_PUSHGATEWAY=1
 * (run without the Pushgateway even when installed), BENCH_NO_ALERTMANAGER=1 (likewise), BENCH_DIR (work dir; default a new temp
 * dir), BENCH_NODE_OPTIONS (the ingester's Node flags; default the Dockerfile's NODE_OPTIONS),
 * BENCH_COMPARE_NODE_OPTIONS (when set, even empty: a second ingester with these Node flags
 * instead, measured alongside in the single-event scenario, e.g. "" for V8's defaults),
 * BENCH_PROFILE=single|batch|metric|series|alertmanager|mapped|baseline (instead of the benchmark: one run of
 * that scenario against a server under `node --cpu-prof`, then the top functions; see profile()).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { BENCH_TENANT_LIMITS } from './processes.js';
import { summariseFile } from './cpuprofile.js';

// ---------------------------------------------------------------------------------------------
// Settings

const envNumber = (name: string, fallback: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw.replace(/s$/, ''));
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(raw)}`);
  return n;
};

const DURATION_S = envNumber('BENCH_DURATION', 10);
const WARMUP_S = envNumber('BENCH_WARMUP', 3);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 32);
const RUNS = envNumber('BENCH_RUNS', 3);
/**
 * Connections for the Alertmanager notifications, fewer than CONNECTIONS: JSONata's timeout (the
 * config's mapping.timeoutMs, 500 ms) is wall-clock time from the start of an evaluation, and
 * evaluations are async and interleave, so with 32 notifications of ~20-30 ms CPU in flight on one
 * core each one's clock runs past 500 ms and valid notifications are answered 422 (seen in a run;
 * docs/benchmarks.md). At 4 the scenario measures throughput inside the guardrail.
 */
const NOTIFICATION_CONNECTIONS = envNumber('BENCH_NOTIFICATION_CONNECTIONS', 4);
const PROFILE = process.env.BENCH_PROFILE ?? '';
const SERVER_CPU = '0';
const LOAD_CPU = '1';

const ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));
const LUA = join(ROOT, 'bench/post.lua');
const DIR = process.env.BENCH_DIR || mkdtempSync(join(tmpdir(), 'intake-bench-'));
mkdirSync(DIR, { recursive: true });
/** Every server's pid, one a line: bench/run.sh's trap kills them if this process dies first. */
const PIDS_FILE = join(DIR, 'pids');

const USER = 'bench';
const PASSWORD = 'bench-password';
const API_KEY = 'bench_0123456789abcdef0123456789abcdef';
const BASIC = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
const OK_EVENT = '{"response":{"processed":1,"cached":0,"received":1},"success":true,"message":"Processed 1 event(s)"}';
const SERIES = 100_000;
const SERIES_BATCH = 10_000;
const RENDERS = 10;
const MiB = 1024 * 1024;

function findRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'tsconfig.build.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no repository root above ${start}`);
  }
}

const log = (message: string): void => {
  process.stderr.write(`bench: ${message}\n`);
};

// ---------------------------------------------------------------------------------------------
// Servers

interface Server {
  name: string;
  child: ChildProcess;
  pid: number;
  logFile: string;
  exited: Promise<number | null>;
}

const servers: Server[] = [];

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolvePort(port));
    });
  });
}

/** Starts a server pinned to SERVER_CPU; taskset execs it, so the pid is the server's own. */
function startServer(name: string, argv: string[], stdoutFile?: string): Server {
  const logFile = join(DIR, `${name}.log`);
  const err = openSync(logFile, 'a');
  const out = stdoutFile ? openSync(stdoutFile, 'a') : err;
  const child = spawn('taskset', ['-c', SERVER_CPU, ...argv], { stdio: ['ignore', out, err] });
  if (out !== err) closeSync(out);
  closeSync(err);
  if (child.pid === undefined) throw new Error(`${name} did not start (is taskset installed?)`);
  appendFileSync(PIDS_FILE, `${child.pid}\n`);
  const exited = new Promise<number | null>((done) => child.once('exit', (code, signal) => done(code ?? (signal ? 128 : null))));
  const server = { name, child, pid: child.pid, logFile, exited };
  servers.push(server);
  return server;
}

async function stopServer(s: Server, graceMs = 10_000): Promise<void> {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  s.child.kill('SIGTERM');
  const timer = setTimeout(() => s.child.kill('SIGKILL'), graceMs);
  await s.exited;
  clearTimeout(timer);
}

function logTail(s: Server, lines = 15): string {
  try {
    return readFileSync(s.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

async function waitReady(s: Server, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (s.child.exitCode !== null || s.child.signalCode !== null) throw new Error(`${s.name} exited during start-up; its log (${s.logFile}) ends:\n${logTail(s)}`);
    try {
      if (await probe()) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${s.name} not ready after ${timeoutMs / 1000} s; its log (${s.logFile}) ends:\n${logTail(s)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function procStatusKiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}
const peakRssMiB = (s: Server): number => procStatusKiB(s.pid, 'VmHWM') / 1024;
const rssMiB = (s: Server): number => procStatusKiB(s.pid, 'VmRSS') / 1024;

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** CPU seconds (user + system) a process has used so far. */
function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/** Per-CPU jiffies from /proc/stat: busy (neither idle nor iowait) and total. */
function cpuTimes(): Map<string, { busy: number; total: number }> {
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

function cpuBusyPercent(before: Map<string, { busy: number; total: number }>, after: Map<string, { busy: number; total: number }>, cpu: string): number {
  const a = before.get(cpu);
  const b = after.get(cpu);
  if (!a || !b || b.total === a.total) return NaN;
  return ((b.busy - a.busy) / (b.total - a.total)) * 100;
}

async function request(url: string, init: RequestInit = {}, timeoutMs = 30_000): Promise<{ status: number; text: string; ms: number }> {
  const start = performance.now();
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  return { status: res.status, text, ms: performance.now() - start };
}

// ---------------------------------------------------------------------------------------------
// wrk

interface Target {
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

interface WrkRun {
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

const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

async function wrk(t: Target, seconds: number): Promise<WrkRun> {
  const args = ['-c', LOAD_CPU, 'wrk', '-t1', `-c${t.connections ?? CONNECTIONS}`, `-d${seconds}s`, '--timeout', '5s', '--latency', '-s', LUA, t.url];
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
  const serverCpu = t.server ? ((processCpuSeconds(t.server.pid) - serverBefore) / ((endUs - startUs) / 1e6)) * 100 : NaN;
  const cpuAfter = cpuTimes();
  const loadCpuBusy = cpuBusyPercent(cpuBefore, cpuAfter, LOAD_CPU);
  const serverCpuBusy = cpuBusyPercent(cpuBefore, cpuAfter, SERVER_CPU);
  appendFileSync(join(DIR, 'wrk.txt'), `### ${t.label} ${seconds}s\n${stdout}${stderr}\n`);
  t.after?.();
  const json = /^WRKJSON (\{.*\})$/m.exec(stdout)?.[1];
  if (code !== 0 || !json) throw new Error(`wrk against ${t.label} failed (exit ${code}):\n${stdout}${stderr}`);
  const r = JSON.parse(json) as Record<string, number>;
  const num = (k: string): number => r[k] as number;
  if (num('status') > 0) throw new Error(`wrk: ${num('status')} of ${num('requests')} responses from ${t.label} were not 2xx/3xx:\n${stdout}`);
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

interface Measured {
  runs: WrkRun[];
  rps: number;
  p50: number;
  p99: number;
  socketErrors: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

const summarise = (runs: WrkRun[]): Measured => ({
  runs,
  rps: median(runs.map((r) => r.rps)),
  p50: median(runs.map((r) => r.p50)),
  p99: median(runs.map((r) => r.p99)),
  socketErrors: runs.reduce((n, r) => n + r.socketErrors, 0),
});

/** Warm-up of each target, then RUNS rounds in which the targets take turns. */
async function measure(...targets: Target[]): Promise<Measured[]> {
  for (const t of targets) {
    log(`${t.label}: ${WARMUP_S} s warm-up`);
    await wrk(t, WARMUP_S);
  }
  const runs: WrkRun[][] = targets.map(() => []);
  for (let i = 0; i < RUNS; i++) {
    for (const [j, t] of targets.entries()) {
      const r = await wrk(t, DURATION_S);
      log(`${t.label}: run ${i + 1}/${RUNS}: ${r.rps.toFixed(0)} requests/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms`);
      (runs[j] as WrkRun[]).push(r);
    }
  }
  return runs.map(summarise);
}

// ---------------------------------------------------------------------------------------------
// The setup

interface Setup {
  ports: { ingest: number; admin: number; baseline: number; gateway: number; alertmanager: number };
  configFile: string;
  eventsFile: string;
  bodies: { event: string; batch: string; point: string; push: string; alert: string; notification: string; raw: string };
  alertmanagerConfig: string;
}

async function prepare(): Promise<Setup> {
  const ports = { ingest: await freePort(), admin: await freePort(), baseline: await freePort(), gateway: await freePort(), alertmanager: await freePort() };
  const configFile = join(DIR, 'intake.yaml');
  const config = {
    listen: `127.0.0.1:${ports.ingest}`,
    adminListen: `127.0.0.1:${ports.admin}`,
    logLevel: 'warn',
    limits: { pointsPerRequest: SERIES_BATCH, maxSeriesPerNamespace: 250_000, maxSeriesTotal: 250_000 },
    tenantLimits: BENCH_TENANT_LIMITS,
    // In the work dir: the default (/tmp/intake-deadletter.jsonl) would be shared with other runs.
    deadLetter: { path: join(DIR, 'deadletter.jsonl') },
    routes: [
      { apiVersion: 'intake.dev/v1alpha1', kind: 'WebhookIntegration', name: 'bench', namespace: 'bench', credentials: [{ username: USER, secret: { plain: PASSWORD } }] },
      { apiVersion: 'intake.dev/v1alpha1', kind: 'ApiKey', name: 'bench', namespace: 'bench', credentials: [{ username: USER, secret: { plain: API_KEY } }] },
      ...MAPPED_ROUTES,
    ],
  };
  writeFileSync(configFile, `# written by bench/ingest.ts\n${stringify(config)}`);
  const event = { source: 'web-01.example.com', severity: 'critical', class: 'cpu', type: 'high', description: 'CPU above 95% for 5 minutes' };
  const batch = Array.from({ length: 100 }, (_, i) => ({ ...event, source: `web-${String(i).padStart(2, '0')}.example.com`, severity: i % 6 }));
  const bodies = {
    event: join(DIR, 'event.json'),
    batch: join(DIR, 'batch.json'),
    point: join(DIR, 'point.json'),
    push: join(DIR, 'push.txt'),
    alert: join(DIR, 'alert.json'),
    notification: join(DIR, 'alertmanager-notification.json'),
    raw: join(DIR, 'raw-event.json'),
  };
  writeFileSync(bodies.event, JSON.stringify(event));
  writeFileSync(bodies.batch, JSON.stringify(batch));
  writeFileSync(bodies.point, JSON.stringify({ metric: 'cpu.load', data: 0.75, source: 'web-01', tags: { env: 'prod' } }));
  writeFileSync(bodies.push, 'cpu_load{source="web-01",env="prod"} 0.75\n');
  // The same event as an Alertmanager alert: one alert per request, as the webhook sends one event.
  const alert = { labels: { alertname: 'cpu_high', instance: event.source, severity: event.severity, class: event.class }, annotations: { description: event.description } };
  writeFileSync(bodies.alert, JSON.stringify([alert]));
  writeFileSync(bodies.notification, alertmanagerNotification(NOTIFICATION_ALERTS));
  // The same event in a tool's own shape, which the custom mapping turns into the event above.
  writeFileSync(bodies.raw, JSON.stringify({ host: event.source, level: event.severity, msg: event.description }));
  // Every alert goes to a receiver without integrations: Alertmanager keeps it and notifies nobody.
  const alertmanagerConfig = join(DIR, 'alertmanager.yml');
  writeFileSync(alertmanagerConfig, stringify({ route: { receiver: 'null' }, receivers: [{ name: 'null' }] }));
  return { ports, configFile, eventsFile: join(DIR, 'events.jsonl'), bodies, alertmanagerConfig };
}

// Data mapping: Alertmanager notifications through the preset, and a small custom mapping.
const NOTIFICATION_ALERTS = 100;
const mappedRoute = (name: string, mapping: Record<string, string>) => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace: 'bench',
  credentials: [{ username: USER, secret: { plain: PASSWORD } }],
  mapping,
});
const MAPPED_ROUTES = [
  mappedRoute('bench-am', { preset: 'alertmanager' }),
  mappedRoute('bench-mapped', { expression: '{"source": host, "severity": level, "class": "cpu", "type": "high", "description": msg}' }),
];

/** An Alertmanager webhook_config notification (version 4) of one group: one alert in ten resolved. */
function alertmanagerNotification(alerts: number): string {
  const startsAt = new Date().toISOString();
  return JSON.stringify({
    receiver: 'intake',
    status: 'firing',
    version: '4',
    groupKey: '{}:{alertname="HighCPU"}',
    externalURL: 'http://alertmanager:9093',
    truncatedAlerts: 0,
    groupLabels: { alertname: 'HighCPU' },
    commonLabels: { alertname: 'HighCPU', job: 'node' },
    commonAnnotations: {},
    alerts: Array.from({ length: alerts }, (_, i) => ({
      status: i % 10 === 0 ? 'resolved' : 'firing',
      labels: { alertname: 'HighCPU', job: 'node', instance: `web-${i}:9100`, severity: i % 2 ? 'warning' : 'critical' },
      annotations: { summary: `CPU high on web-${i}` },
      startsAt,
      endsAt: i % 10 === 0 ? startsAt : '0001-01-01T00:00:00Z',
      generatorURL: 'http://prometheus:9090/graph',
      fingerprint: (0x1000000000000000 + i).toString(16),
    })),
  });
}

/**
 * The Node flags the image runs the ingester with (the Dockerfile's NODE_OPTIONS), so the benchmark
 * measures the process as deployed. BENCH_NODE_OPTIONS replaces them (e.g. "" to compare).
 */
function deployedNodeFlags(): string[] {
  const fromEnv = process.env.BENCH_NODE_OPTIONS;
  const flags = fromEnv ?? /^ENV NODE_OPTIONS=(.*)$/m.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))?.[1] ?? '';
  return flags.split(/\s+/).filter(Boolean);
}

/** The second ingester of BENCH_COMPARE_NODE_OPTIONS: same config, its own ports and event file. */
async function startComparedIngester(s: Setup, flags: string[]): Promise<{ server: Server; target: Target }> {
  const [ingest, admin] = [await freePort(), await freePort()];
  const eventsFile = join(DIR, 'events-compared.jsonl');
  const argv = [process.execPath, ...flags, join(ROOT, 'dist/cmd/intake.js'), 'ingester', '--config', s.configFile, '--listen', `127.0.0.1:${ingest}`, '--admin-listen', `127.0.0.1:${admin}`];
  const server = startServer('ingester-compared', argv, eventsFile);
  await waitReady(server, async () => (await request(`http://127.0.0.1:${admin}/readyz`, {}, 1000)).status === 200);
  const target: Target = {
    label: `ingester (node flags: ${flags.join(' ') || 'none'}) single event`,
    url: `http://127.0.0.1:${ingest}/events/webhook_bench`,
    bodyFile: s.bodies.event,
    headers: { authorization: BASIC },
    after: () => truncateSync(eventsFile, 0),
    server,
  };
  return { server, target };
}

async function startIngester(s: Setup, nodeArgs: string[] = []): Promise<Server> {
  const server = startServer('ingester', [process.execPath, ...deployedNodeFlags(), ...nodeArgs, join(ROOT, 'dist/cmd/intake.js'), 'ingester', '--config', s.configFile], s.eventsFile);
  await waitReady(server, async () => (await request(`http://127.0.0.1:${s.ports.admin}/readyz`, {}, 1000)).status === 200);
  return server;
}

/** One request of each kind before measuring: a benchmark of wrong answers measures nothing. */
async function checkIngester(s: Setup): Promise<void> {
  const before = existsSync(s.eventsFile) ? statSync(s.eventsFile).size : 0;
  const ev = await request(`http://127.0.0.1:${s.ports.ingest}/events/webhook_bench`, { method: 'POST', headers: { authorization: BASIC, 'content-type': 'application/json' }, body: readFileSync(s.bodies.event) });
  if (ev.status !== 200 || ev.text !== OK_EVENT) throw new Error(`ingester answered the single event with ${ev.status} ${ev.text}`);
  const after = statSync(s.eventsFile).size;
  const line = readFileSync(s.eventsFile, 'utf8').slice(before);
  if (after <= before || !line.includes('"integration":"bench"')) throw new Error(`the event did not reach ${s.eventsFile} (stdout)`);
  const pt = await request(`http://127.0.0.1:${s.ports.ingest}/v1/integrations/metrics`, { method: 'POST', headers: { apikey: API_KEY, 'content-type': 'application/json' }, body: readFileSync(s.bodies.point) });
  if (pt.status !== 200) throw new Error(`ingester answered the metric point with ${pt.status} ${pt.text}`);
}

/**
 * One request to each mapped route: the mapping must turn it into events, and the events per
 * notification that the events/s column counts are the ones the ingester says it processed.
 */
async function checkMapping(s: Setup): Promise<{ eventsPerNotification: number }> {
  const post = (name: string, body: string) =>
    request(`http://127.0.0.1:${s.ports.ingest}/events/webhook_${name}`, { method: 'POST', headers: { authorization: BASIC, 'content-type': 'application/json' }, body: readFileSync(body) });
  const am = await post('bench-am', s.bodies.notification);
  const processed = am.status === 200 ? (JSON.parse(am.text) as { response?: { processed?: number } }).response?.processed : undefined;
  if (processed !== NOTIFICATION_ALERTS) throw new Error(`ingester answered the Alertmanager notification (preset alertmanager) with ${am.status} ${am.text}`);
  const mapped = await post('bench-mapped', s.bodies.raw);
  if (mapped.status !== 200 || mapped.text !== OK_EVENT) throw new Error(`ingester answered the event for the custom mapping with ${mapped.status} ${mapped.text}`);
  const line = readFileSync(s.eventsFile, 'utf8').trimEnd().split('\n').pop() ?? '';
  if (!line.includes('"integration":"bench-mapped"') || !line.includes('"description":"CPU above 95% for 5 minutes"')) throw new Error(`the mapped event did not reach ${s.eventsFile} as mapped: ${line.slice(0, 300)}`);
  return { eventsPerNotification: processed };
}

function machine(): string {
  const model = /^model name\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpus()[0]?.model ?? 'unknown';
  // This script runs pinned to one CPU, where nproc would say 1: run.sh passes the machine's.
  const nproc = process.env.BENCH_NPROC || String(cpus().length);
  return `${nproc} cores (${model}), node ${process.version}`;
}

function alertmanagerVersion(): string {
  const r = spawnSync('prometheus-alertmanager', ['--version'], { encoding: 'utf8', timeout: 5000 });
  return /version (\S+)/.exec(`${r.stdout}${r.stderr}`)?.[1] ?? 'unknown';
}

async function startAlertmanager(s: Setup): Promise<Server> {
  const storage = join(DIR, 'alertmanager-data');
  mkdirSync(storage, { recursive: true });
  const server = startServer('alertmanager', [
    'prometheus-alertmanager',
    `--config.file=${s.alertmanagerConfig}`,
    `--storage.path=${storage}`,
    `--web.listen-address=127.0.0.1:${s.ports.alertmanager}`,
    // An empty address turns off the gossip cluster (which would otherwise listen on all interfaces).
    '--cluster.listen-address=',
    '--log.level=warn',
  ]);
  await waitReady(server, async () => (await request(`http://127.0.0.1:${s.ports.alertmanager}/-/ready`, {}, 1000)).status === 200);
  const post = await request(`http://127.0.0.1:${s.ports.alertmanager}/api/v2/alerts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: readFileSync(s.bodies.alert) });
  if (post.status !== 200) throw new Error(`alertmanager answered the alert with ${post.status} ${post.text}`);
  const held = await request(`http://127.0.0.1:${s.ports.alertmanager}/api/v2/alerts`);
  if (!held.text.includes('"alertname":"cpu_high"')) throw new Error(`alertmanager does not hold the posted alert: ${held.text.slice(0, 300)}`);
  return server;
}

function pushgatewayVersion(): string {
  const r = spawnSync('prometheus-pushgateway', ['--version'], { encoding: 'utf8', timeout: 5000 });
  return /version (\S+)/.exec(`${r.stdout}${r.stderr}`)?.[1] ?? 'unknown';
}

// ---------------------------------------------------------------------------------------------
// Scenarios

interface SeriesResult {
  createMs: number;
  renderMs: number;
  renderMin: number;
  renderMax: number;
  bytes: number;
  lines: number;
  rssAfter: number;
  peakRss: number;
}

async function seriesScenario(s: Setup, ingester: Server): Promise<SeriesResult> {
  const url = `http://127.0.0.1:${s.ports.ingest}/v1/integrations/metrics`;
  let createMs = 0;
  for (let b = 0; b < SERIES / SERIES_BATCH; b++) {
    const points = Array.from({ length: SERIES_BATCH }, (_, i) => ({ metric: 'bench_series', data: i, source: 'bench-host', tags: { i: String(b * SERIES_BATCH + i) } }));
    const r = await request(url, { method: 'POST', headers: { apikey: API_KEY, 'content-type': 'application/json' }, body: JSON.stringify(points) });
    if (r.status !== 200) throw new Error(`series batch ${b}: ${r.status} ${r.text.slice(0, 300)}`);
    createMs += r.ms;
  }
  const times: number[] = [];
  let bytes = 0;
  let lines = 0;
  for (let i = 0; i < RENDERS; i++) {
    const r = await request(`http://127.0.0.1:${s.ports.admin}/metrics/ingested`);
    if (r.status !== 200) throw new Error(`/metrics/ingested: ${r.status}`);
    times.push(r.ms);
    bytes = Buffer.byteLength(r.text);
    lines = r.text.split('\n').filter((l) => l.startsWith('bench_series{')).length;
  }
  if (lines !== SERIES) throw new Error(`/metrics/ingested holds ${lines} bench_series samples, expected ${SERIES}`);
  log(`series: renders ${times.map((t) => t.toFixed(0)).join(', ')} ms`);
  return { createMs, renderMs: median(times), renderMin: Math.min(...times), renderMax: Math.max(...times), bytes, lines, rssAfter: rssMiB(ingester), peakRss: peakRssMiB(ingester) };
}

function targets(s: Setup, on: { ingester?: Server; baseline?: Server; gateway?: Server; alertmanager?: Server }) {
  const emptyEvents = (): void => {
    if (existsSync(s.eventsFile)) truncateSync(s.eventsFile, 0);
  };
  const ingestEvents: Target = {
    label: 'ingester single event',
    url: `http://127.0.0.1:${s.ports.ingest}/events/webhook_bench`,
    bodyFile: s.bodies.event,
    headers: { authorization: BASIC },
    after: emptyEvents,
    ...(on.ingester ? { server: on.ingester } : {}),
  };
  const single: Target = ingestEvents;
  const baseline: Target = { label: 'node:http baseline single event', url: `http://127.0.0.1:${s.ports.baseline}/`, bodyFile: s.bodies.event, headers: { authorization: BASIC }, ...(on.baseline ? { server: on.baseline } : {}) };
  const batch: Target = { ...ingestEvents, label: 'ingester 100-event batch', bodyFile: s.bodies.batch };
  const metric: Target = {
    label: 'ingester single metric point',
    url: `http://127.0.0.1:${s.ports.ingest}/v1/integrations/metrics`,
    bodyFile: s.bodies.point,
    headers: { apiKey: API_KEY },
    ...(on.ingester ? { server: on.ingester } : {}),
  };
  const push: Target = {
    label: 'pushgateway single push',
    url: `http://127.0.0.1:${s.ports.gateway}/metrics/job/bench`,
    bodyFile: s.bodies.push,
    headers: { contentType: 'text/plain; version=0.0.4' },
    ...(on.gateway ? { server: on.gateway } : {}),
  };
  const alert: Target = {
    label: 'alertmanager single alert',
    url: `http://127.0.0.1:${s.ports.alertmanager}/api/v2/alerts`,
    bodyFile: s.bodies.alert,
    headers: {},
    ...(on.alertmanager ? { server: on.alertmanager } : {}),
  };
  const notification: Target = {
    ...ingestEvents,
    label: `ingester Alertmanager notification (${NOTIFICATION_ALERTS} alerts, preset alertmanager)`,
    url: `http://127.0.0.1:${s.ports.ingest}/events/webhook_bench-am`,
    bodyFile: s.bodies.notification,
    connections: NOTIFICATION_CONNECTIONS,
  };
  const mapped: Target = { ...ingestEvents, label: 'ingester single event, custom mapping', url: `http://127.0.0.1:${s.ports.ingest}/events/webhook_bench-mapped`, bodyFile: s.bodies.raw };
  return { single, baseline, batch, metric, push, alert, notification, mapped };
}

// ---------------------------------------------------------------------------------------------
// Output

type Row = string[];

function table(header: Row, rows: Row[], markdown: boolean, rightFrom = 2): string {
  if (markdown) {
    const align = header.map((_, i) => (i >= rightFrom ? '---:' : '---'));
    return [header, align, ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: Row): string => r.map((c, i) => (i >= rightFrom ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number))).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

const f = (n: number | undefined, digits = 0): string => (n !== undefined && Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a');
const verdict = (ok: boolean | undefined): string => (ok === undefined ? 'n/a' : ok ? 'PASS' : 'MISS');

async function benchmark(): Promise<void> {
  const s = await prepare();
  const hasGateway = process.env.BENCH_NO_PUSHGATEWAY !== '1' && spawnSync('sh', ['-c', 'command -v prometheus-pushgateway'], { stdio: 'ignore' }).status === 0;
  log(`work dir ${DIR}; ${machine()}; ingester node flags: ${deployedNodeFlags().join(' ') || '(none)'}`);
  if (!hasGateway) log('running without the Prometheus Pushgateway: the metric-push comparison is skipped');
  const hasAlertmanager = process.env.BENCH_NO_ALERTMANAGER !== '1' && spawnSync('sh', ['-c', 'command -v prometheus-alertmanager'], { stdio: 'ignore' }).status === 0;
  if (!hasAlertmanager) log('running without Prometheus Alertmanager: the single-alert comparison is skipped');

  let ingester = await startIngester(s);
  const baseline = startServer('baseline', [process.execPath, join(ROOT, 'dist/bench/baseline.js'), String(s.ports.baseline), USER, PASSWORD]);
  await waitReady(baseline, async () => (await request(`http://127.0.0.1:${s.ports.baseline}/`, { method: 'POST', body: '{}' }, 1000)).status === 401);
  const base = await request(`http://127.0.0.1:${s.ports.baseline}/`, { method: 'POST', headers: { authorization: BASIC }, body: readFileSync(s.bodies.event) });
  if (base.status !== 200 || base.text !== OK_EVENT) throw new Error(`baseline answered ${base.status} ${base.text}`);
  let gateway: Server | undefined;
  if (hasGateway) {
    // --persistence.file= (empty): no persistence; Debian's default would write under /var/lib.
    gateway = startServer('pushgateway', ['prometheus-pushgateway', `--web.listen-address=127.0.0.1:${s.ports.gateway}`, '--persistence.file=', '--log.level=warn']);
    await waitReady(gateway, async () => (await request(`http://127.0.0.1:${s.ports.gateway}/-/ready`, {}, 1000)).status === 200);
    const push = await request(`http://127.0.0.1:${s.ports.gateway}/metrics/job/bench`, { method: 'POST', headers: { 'content-type': 'text/plain; version=0.0.4' }, body: readFileSync(s.bodies.push) });
    if (push.status !== 200) throw new Error(`pushgateway answered the push with ${push.status} ${push.text}`);
  }
  const alertmanager = hasAlertmanager ? await startAlertmanager(s) : undefined;
  await checkIngester(s);
  const t = targets(s, { ingester, baseline, ...(gateway ? { gateway } : {}), ...(alertmanager ? { alertmanager } : {}) });

  const compareFlags = process.env.BENCH_COMPARE_NODE_OPTIONS?.split(/\s+/).filter(Boolean);
  const compared = compareFlags ? await startComparedIngester(s, compareFlags) : undefined;
  const singleTargets = [t.single, t.baseline, ...(alertmanager ? [t.alert] : []), ...(compared ? [compared.target] : [])];
  const singleResults = await measure(...singleTargets);
  const [single, baseSingle] = singleResults as [Measured, Measured];
  const alerts = alertmanager ? singleResults[2] : undefined;
  const comparedSingle = compared ? singleResults[singleResults.length - 1] : undefined;
  const rssAfterSingle = {
    ingester: peakRssMiB(ingester),
    baseline: peakRssMiB(baseline),
    alertmanager: alertmanager ? peakRssMiB(alertmanager) : NaN,
    compared: compared ? peakRssMiB(compared.server) : NaN,
  };
  if (compared) await stopServer(compared.server);
  // Alertmanager is only the single-event peer: stop it so it takes nothing from later scenarios.
  if (alertmanager) await stopServer(alertmanager);
  const [batch] = (await measure(t.batch)) as [Measured];
  const rssAfterBatch = peakRssMiB(ingester);
  const [metric, push] = (gateway ? await measure(t.metric, t.push) : await measure(t.metric)) as [Measured, Measured | undefined];
  const rssAfterMetric = { ingester: peakRssMiB(ingester), gateway: gateway ? peakRssMiB(gateway) : NaN };
  // Data mapping, on the same ingester: notifications through the preset, then the custom mapping
  // against unmapped single events, alternately.
  const { eventsPerNotification } = await checkMapping(s);
  const [notification] = (await measure(t.notification)) as [Measured];
  const rssAfterNotification = peakRssMiB(ingester);
  const [unmapped, mapped] = (await measure(t.single, t.mapped)) as [Measured, Measured];
  const rssAfterMapped = peakRssMiB(ingester);

  // A fresh ingester for the series: its RSS is then the cost of 100,000 series, not of the load
  // scenarios' heap growth (which the peak RSS column above shows).
  log('series: restarting the ingester');
  await stopServer(ingester);
  ingester = await startIngester(s);
  const series = await seriesScenario(s, ingester);

  // ---- tables
  const header = ['scenario', 'server', 'requests/s', 'events or points/s', 'p50 ms', 'p99 ms', 'peak RSS MiB'];
  const row = (scenario: string, server: string, m: Measured | undefined, perRequest: number, rss: number): Row => [
    scenario,
    server,
    f(m?.rps),
    f(m ? m.rps * perRequest : undefined),
    f(m?.p50, 2),
    f(m?.p99, 2),
    f(rss),
  ];
  const rows: Row[] = [
    row('single event (webhook)', 'ingester', single, 1, rssAfterSingle.ingester),
    row('single event (webhook)', 'node:http baseline', baseSingle, 1, rssAfterSingle.baseline),
    ...(comparedSingle ? [row('single event (webhook)', `ingester, node flags: ${compareFlags?.join(' ') || 'none'}`, comparedSingle, 1, rssAfterSingle.compared)] : []),
    alerts ? row('single alert (POST /api/v2/alerts)', `Alertmanager ${alertmanagerVersion()}`, alerts, 1, rssAfterSingle.alertmanager) : ['single alert', 'Alertmanager (not run)', 'n/a', 'n/a', 'n/a', 'n/a', 'n/a'],
    row('100-event batch (webhook)', 'ingester', batch, 100, rssAfterBatch),
    row('single metric point', 'ingester', metric, 1, rssAfterMetric.ingester),
    gateway ? row('single metric push', `Pushgateway ${pushgatewayVersion()}`, push, 1, rssAfterMetric.gateway) : ['single metric push', 'Pushgateway (not run)', 'n/a', 'n/a', 'n/a', 'n/a', 'n/a'],
    row(`Alertmanager notification, ${NOTIFICATION_ALERTS} alerts (preset alertmanager, wrk -c${NOTIFICATION_CONNECTIONS})`, 'ingester', notification, eventsPerNotification, rssAfterNotification),
    row('single event, unmapped (paired with the next row)', 'ingester', unmapped, 1, rssAfterMapped),
    row('single event, small custom JSONata mapping', 'ingester', mapped, 1, rssAfterMapped),
  ];
  const runsHeader = [
    'scenario',
    'server',
    'requests/s, each run',
    'p99 ms, each run',
    'server CPU %',
    `CPU ${SERVER_CPU} used by others %`,
    `CPU ${LOAD_CPU} (wrk) busy %`,
    'requests per server CPU-second',
    'socket errors',
  ];
  const each = (m: Measured, pick: (r: WrkRun) => number, digits = 0): string => m.runs.map((r) => f(pick(r), digits)).join(' / ');
  const runsRow = (scenario: string, server: string, m: Measured): Row => [
    scenario,
    server,
    each(m, (r) => r.rps),
    each(m, (r) => r.p99, 2),
    each(m, (r) => r.serverCpu),
    each(m, (r) => Math.max(0, r.serverCpuBusy - r.serverCpu)),
    each(m, (r) => r.loadCpuBusy),
    each(m, (r) => r.rps / (r.serverCpu / 100)),
    f(m.socketErrors),
  ];
  const runRows: Row[] = [
    runsRow('single event', 'ingester', single),
    runsRow('single event', 'node:http baseline', baseSingle),
    ...(alerts ? [runsRow('single alert', 'Alertmanager', alerts)] : []),
    ...(comparedSingle ? [runsRow('single event', `ingester, node flags: ${compareFlags?.join(' ') || 'none'}`, comparedSingle)] : []),
    runsRow('100-event batch', 'ingester', batch),
    runsRow('single metric point', 'ingester', metric),
    ...(push ? [runsRow('single metric push', 'Pushgateway', push)] : []),
    runsRow(`Alertmanager notification (${NOTIFICATION_ALERTS} alerts)`, 'ingester, preset alertmanager', notification),
    runsRow('single event, unmapped', 'ingester', unmapped),
    runsRow('single event, custom mapping', 'ingester', mapped),
  ];
  // Ratios within each round (the two runs of a round are back to back): how steady the ratio is.
  const roundRatios = (a: Measured, b: Measured, pick: (r: WrkRun) => number, digits: number, suffix: string): string =>
    a.runs.map((r, i) => f((pick(r) / pick(b.runs[i] as WrkRun)) * (suffix === '%' ? 100 : 1), digits) + suffix).join(' / ');
  const perCpu = (r: WrkRun): number => r.rps / (r.serverCpu / 100);
  const pairRows: Row[] = [
    ['single event: ingester / baseline requests/s', roundRatios(single, baseSingle, (r) => r.rps, 1, '%')],
    ['single event: ingester / baseline requests per server CPU-second', roundRatios(single, baseSingle, perCpu, 1, '%')],
    ['single event: ingester p99 / baseline p99', roundRatios(single, baseSingle, (r) => r.p99, 2, 'x')],
    ...(alerts
      ? [
          ['single event: ingester / Alertmanager requests/s', roundRatios(single, alerts, (r) => r.rps, 2, 'x')],
          ['single event: ingester / Alertmanager requests per server CPU-second', roundRatios(single, alerts, perCpu, 2, 'x')],
        ]
      : []),
    ...(comparedSingle
      ? [
          [`single event: ingester / ingester with node flags "${compareFlags?.join(' ') ?? ''}" requests/s`, roundRatios(single, comparedSingle, (r) => r.rps, 2, 'x')],
          [`single event: ingester / ingester with node flags "${compareFlags?.join(' ') ?? ''}" requests per server CPU-second`, roundRatios(single, comparedSingle, perCpu, 2, 'x')],
        ]
      : []),
    ...(push ? [['metric: ingester / Pushgateway requests/s', roundRatios(metric, push, (r) => r.rps, 2, 'x')]] : []),
    ['single event: custom mapping / unmapped requests/s', roundRatios(mapped, unmapped, (r) => r.rps, 1, '%')],
    ['single event: custom mapping / unmapped requests per server CPU-second', roundRatios(mapped, unmapped, perCpu, 1, '%')],
  ];
  const all = [...singleResults, batch, metric, ...(push ? [push] : []), notification, unmapped, mapped].flatMap((m) => m.runs);
  const stolen = Math.max(...all.map((r) => r.serverCpuBusy - r.serverCpu));
  const noise =
    stolen > 10
      ? `Noise: in at least one run other processes used ${f(stolen)}% of CPU ${SERVER_CPU}, the server's core; those runs understate the server. ` +
        'Requests per server CPU-second (below) is the steadier measure of cost per core.'
      : `Noise: other processes used at most ${f(Math.max(0, stolen))}% of CPU ${SERVER_CPU} in any run.`;
  const seriesHeader = ['100,000 active series (fresh ingester)', 'value'];
  const seriesRows: Row[] = [
    ['create: 10 POSTs of 10,000 distinct points', `${f(series.createMs)} ms (${f((SERIES / series.createMs) * 1000)} points/s)`],
    [`GET /metrics/ingested, median of ${RENDERS}`, `${f(series.renderMs, 1)} ms (min ${f(series.renderMin, 1)}, max ${f(series.renderMax, 1)})`],
    ['response size', `${f(series.bytes)} bytes (${f(series.bytes / MiB, 1)} MiB), ${f(series.lines)} samples`],
    ['ingester RSS after the renders', `${f(series.rssAfter)} MiB`],
    ['ingester peak RSS (VmHWM)', `${f(series.peakRss)} MiB`],
  ];
  const targetHeader = ['target', 'measured', 'wanted', 'verdict'];
  const eventsPerSecond = batch.rps * 100;
  const targetRows: Row[] = [
    ['single event: ingester / baseline requests/s', `${f((single.rps / baseSingle.rps) * 100, 1)}%`, '>= 80%', verdict(single.rps >= 0.8 * baseSingle.rps)],
    ['single event: ingester p99 / baseline p99', `${f(single.p99 / baseSingle.p99, 2)}x`, '<= 2x', verdict(single.p99 <= 2 * baseSingle.p99)],
    ['single event: ingester / Alertmanager requests/s', alerts ? `${f(single.rps / alerts.rps, 2)}x` : 'n/a (no Alertmanager)', '>= 1.0x', alerts ? verdict(single.rps >= alerts.rps) : 'n/a'],
    ['single event: ingester peak RSS (VmHWM)', `${f(rssAfterSingle.ingester)} MiB`, '<= 128 MiB', verdict(rssAfterSingle.ingester <= 128)],
    ['100-event batches: events/s on one core', f(eventsPerSecond), '>= 100,000', verdict(eventsPerSecond >= 100_000)],
    ['metric points: ingester / Pushgateway requests/s', push ? `${f(metric.rps / push.rps, 2)}x` : 'n/a (no Pushgateway)', '>= 5x', push ? verdict(metric.rps >= 5 * push.rps) : 'n/a'],
    ['preset alertmanager: events/s on one core', f(notification.rps * eventsPerNotification), '>= 20,000', verdict(notification.rps * eventsPerNotification >= 20_000)],
    ['single event: custom mapping / unmapped requests/s', `${f((mapped.rps / unmapped.rps) * 100, 1)}%`, '>= 60%', verdict(mapped.rps >= 0.6 * unmapped.rps)],
    ['100,000 series: /metrics/ingested render, median', `${f(series.renderMs, 1)} ms`, '< 300 ms', verdict(series.renderMs < 300)],
    ['100,000 series: ingester RSS after', `${f(series.rssAfter)} MiB`, '< 400 MiB', verdict(series.rssAfter < 400)],
  ];

  const about =
    `Machine: ${machine()}; ingester node flags: ${deployedNodeFlags().join(' ') || '(none)'}. Servers pinned to CPU ${SERVER_CPU}, wrk (-t1 -c${CONNECTIONS}, ${DURATION_S} s runs, ${WARMUP_S} s warm-up) on CPU ${LOAD_CPU}; ` +
    `medians of ${RUNS} runs; compared servers measured alternately. Latencies are wrk's; peak RSS is VmHWM after the scenario.`;
  const render = (md: boolean): string =>
    [
      about,
      '',
      table(header, rows, md),
      '',
      table(seriesHeader, seriesRows, md, 99),
      '',
      table(targetHeader, targetRows, md, 99),
      '',
      noise,
      '',
      'Each run (in order):',
      '',
      table(runsHeader, runRows, md, 99),
      '',
      table(['ratio in each round', 'round 1 / 2 / 3 ...'], pairRows, md, 99),
    ].join('\n');
  process.stdout.write(`\n${render(false)}\n`);
  if (process.env.BENCH_OUT) {
    writeFileSync(process.env.BENCH_OUT, `${render(true)}\n`);
    log(`markdown written to ${process.env.BENCH_OUT}`);
  }
}

/**
 * BENCH_PROFILE=SCENARIO: a warm-up and one run of that scenario against a server under
 * `node --cpu-prof`; the summary counts only the samples taken during the measured run (or, for
 * series, while the series were created and rendered). SCENARIO is single, batch, metric, series,
 * alertmanager (notifications through the preset) or mapped (the custom mapping) for the ingester,
 * or baseline (bench/baseline.ts under the single-event load, for comparison).
 */

/** A warm-up, then one measured run of `target` while the server runs under --cpu-prof. */
async function loadUnderProfiler(target: Target): Promise<{ window: { startUs: number; endUs: number }; requests: number; what: string }> {
  await wrk(target, WARMUP_S);
  const r = await wrk(target, DURATION_S);
  log(`${target.label} under --cpu-prof: ${r.rps.toFixed(0)} requests/s, p99 ${r.p99.toFixed(2)} ms, server CPU ${r.serverCpu.toFixed(0)}% (profiling slows it)`);
  return { window: r, requests: r.requests, what: `${target.label}: ${f(r.rps)} requests/s under the profiler` };
}
async function profile(scenario: string): Promise<void> {
  const known = ['single', 'batch', 'metric', 'series', 'alertmanager', 'mapped', 'baseline'];
  if (!known.includes(scenario)) throw new Error(`BENCH_PROFILE must be one of ${known.join(', ')}, not ${JSON.stringify(scenario)}`);
  const s = await prepare();
  const profDir = join(DIR, 'cpuprofile');
  mkdirSync(profDir, { recursive: true });
  const prof = ['--cpu-prof', `--cpu-prof-dir=${profDir}`];
  log(`profiling under the ${scenario} scenario; work dir ${DIR}`);
  let server: Server;
  let window: { startUs: number; endUs: number };
  let what: string;
  let requests: number | undefined;
  if (scenario === 'baseline') {
    server = startServer('baseline', [process.execPath, ...prof, join(ROOT, 'dist/bench/baseline.js'), String(s.ports.baseline), USER, PASSWORD]);
    await waitReady(server, async () => (await request(`http://127.0.0.1:${s.ports.baseline}/`, { method: 'POST', body: '{}' }, 1000)).status === 401);
    ({ window, requests, what } = await loadUnderProfiler(targets(s, { baseline: server }).baseline));
  } else {
    server = await startIngester(s, prof);
    await checkIngester(s);
    if (scenario === 'series') {
      const startUs = monotonicUs();
      const r = await seriesScenario(s, server);
      window = { startUs, endUs: monotonicUs() };
      what = `100,000 series created in ${f(r.createMs)} ms, render median ${f(r.renderMs, 1)} ms under the profiler`;
    } else {
      const t = targets(s, { ingester: server });
      if (scenario === 'alertmanager' || scenario === 'mapped') await checkMapping(s);
      const byName: Record<string, Target> = { single: t.single, batch: t.batch, metric: t.metric, alertmanager: t.notification, mapped: t.mapped };
      ({ window, requests, what } = await loadUnderProfiler(byName[scenario] as Target));
    }
  }
  await stopServer(server, 30_000);
  const file = readdirSync(profDir).filter((n) => n.endsWith('.cpuprofile')).sort().pop();
  if (!file) throw new Error(`no .cpuprofile written to ${profDir}`);
  const path = join(profDir, file);
  writeFileSync(`${path}.window.json`, JSON.stringify({ startUs: window.startUs, endUs: window.endUs, requests }));
  const text = `CPU profile of the ${server.name}, ${scenario} scenario (${what}; samples of the measured run only; ${path}):\n\n${summariseFile(path, 30, window, requests)}`;
  process.stdout.write(`${text}\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `${text}\n`);
}

// ---------------------------------------------------------------------------------------------

async function stopAll(): Promise<void> {
  await Promise.all(servers.map((s) => stopServer(s, 5000)));
}

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping the servers`);
    void stopAll().finally(() => process.exit(130));
  });
}
// Last resort when this process exits any other way: nothing may outlive the benchmark.
process.on('exit', () => {
  for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
});

const started = Date.now();
(PROFILE ? profile(PROFILE) : benchmark())
  .then(
    () => log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`),
    (err: Error) => {
      log(stopping ? 'interrupted' : err.message);
      for (const s of servers) log(`${s.name} log: ${s.logFile}`);
      process.exitCode = 1;
    },
  )
  .finally(() => stopAll());

