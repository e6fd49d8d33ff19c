/**
 * The ingester benchmark (make bench). In one invocation on loopback: the built ingester, a bare
 * node:http baseline and, when installed, the Prometheus Pushgateway, each pinned to CPU 0 with
 * wrk on CPU 1. Every scenario runs 3 times; the table quotes medians.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort, ROOT, waitFor } from '../test/integration/support/cluster.js';

const DURATION = process.env.BENCH_DURATION ?? '10s';
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const RUNS = 3;
const PASSWORD = 'bench-password';
const API_KEY = 'bench_0123456789abcdef0123456789abcdef';
const AUTH = `Basic ${Buffer.from(`bench:${PASSWORD}`).toString('base64')}`;
const dir = mkdtempSync(join(tmpdir(), 'intake-bench-'));
const children: ChildProcess[] = [];

interface WrkResult {
  rps: number;
  p50: number;
  p99: number;
}

function server(name: string, cmd: string, args: string[], out = 'ignore'): ChildProcess {
  const child = spawn('taskset', ['-c', '0', cmd, ...args], { stdio: ['ignore', out === 'ignore' ? 'ignore' : 'pipe', 'pipe'] });
  child.stderr?.on('data', () => {});
  child.on('exit', (code) => code && code !== 143 && process.stderr.write(`bench: ${name} exited with ${code}\n`));
  children.push(child);
  return child;
}

function peakRssMiB(pid: number | undefined): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** taskset's child is the server itself (exec), so its pid is the server's. */
function luaScript(name: string, body: string, headers: Record<string, string>): string {
  const path = join(dir, `${name}.lua`);
  const lines = [`wrk.method = "POST"`, `wrk.body = ${JSON.stringify(body)}`, ...Object.entries({ 'Content-Type': 'application/json', ...headers }).map(([k, v]) => `wrk.headers["${k}"] = ${JSON.stringify(v)}`)];
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

const ms = (v: string, unit: string): number => Number(v) * ({ us: 0.001, ms: 1, s: 1000 }[unit] ?? 1);

function wrk(url: string, script: string, duration = DURATION): WrkResult {
  const r = spawnSync('taskset', ['-c', '1', 'wrk', '-t1', `-c${CONNECTIONS}`, `-d${duration}`, '--latency', '-s', script, url], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}`);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1]);
  const lat = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(r.stdout);
    return m ? ms(m[1] as string, m[2] as string) : NaN;
  };
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(r.stdout)?.[1] ?? 0);
  if (non2xx > 0) throw new Error(`wrk saw ${non2xx} non-2xx responses against ${url}:\n${r.stdout}`);
  return { rps, p50: lat('50'), p99: lat('99') };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

const medianOf = (runs: WrkResult[]): WrkResult => ({ rps: median(runs.map((r) => r.rps)), p50: median(runs.map((r) => r.p50)), p99: median(runs.map((r) => r.p99)) });

/** Warm up (the JIT needs a few seconds), then RUNS measured runs. */
function measure(url: string, script: string): WrkResult {
  wrk(url, script, '5s');
  return medianOf(Array.from({ length: RUNS }, () => wrk(url, script)));
}

/** Two servers compared by ratio: runs alternate, so a noisy neighbour hits both alike. */
function measurePair(a: [string, string], b: [string, string]): [WrkResult, WrkResult] {
  wrk(...a, '5s');
  wrk(...b, '5s');
  const ra: WrkResult[] = [];
  const rb: WrkResult[] = [];
  for (let i = 0; i < RUNS; i++) {
    ra.push(wrk(...a));
    rb.push(wrk(...b));
  }
  return [medianOf(ra), medianOf(rb)];
}

async function startAll() {
  const [ingest, admin, base, gateway] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const config = {
    listen: `127.0.0.1:${ingest}`,
    adminListen: `127.0.0.1:${admin}`,
    logLevel: 'warn',
    limits: { maxSeriesPerNamespace: 250_000, maxSeriesTotal: 250_000, pointsPerRequest: 10_000 },
    sinks: { log: { path: join(dir, 'events.log') } },
    routes: [
      { apiVersion: 'intake.dev/v1alpha1', kind: 'WebhookIntegration', name: 'bench', namespace: 'bench', credentials: [{ username: 'bench', secret: { plain: PASSWORD } }] },
      { apiVersion: 'intake.dev/v1alpha1', kind: 'ApiKey', name: 'bench', namespace: 'bench', credentials: [{ username: 'bench', secret: { plain: API_KEY } }] },
      ...MAPPED_ROUTES,
    ],
  };
  writeFileSync(join(dir, 'intake.yaml'), stringify(config));
  const ingester = server('ingester', process.execPath, [join(ROOT, 'dist/cmd/intake.js'), 'ingester', '--config', join(dir, 'intake.yaml')]);
  const baseline = server('baseline', process.execPath, [join(ROOT, 'dist/bench/baseline.js'), String(base), 'bench', PASSWORD]);
  const hasGateway = spawnSync('sh', ['-c', 'command -v prometheus-pushgateway']).status === 0;
  const pushgateway = hasGateway ? server('pushgateway', 'prometheus-pushgateway', [`--web.listen-address=127.0.0.1:${gateway}`, '--log.level=error']) : undefined;
  await waitFor('ingester', async () => (await fetch(`http://127.0.0.1:${admin}/readyz`)).ok, 20_000, 100);
  await waitFor('baseline', async () => (await fetch(`http://127.0.0.1:${base}/`, { method: 'POST', body: '{}' })).status === 401, 10_000, 100);
  if (pushgateway) await waitFor('pushgateway', async () => (await fetch(`http://127.0.0.1:${gateway}/-/ready`)).ok, 10_000, 100);
  return { ingest, admin, base, gateway, ingester, baseline, pushgateway };
}

async function seriesScenario(ingest: number, admin: number) {
  for (let batch = 0; batch < 10; batch++) {
    const points = Array.from({ length: 10_000 }, (_, i) => ({ metric: 'bench_series', data: i, source: 'bench-host', tags: { i: String(batch * 10_000 + i) } }));
    const res = await fetch(`http://127.0.0.1:${ingest}/v1/integrations/metrics`, { method: 'POST', headers: { apikey: API_KEY, 'content-type': 'application/json' }, body: JSON.stringify(points) });
    if (res.status !== 200) throw new Error(`series batch ${batch}: ${res.status} ${await res.text()}`);
  }
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < 10; i++) {
    const start = performance.now();
    const text = await (await fetch(`http://127.0.0.1:${admin}/metrics/ingested`)).text();
    times.push(performance.now() - start);
    bytes = text.length;
  }
  return { renderMs: median(times), bytes };
}

