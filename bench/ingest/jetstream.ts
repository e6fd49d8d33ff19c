/**
 * The JetStream hand-off benchmark (part of make bench). In one invocation on loopback: a real
 * nats-server with JetStream (.tools/bin/nats-server) and two built ingesters, one with the log
 * sink (to a file) and one with the JetStream sink and a spool. The ingesters run on CPU 0; wrk
 * and nats-server share CPU 1 (the bus is another machine in production, so it does not take the
 * ingester's core). Every request carries a unique Idempotency-Key, so every event is a new
 * message (a repeated body would only exercise the duplicate check). A third ingester's bus is down
 * (its JetStream URL is a loopback port nothing listens on): every event it answers was spooled
 * and flushed to its disk first, what senders get during a bus outage.
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
  BENCH_EVENT,
} from '../support/processes.js';

const DURATION = process.env.BENCH_DURATION ?? '10s';
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const RUNS = 3;
/**
 * BENCH_JETSTREAM_PROFILE=1: only the 100-event batches, the JetStream ingester under --cpu-prof,
 * then its profile; BENCH_JETSTREAM_PROFILE=single: the same for single events.
 */
const PROFILE = process.env.BENCH_JETSTREAM_PROFILE;
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

const EVENT = BENCH_EVENT;

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

/** One scenario once under --cpu-prof: where a request's time goes (`events` in each body). */
async function profileBatches(natsUrl: string, batch: string, events: number): Promise<void> {
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
    `\n${events}-event requests under --cpu-prof: ${r.rps.toFixed(0)} requests/s (${(r.rps * events).toFixed(0)} events/s)\n\n` +
      (prof ? summariseFile(join(profDir, prof), 40, window, requests) : 'no profile written') +
      '\n',
  );
}

async function main(): Promise<void> {
  const { url: natsUrl, child: nats } = await startNatsServer(dir);
  if (PROFILE === '1') return profileBatches(natsUrl, BATCH, 100);
  if (PROFILE === 'single') return profileBatches(natsUrl, EVENT, 1);
  const log = await ingester('log', { log: { path: join(dir, 'events.log') } });
  const js = await ingester('jetstream', { jetstream: { url: natsUrl } }, { spool: { path: join(dir, 'spool') } });

  const event = EVENT;
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
  // The bus down: started last, measured against the log sink again (the pair alternates).
  const down = await ingester(
    'bus-down',
    { jetstream: { url: `nats://127.0.0.1:${await freePort()}` } },
    { spool: { path: join(dir, 'spool-bus-down') } },
  );
  const [spooled, singleLogAgain] = measurePair(
    [`http://127.0.0.1:${down.port}/events/webhook_bench`, luaScript('down-event', event)],
    [`http://127.0.0.1:${log.port}/events/webhook_bench`, luaScript('log-event-again', event)],
  );
  const downMetrics = await (await fetch(`http://127.0.0.1:${down.admin}/metrics`)).text();
  const spooledEvents =
    /intake_sink_events_total\{sink="jetstream",outcome="cached"\} (\d+)/.exec(downMetrics)?.[1] ?? '0';
  const metrics = await (await fetch(`http://127.0.0.1:${js.admin}/metrics`)).text();
  const cached = /intake_sink_events_total\{sink="jetstream",outcome="cached"\} (\d+)/.exec(metrics)?.[1] ?? '0';
  const rss = {
    js: peakRssMiB(js.child.pid),
    log: peakRssMiB(log.child.pid),
    down: peakRssMiB(down.child.pid),
    nats: peakRssMiB(nats.pid),
  };

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
    `| single event, bus down: every event spooled (${spooledEvents}) | JetStream (down) + spool | ${f(spooled.rps)} | ${f(spooled.rps)} | ${f(spooled.p50, 2)} | ${f(spooled.p99, 2)} | ${f(rss.down)} |`,
    `| single event, measured beside the row above | log (file) | ${f(singleLogAgain.rps)} | ${f(singleLogAgain.rps)} | ${f(singleLogAgain.p50, 2)} | ${f(singleLogAgain.p99, 2)} | ${f(rss.log)} |`,
    '',
    '| target | measured | wanted | verdict |',
    '|---|---|---|---|',
    `| single event: JetStream/log requests/s | ${f((single.rps / singleLog.rps) * 100)}% | >= 70% | ${verdict(single.rps >= 0.7 * singleLog.rps)} |`,
    `| single event: JetStream p99 | ${f(single.p99, 2)} ms | <= 20 ms | ${verdict(single.p99 <= 20)} |`,
    `| 100-event batches: events/s | ${f(batched.rps * 100)} | >= 100000 | ${verdict(batched.rps * 100 >= 100_000)} |`,
    `| single event, bus down (spooled)/log requests/s | ${f((spooled.rps / singleLogAgain.rps) * 100)}% | (reported) | |`,
  ].join('\n');
  process.stdout.write(`\n${table}\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `\n${table}\n`, { flag: 'a' });
}

runBenchmark(main);
