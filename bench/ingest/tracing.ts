/**
 * What OpenTelemetry tracing costs on the single-event path (part of make bench, after the
 * ingester benchmark; alone: `make bench-build && node dist/bench/ingest/tracing.js`). Single
 * events to the log sink through built ingesters on CPU 0, wrk (one thread, bench/ingest/signed.lua)
 * on CPU 1, every request with its own sampled W3C traceparent, the targets measured alternately,
 * run by run, so a loaded machine slows them alike:
 *   - off: no OTEL_* variables (the default): the SDK is not loaded, the headers are not read;
 *   - on, none sampled: OTEL_TRACES_SAMPLER=always_off: the contexts are made and carried, no span recorded;
 *   - on, sender over its share: the defaults (parentbased_always_on within 100 traces/s a
 *     replica, 10 a namespace): what a sender asking for a trace on every request costs;
 *   - on, every request sampled: always_on with no bound, every span exported (to the
 *     OpenTelemetry Collector of test/otelcol when .tools/bin/otelcol-intake is built, else to a
 *     port nobody listens on, where the spans are dropped after the export fails);
 *   - without tracing code, when BENCH_TRACING_BASE names another build's tree (a checkout of the
 *     commit before tracing, built, with node_modules): the reference for "off".
 * The cost is the ingester's own CPU time per request (user + system from /proc, over each run),
 * which a loaded machine disturbs far less than throughput; the table also gives requests/s, p99,
 * and memory: RSS once started and idle, and the peak over the runs.
 *
 *   BENCH_TRACING_DURATION  seconds per run (default 5); BENCH_TRACING_RUNS  runs per target (default 5)
 *   BENCH_TRACING_WARMUP    seconds of warm-up per target (default 2); BENCH_CONNECTIONS (32)
 *   BENCH_TRACING_BASE      another build's tree to measure as "without tracing code"
 *   BENCH_TRACING_CASES     only the targets whose names contain one of these comma-separated words
 *   BENCH_TRACING_BASE_LAST=1  measure that build last in each round rather than first
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdtempSync, truncateSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startCollector, OTELCOL, type RunningCollector } from '../../test/e2e/support/otel-collector.js';
import { ROOT } from '../../test/support/paths.js';
import { freePort } from '../../test/support/ports.js';
import { median } from '../../test/support/stats.js';
import {
  BENCH_AUTH,
  BENCH_TENANT_LIMITS,
  benchWebhook,
  imageMallocEnv,
  imageNodeFlags,
  ingesterReady,
  pinnedServer,
  procStatusKiB,
  processCpuSeconds,
  runBenchmark,
  BENCH_EVENT,
} from '../support/processes.js';

const DURATION_S = Number(process.env.BENCH_TRACING_DURATION ?? 5);
const RUNS = Number(process.env.BENCH_TRACING_RUNS ?? 5);
const WARMUP_S = Number(process.env.BENCH_TRACING_WARMUP ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
/** Distinct traceparents in the headers file, cycled through (each its own trace id). */
const TRACEPARENTS = 20_000;
const dir = mkdtempSync(join(process.env.BENCH_DIR || tmpdir(), 'intake-bench-tracing-'));
const log = (m: string): void => void process.stderr.write(`bench: ${m}\n`);

const EVENT = BENCH_EVENT;

interface Target {
  name: string;
  env: Record<string, string>;
  root?: string;
  port: number;
  admin: number;
  eventsFile: string;
  child?: ChildProcess;
  idleRssMiB?: number;
}

interface Run {
  rps: number;
  p99: number;
  cpuUs: number;
  cpuPercent: number;
}

async function start(t: Target): Promise<void> {
  writeFileSync(t.eventsFile, '');
  const configFile = join(dir, `${t.name.replace(/\W+/g, '-')}.yaml`);
  writeFileSync(
    configFile,
    stringify({
      listen: `127.0.0.1:${t.port}`,
      adminListen: `127.0.0.1:${t.admin}`,
      logLevel: 'warn',
      sinks: { log: { path: t.eventsFile } },
      tenantLimits: BENCH_TENANT_LIMITS,
      routes: [benchWebhook()],
    }),
  );
  const env = Object.entries({ ...imageMallocEnv(), ...t.env }).map(([k, v]) => `${k}=${v}`);
  const argv = [...env, process.execPath, ...imageNodeFlags(), join(t.root ?? ROOT, 'dist/cmd/intake.js')];
  t.child = pinnedServer(t.name, '0', 'env', [...argv, 'ingester', '--config', configFile]);
  await ingesterReady(t.name, t.child, t.admin, 30_000);
  await new Promise((r) => setTimeout(r, 1000));
  t.idleRssMiB = procStatusKiB(t.child.pid, 'VmRSS') / 1024;
}