// Data mapping: Alertmanager notifications through the preset, and a small custom mapping.
const benchRoute = (name: string, mapping: Record<string, string>) => ({ apiVersion: 'intake.dev/v1alpha1', kind: 'WebhookIntegration', name, namespace: 'bench', credentials: [{ username: 'bench', secret: { plain: PASSWORD } }], mapping });
const MAPPED_ROUTES = [benchRoute('bench-am', { preset: 'alertmanager' }), benchRoute('bench-mapped', { expression: '{"source": host, "severity": level, "class": "cpu", "type": "high", "description": msg}' })];

function alertmanagerNotification(alerts: number): string {
  const startsAt = new Date().toISOString();
  return JSON.stringify({
    receiver: 'intake', status: 'firing', version: '4', groupKey: '{}:{alertname="HighCPU"}', externalURL: 'http://alertmanager:9093', truncatedAlerts: 0,
    groupLabels: { alertname: 'HighCPU' }, commonLabels: { alertname: 'HighCPU', job: 'node' }, commonAnnotations: {},
    alerts: Array.from({ length: alerts }, (_, i) => ({
      status: i % 10 === 0 ? 'resolved' : 'firing', labels: { alertname: 'HighCPU', job: 'node', instance: `web-${i}:9100`, severity: i % 2 ? 'warning' : 'critical' },
      annotations: { summary: `CPU high on web-${i}` }, startsAt, endsAt: i % 10 === 0 ? startsAt : '0001-01-01T00:00:00Z', generatorURL: 'http://prometheus:9090/graph', fingerprint: (0x1000000000000000 + i).toString(16),
    })),
  });
}

