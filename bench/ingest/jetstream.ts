/**
 * The JetStream hand-off benchmark (part of make bench). In one invocation on loopback: a real
 * nats-server with JetStream (.tools/bin/nats-server) and two built ingesters, one with the log
 * sink (to a file) and one with the JetStream sink and a spool. The ingesters run on CPU 0; wrk
 * and nats-server share CPU 1 (the bus is another machine in production, so it does not take the
 * ingester's core). Every request carries a unique Idempotency-Key, so every event is a new
 * message (a repeated body would only exercise the duplicate check).
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
// run.sh runs this pinned to one CPU, where availableParallelism() says 1: it passes the machine's count as BENCH_NPROC.
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../../test/support/ports.js';
import { median } from '../../test/support/stats.js';
import { mainThreadProfile, summariseFile } from '../support/cpuprofile.js';
import { monotonicUs } from '../support/load.js';
import {
  peakRssMiB,
  benchWebhook,
  startPinnedIngester,
  runBenchmark,
  BENCH_AUTH,
  BENCH_TENANT_LIMITS,
  startNatsServer,
} from '../support/processes.js';

const DURATION = process.env.BENCH_DURATION ?? '10s';
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const RUNS = 3;
/** BENCH_JETSTREAM_PROFILE=1: only the 100-event batches, the JetStream ingester under --cpu-prof, then its profile. */
const PROFILE = process.env.BENCH_JETSTREAM_PROFILE === '1';
// Inside run.sh's work dir when run from it, so its trap removes the data (a JetStream store reached 1.2 GiB).
const dir = mkdtempSync(join(process.env.BENCH_DIR || tmpdir(), 'intake-bench-js-'));

interface WrkResult {
  rps: number;
  p50: number;
  p99: number;
}

/** A wrk script that gives every request its own Idempotency-Key. */
function luaScript(name: string, body: string): string {
  const path = join(dir, `${name}.lua`);
  writeFileSync(
    path,
    [
      `wrk.method = "POST"`,
      `wrk.body = ${JSON.stringify(body)}`,
      `wrk.headers["Content-Type"] = "application/json"`,
      `wrk.headers["Authorization"] = ${JSON.stringify(BENCH_AUTH)}`,
      `local n = 0`,
      `local run = tostring(os.time()) .. "-" .. tostring(math.random(1, 1e9))`,
      `request = function()`,
      `  n = n + 1`,
      `  wrk.headers["Idempotency-Key"] = run .. "-" .. n`,
      `  return wrk.format()`,
      `end`,
      '',
    ].join('\n'),
  );
  return path;
}

const ms = (v: string, unit: string): number => Number(v) * ({ us: 0.001, ms: 1, s: 1000 }[unit] ?? 1);

function wrk(url: string, script: string, duration = DURATION): WrkResult {
  const r = spawnSync(
    'taskset',
    ['-c', '1', 'wrk', '-t1', `-c${CONNECTIONS}`, `-d${duration}`, '--latency', '-s', script, url],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}`);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(r.stdout)?.[1] ?? 0);
  if (non2xx > 0) throw new Error(`wrk saw ${non2xx} non-2xx responses against ${url}:\n${r.stdout}`);
  const lat = (p: string): number => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(r.stdout);
    return m ? ms(m[1] as string, m[2] as string) : NaN;
  };
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1]), p50: lat('50'), p99: lat('99') };
}

const medianOf = (runs: WrkResult[]): WrkResult => ({
  rps: median(runs.map((r) => r.rps)),
  p50: median(runs.map((r) => r.p50)),
  p99: median(runs.map((r) => r.p99)),
});

const BATCH = JSON.stringify(
  Array.from({ length: 100 }, (_, i) => ({ source: `web-${i}`, severity: i % 6, class: 'cpu', type: 'high' })),
);

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

async function ingester(
  name: string,
  sinks: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  nodeFlags: string[] = [],
): Promise<{ port: number; admin: number; child: ChildProcess }> {
  const [port, admin] = [await freePort(), await freePort()];
  const config = {
    listen: `127.0.0.1:${port}`,
    adminListen: `127.0.0.1:${admin}`,
    logLevel: 'warn',
    sinks,
    ...extra,
    tenantLimits: BENCH_TENANT_LIMITS,
    routes: [benchWebhook()],
  };
  writeFileSync(join(dir, `${name}.yaml`), stringify(config));
  const child = await startPinnedIngester(name, join(dir, `${name}.yaml`), admin, { nodeFlags });
  return { port, admin, child };
}

/** The batch scenario once under --cpu-prof: where a 100-event request's time goes. */
async function profileBatches(natsUrl: string, batch: string): Promise<void> {
  const profDir = join(dir, 'cpuprofile');
  const js = await ingester('jetstream', { jetstream: { url: natsUrl } }, { spool: { path: join(dir, 'spool') } }, [
    '--max-semi-space-size=4',
    '--cpu-prof',
    `--cpu-prof-dir=${profDir}`,
  ]);
  const url = `http://127.0.0.1:${js.port}/events/webhook_bench`;
  wrk(url, luaScript('js-batch-warm', batch), '5s');
  const startUs = monotonicUs();
  const r = wrk(url, luaScript('js-batch-profiled', batch));
  const window = { startUs, endUs: monotonicUs() };
  js.child.kill('SIGTERM');
  await new Promise((resolve) => js.child.once('exit', resolve));
  const prof = mainThreadProfile(profDir);
  const requests = Math.round(r.rps * Number.parseFloat(DURATION));
  process.stdout.write(
    `\n100-event batches under --cpu-prof: ${r.rps.toFixed(0)} requests/s (${(r.rps * 100).toFixed(0)} events/s)\n\n` +
      (prof ? summariseFile(join(profDir, prof), 40, window, requests) : 'no profile written') +
      '\n',
  );
}