async function wrk(t: Target, seconds: number, headersFile: string): Promise<Run> {
  const pid = t.child?.pid as number;
  const args = ['-c', '1', 'wrk', '-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--timeout', '5s', '--latency'];
  args.push('-s', join(ROOT, 'bench/ingest/signed.lua'), `http://127.0.0.1:${t.port}/events/webhook_bench`);
  const env = { ...process.env, WRK_BODY_FILE: join(dir, 'event.json'), WRK_HEADERS_FILE: headersFile };
  const cpuBefore = processCpuSeconds(pid);
  const child = spawn('taskset', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  const cpuSeconds = processCpuSeconds(pid) - cpuBefore;
  appendFileSync(join(dir, 'wrk.txt'), `### ${t.name} ${seconds}s\n${out}\n`);
  truncateSync(t.eventsFile, 0);
  const json = /^WRKJSON (\{.*\})$/m.exec(out)?.[1];
  if (code !== 0 || !json) throw new Error(`wrk against ${t.name} failed (exit ${code}):\n${out}`);
  const r = JSON.parse(json) as Record<string, number>;
  if ((r.status as number) > 0) throw new Error(`wrk: ${r.status} answers from ${t.name} were not 200:\n${out}`);
  return {
    rps: (r.requests as number) / ((r.duration_us as number) / 1e6),
    p99: (r.p99_us as number) / 1000,
    cpuUs: (cpuSeconds * 1e6) / (r.requests as number),
    cpuPercent: (cpuSeconds / ((r.duration_us as number) / 1e6)) * 100,
  };
}

async function main(): Promise<void> {
  writeFileSync(join(dir, 'event.json'), EVENT);
  const headersFile = join(dir, 'traced.headers');
  const lines: string[] = [];
  for (let i = 0; i < TRACEPARENTS; i++)
    lines.push(
      `Authorization: ${BENCH_AUTH}\ttraceparent: 00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`,
    );
  writeFileSync(headersFile, `${lines.join('\n')}\n`);

  let collector: RunningCollector | undefined;
  if (existsSync(OTELCOL)) collector = await startCollector();
  else log(`${OTELCOL} is missing (make tools builds it): spans are exported to a closed port and dropped`);
  const endpoint = collector?.endpoint ?? `http://127.0.0.1:${await freePort()}`;
  const on = (extra: Record<string, string>): Record<string, string> => ({
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_SERVICE_NAME: 'intake-bench',
    ...extra,
  });
  const specs: Array<Pick<Target, 'name' | 'env' | 'root'>> = [
    ...(process.env.BENCH_TRACING_BASE
      ? [{ name: 'without tracing code', env: {}, root: process.env.BENCH_TRACING_BASE }]
      : []),
    { name: 'off (default)', env: {} },
    { name: 'on, none sampled', env: on({ OTEL_TRACES_SAMPLER: 'always_off' }) },
    { name: 'on, sender over its share', env: on({}) },
    {
      name: 'on, every request sampled',
      env: on({
        OTEL_TRACES_SAMPLER: 'always_on',
        INTAKE_TRACES_PER_SECOND: '1000000',
        INTAKE_TRACES_PER_SECOND_PER_NAMESPACE: '1000000',
      }),
    },
  ];
  // The build without tracing code measured last in each round instead of first (a check on the order).
  if (process.env.BENCH_TRACING_BASE_LAST === '1' && specs[0]?.root !== undefined)
    specs.push(specs.shift() as (typeof specs)[0]);
  const only = process.env.BENCH_TRACING_CASES?.split(',').filter(Boolean);
  const targets: Target[] = [];
  for (const s of specs.filter((c) => !only || only.some((w) => c.name.includes(w))))
    targets.push({
      ...s,
      port: await freePort(),
      admin: await freePort(),
      eventsFile: join(dir, `${targets.length}.log`),
    });
  for (const t of targets) await start(t);
  const loadBefore = loadavg();
  for (const t of targets) await wrk(t, WARMUP_S, headersFile);
  const runs = new Map<Target, Run[]>(targets.map((t) => [t, []]));
  for (let i = 0; i < RUNS; i++)
    for (const t of targets) {
      const r = await wrk(t, DURATION_S, headersFile);
      log(`${t.name}: run ${i + 1}/${RUNS}: ${r.rps.toFixed(0)} requests/s, ${r.cpuUs.toFixed(1)} µs CPU a request`);
      runs.get(t)?.push(r);
    }
  const loadAfter = loadavg();
  const med = (t: Target, k: keyof Run): number => median((runs.get(t) ?? []).map((r) => r[k]));
  const reference = targets.find((t) => t.name === 'without tracing code') ?? (targets[0] as Target);
  const off = targets.find((t) => t.name === 'off (default)') ?? reference;
  const rows = targets.map((t) => {
    const cpu = med(t, 'cpuUs');
    const row = [t.name, med(t, 'rps').toFixed(0), med(t, 'p99').toFixed(2), med(t, 'cpuPercent').toFixed(0)];
    row.push(cpu.toFixed(1), (cpu / med(reference, 'cpuUs')).toFixed(3), (cpu / med(off, 'cpuUs')).toFixed(3));
    row.push((t.idleRssMiB ?? NaN).toFixed(1), (procStatusKiB(t.child?.pid, 'VmHWM') / 1024).toFixed(1));
    return `| ${row.join(' | ')} |`;
  });
  const exported = collector ? `; spans the collector received: ${collector.spans().length}` : '';
  const table = [
    `### Tracing on the single-event path (log sink, ${CONNECTIONS} connections, every request with a sampled traceparent, medians of ${RUNS} alternating ${DURATION_S} s runs${exported})`,
    '',
    `Load average (1, 5, 15 min) before: ${loadBefore.map((l) => l.toFixed(2)).join(', ')}; after: ${loadAfter.map((l) => l.toFixed(2)).join(', ')} (${cpus().length} cores).`,
    '',
    `| ingester | requests/s | p99 ms | ingester CPU % | CPU µs per request | vs ${reference.name} | vs off | RSS idle MiB | peak RSS MiB |`,
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
  process.stdout.write(`${table}\n`);
  if (process.env.BENCH_OUT) appendFileSync(process.env.BENCH_OUT, `${table}\n`);
  await collector?.stop();
}

runBenchmark(main);