function mappedScenario(ingest: number) {
  const url = (name: string) => `http://127.0.0.1:${ingest}/events/webhook_${name}`;
  const am = measure(url('bench-am'), luaScript('am100', alertmanagerNotification(100), { Authorization: AUTH }));
  const plain = JSON.stringify({ source: 'web-01.example.com', severity: 'critical', class: 'cpu', type: 'high', description: 'CPU above 95%' });
  const raw = JSON.stringify({ host: 'web-01.example.com', level: 'critical', msg: 'CPU above 95%' });
  const [unmapped, mapped] = measurePair([url('bench'), luaScript('unmapped', plain, { Authorization: AUTH })], [url('bench-mapped'), luaScript('mapped', raw, { Authorization: AUTH })]);
  return { am, unmapped, mapped };
}

async function main(): Promise<void> {
  const s = await startAll();
  const mappedOnly = process.env.BENCH_ONLY === 'mapping';
  const m = mappedScenario(s.ingest);
  const f0 = (n: number, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
  const mappingTable = [
    '| mapping scenario | requests/s | events/s | p50 ms | p99 ms |',
    '|---|---|---|---|---|',
    `| Alertmanager notification of 100 alerts, preset alertmanager | ${f0(m.am.rps)} | ${f0(m.am.rps * 100)} | ${f0(m.am.p50, 2)} | ${f0(m.am.p99, 2)} |`,
    `| single event, unmapped | ${f0(m.unmapped.rps)} | ${f0(m.unmapped.rps)} | ${f0(m.unmapped.p50, 2)} | ${f0(m.unmapped.p99, 2)} |`,
    `| single event, small custom mapping | ${f0(m.mapped.rps)} | ${f0(m.mapped.rps)} | ${f0(m.mapped.p50, 2)} | ${f0(m.mapped.p99, 2)} |`,
    '',
    '| target | measured | wanted | verdict |',
    '|---|---|---|---|',
    `| preset alertmanager: events/s on one core | ${f0(m.am.rps * 100)} | >= 20000 | ${m.am.rps * 100 >= 20_000 ? 'PASS' : 'MISS'} |`,
    `| custom mapping / unmapped single events | ${f0((m.mapped.rps / m.unmapped.rps) * 100)}% | >= 60% | ${m.mapped.rps >= 0.6 * m.unmapped.rps ? 'PASS' : 'MISS'} |`,
  ].join('\n');
  process.stdout.write(`${mappingTable}\n\n`);
  if (mappedOnly) {
    if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `${mappingTable}\n`);
    return;
  }
  const event = JSON.stringify({ source: 'web-01.example.com', severity: 'critical', class: 'cpu', type: 'high', description: 'CPU above 95%' });
  const batch = JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ source: `web-${i}`, severity: i % 6, class: 'cpu', type: 'high' })));
  const point = JSON.stringify({ metric: 'cpu.load', data: 0.75, source: 'web-01', tags: { env: 'prod' } });

  const [single, base] = measurePair(
    [`http://127.0.0.1:${s.ingest}/events/webhook_bench`, luaScript('event', event, { Authorization: AUTH })],
    [`http://127.0.0.1:${s.base}/`, luaScript('baseline', event, { Authorization: AUTH })],
  );
  const batched = measure(`http://127.0.0.1:${s.ingest}/events/webhook_bench`, luaScript('batch', batch, { Authorization: AUTH }));
  const metricTarget: [string, string] = [`http://127.0.0.1:${s.ingest}/v1/integrations/metrics`, luaScript('metric', point, { apiKey: API_KEY })];
  const gatewayBody = 'cpu_load{source="web-01",env="prod"} 0.75\n';
  const gatewayTarget: [string, string] = [`http://127.0.0.1:${s.gateway}/metrics/job/bench`, luaScript('push', gatewayBody, { 'Content-Type': 'text/plain' })];
  const [metric, push] = s.pushgateway ? measurePair(metricTarget, gatewayTarget) : [measure(...metricTarget), undefined];
  const rss = { ingester: peakRssMiB(s.ingester.pid), baseline: peakRssMiB(s.baseline.pid), pushgateway: s.pushgateway ? peakRssMiB(s.pushgateway.pid) : NaN };
  // A fresh ingester for the series scenario, so its peak RSS is the series' cost, not the load's.
  s.ingester.kill('SIGTERM');
  await new Promise((r) => s.ingester.once('exit', r));
  const fresh = server('ingester', process.execPath, [join(ROOT, 'dist/cmd/intake.js'), 'ingester', '--config', join(dir, 'intake.yaml')]);
  await waitFor('ingester restarted', async () => (await fetch(`http://127.0.0.1:${s.admin}/readyz`)).ok, 20_000, 100);
  const series = await seriesScenario(s.ingest, s.admin);
  const seriesRss = peakRssMiB(fresh.pid);

  const f = (n: number, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');
  const rows = [
    ['single event', 'ingester', f(single.rps), f(single.rps), f(single.p50, 2), f(single.p99, 2), f(rss.ingester)],
    ['single event', 'node:http baseline', f(base.rps), f(base.rps), f(base.p50, 2), f(base.p99, 2), f(rss.baseline)],
    ['100-event batch', 'ingester', f(batched.rps), f(batched.rps * 100), f(batched.p50, 2), f(batched.p99, 2), f(rss.ingester)],
    ['single metric point', 'ingester', f(metric.rps), f(metric.rps), f(metric.p50, 2), f(metric.p99, 2), f(rss.ingester)],
    ['single metric push', 'pushgateway', f(push?.rps ?? NaN), f(push?.rps ?? NaN), f(push?.p50 ?? NaN, 2), f(push?.p99 ?? NaN, 2), f(rss.pushgateway)],
  ];
  const ratios = [
    [`single event: ingester/baseline requests/s`, `${f((single.rps / base.rps) * 100)}%`, '>= 80%', verdict(single.rps >= 0.8 * base.rps)],
    [`single event: ingester/baseline p99`, `${f(single.p99 / base.p99, 2)}x`, '<= 2x', verdict(single.p99 <= 2 * base.p99)],
    [`100-event batches: events/s on one core`, f(batched.rps * 100), '>= 100000', verdict(batched.rps * 100 >= 100_000)],
    [`metric points: ingester/pushgateway`, push ? `${f(metric.rps / push.rps, 1)}x` : 'n/a (no pushgateway)', '>= 5x', push ? verdict(metric.rps >= 5 * push.rps) : 'n/a'],
    [`100,000 series: /metrics/ingested render (median of 10)`, `${f(series.renderMs)} ms (${f(series.bytes / 1048576, 1)} MiB)`, '< 300 ms', verdict(series.renderMs < 300)],
    [`100,000 series: ingester peak RSS (fresh process)`, `${f(seriesRss)} MiB`, '< 400 MiB', verdict(seriesRss < 400)],
  ];
  const table = [
    `Machine: ${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}; servers on CPU 0, wrk -t1 -c${CONNECTIONS} -d${DURATION} on CPU 1; 5 s warm-up, then the median of ${RUNS} runs (compared pairs alternate run by run).`,
    '',
    '| scenario | server | requests/s | events or points/s | p50 ms | p99 ms | peak RSS MiB |',
    '|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
    '',
    '| target | measured | wanted | verdict |',
    '|---|---|---|---|',
    ...ratios.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
  process.stdout.write(`${table}\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `${table}\n\n${mappingTable}\n`);
}

const cleanup = () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
};
process.on('exit', cleanup);
process.on('SIGINT', () => process.exit(130));
main()
  .catch((err: Error) => {
    process.stderr.write(`bench: ${err.message}\n`);
    process.exitCode = 1;
  })
  .finally(cleanup);