async function main(): Promise<void> {
  const { url: natsUrl, child: nats } = await startNatsServer(dir);
  if (PROFILE) return profileBatches(natsUrl, BATCH);
  const log = await ingester('log', { log: { path: join(dir, 'events.log') } });
  const js = await ingester('jetstream', { jetstream: { url: natsUrl } }, { spool: { path: join(dir, 'spool') } });

  const event = JSON.stringify({
    source: 'web-01.example.com',
    severity: 'critical',
    class: 'cpu',
    type: 'high',
    description: 'CPU above 95%',
  });
  const batch = BATCH;
  const [single, singleLog] = measurePair(
    [`http://127.0.0.1:${js.port}/events/webhook_bench`, luaScript('js-event', event)],
    [`http://127.0.0.1:${log.port}/events/webhook_bench`, luaScript('log-event', event)],
  );
  wrk(`http://127.0.0.1:${js.port}/events/webhook_bench`, luaScript('js-batch-warm', batch), '5s');
  const batched = medianOf(
    Array.from({ length: RUNS }, (_, i) =>
      wrk(`http://127.0.0.1:${js.port}/events/webhook_bench`, luaScript(`js-batch-${i}`, batch)),
    ),
  );
  const metrics = await (await fetch(`http://127.0.0.1:${js.admin}/metrics`)).text();
  const cached = /intake_sink_events_total\{sink="jetstream",outcome="cached"\} (\d+)/.exec(metrics)?.[1] ?? '0';
  const rss = { js: peakRssMiB(js.child.pid), log: peakRssMiB(log.child.pid), nats: peakRssMiB(nats.pid) };

  const f = (n: number, d = 0): string => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
  const verdict = (ok: boolean): string => (ok ? 'PASS' : 'MISS');
  const table = [
    `Machine: ${process.env.BENCH_NPROC ?? availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}; ingesters on CPU 0, wrk -t1 -c${CONNECTIONS} -d${DURATION} and nats-server on CPU 1; 5 s warm-up, then the median of ${RUNS} runs (the pair alternates run by run). Events spooled instead of published during the runs: ${cached}.`,
    '',
    '| scenario | hand-off | requests/s | events/s | p50 ms | p99 ms | peak RSS MiB |',
    '|---|---|---|---|---|---|---|',
    `| single event | JetStream (+ spool) | ${f(single.rps)} | ${f(single.rps)} | ${f(single.p50, 2)} | ${f(single.p99, 2)} | ${f(rss.js)} |`,
    `| single event | log (file) | ${f(singleLog.rps)} | ${f(singleLog.rps)} | ${f(singleLog.p50, 2)} | ${f(singleLog.p99, 2)} | ${f(rss.log)} |`,
    `| 100-event batch | JetStream (+ spool) | ${f(batched.rps)} | ${f(batched.rps * 100)} | ${f(batched.p50, 2)} | ${f(batched.p99, 2)} | ${f(rss.js)} |`,
    `| (the bus) | nats-server | | | | | ${f(rss.nats)} |`,
    '',
    '| target | measured | wanted | verdict |',
    '|---|---|---|---|',
    `| single event: JetStream/log requests/s | ${f((single.rps / singleLog.rps) * 100)}% | >= 70% | ${verdict(single.rps >= 0.7 * singleLog.rps)} |`,
    `| single event: JetStream p99 | ${f(single.p99, 2)} ms | <= 20 ms | ${verdict(single.p99 <= 20)} |`,
    `| 100-event batches: events/s | ${f(batched.rps * 100)} | >= 100000 | ${verdict(batched.rps * 100 >= 100_000)} |`,
  ].join('\n');
  process.stdout.write(`\n${table}\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `\n${table}\n`, { flag: 'a' });
}

runBenchmark(main);
