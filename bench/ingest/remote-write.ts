/**
 * The remote write benchmark (make bench): the built ingester on CPU 0 forwards 1000-point
 * requests by Prometheus Remote Write to a real Prometheus on loopback (CPU 1, with wrk). It
 * quotes data points/s accepted, samples/s that landed in Prometheus end to end (its own
 * prometheus_tsdb_head_samples_appended_total, counted until intake's queue is empty), and the
 * ingester's peak RSS. One warm-up, then one measured run: Prometheus keeps what it received.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
// run.sh runs this pinned to one CPU, where availableParallelism() says 1: it passes the machine's count as BENCH_NPROC.
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../../test/support/ports.js';
import { waitFor } from '../../test/support/waiting.js';
import { startPrometheus, type Prometheus } from '../../test/e2e/support/prometheus.js';
import {
  peakRssMiB,
  runBenchmark,
  startPinnedIngester,
  BENCH_API_KEY,
  BENCH_API_KEY_ROUTE,
  BENCH_TENANT_LIMITS,
} from '../support/processes.js';

const DURATION_S = Number(process.env.BENCH_RW_SECONDS ?? 20);
const CONNECTIONS = Number(process.env.BENCH_RW_CONNECTIONS ?? 8);
const POINTS = 1000;
// Inside run.sh's work dir when run from it, so its trap removes it with the rest.
const dir = mkdtempSync(join(process.env.BENCH_DIR || tmpdir(), 'intake-bench-rw-'));
let prom: Prometheus | undefined;

async function metricValue(url: string, name: string): Promise<number> {
  const text = await (await fetch(url)).text();
  let sum = 0;
  for (const line of text.split('\n'))
    if (line.startsWith(name) && (line[name.length] === ' ' || line[name.length] === '{'))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

function wrk(
  url: string,
  script: string,
  seconds: number,
): { requests: number; non2xx: number; p50: string; p99: string } {
  const r = spawnSync(
    'taskset',
    ['-c', '1', 'wrk', '-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--latency', '-s', script, url],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}`);
  const requests = Number(/(\d+) requests in/.exec(r.stdout)?.[1] ?? 0);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(r.stdout)?.[1] ?? 0);
  const lat = (p: string) => new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(r.stdout)?.[1] ?? 'n/a';
  return { requests, non2xx, p50: lat('50'), p99: lat('99') };
}

async function main(): Promise<void> {
  prom = await startPrometheus();
  spawnSync('taskset', ['-a', '-pc', '1', String(prom.pid)]);
  const [ingest, admin] = [await freePort(), await freePort()];
  writeFileSync(
    join(dir, 'intake.yaml'),
    stringify({
      listen: `127.0.0.1:${ingest}`,
      adminListen: `127.0.0.1:${admin}`,
      logLevel: 'warn',
      limits: { maxSeriesPerNamespace: 250_000, maxSeriesTotal: 250_000 },
      tenantLimits: BENCH_TENANT_LIMITS,
      remoteWrite: { url: prom.writeUrl },
      exposition: { enabled: false },
      routes: [BENCH_API_KEY_ROUTE],
    }),
  );
  const ingester = await startPinnedIngester('ingester', join(dir, 'intake.yaml'), admin);

  // 1000 series per request, each point stamped when received: every request adds one sample to each.
  const body = JSON.stringify(
    Array.from({ length: POINTS }, (_, i) => ({ metric: 'bench.rw', data: i, source: 'bench-host', tags: { i } })),
  );
  const script = join(dir, 'rw.lua');
  writeFileSync(
    script,
    `wrk.method = "POST"\nwrk.body = ${JSON.stringify(body)}\nwrk.headers["Content-Type"] = "application/json"\nwrk.headers["apiKey"] = "${BENCH_API_KEY}"\n`,
  );
  const url = `http://127.0.0.1:${ingest}/v1/integrations/metrics`;
  const ingestMetrics = `http://127.0.0.1:${admin}/metrics`;
  const promMetrics = `${prom.url}/metrics`;
  const drained = () =>
    waitFor(
      'queue drained',
      async () => (await metricValue(ingestMetrics, 'intake_remote_write_queued_samples')) === 0,
      120_000,
      200,
    );

  wrk(url, script, 5);
  await drained();
  const appendedBefore = await metricValue(promMetrics, 'prometheus_tsdb_head_samples_appended_total');
  const droppedBefore = await metricValue(ingestMetrics, 'intake_remote_write_samples_dropped_total');
  const start = performance.now();
  const run = wrk(url, script, DURATION_S);
  await drained();
  const seconds = (performance.now() - start) / 1000;
  const landed = (await metricValue(promMetrics, 'prometheus_tsdb_head_samples_appended_total')) - appendedBefore;
  const dropped = (await metricValue(ingestMetrics, 'intake_remote_write_samples_dropped_total')) - droppedBefore;
  const rss = peakRssMiB(ingester.pid);

  const accepted = (run.requests - run.non2xx) * POINTS;
  const f = (n: number) => Math.round(n).toLocaleString('en-US');
  const table = [
    `Remote write: ${process.env.BENCH_NPROC ?? availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}; ingester on CPU 0; Prometheus ${PROM_VERSION()} and wrk -t1 -c${CONNECTIONS} -d${DURATION_S}s on CPU 1; ${POINTS}-point requests.`,
    '',
    '| measure | value | wanted | verdict |',
    '|---|---|---|---|',
    `| data points/s accepted (200) | ${f(accepted / DURATION_S)} | | |`,
    `| samples/s in Prometheus, end to end (until intake's queue was empty, ${seconds.toFixed(1)} s) | ${f(landed / seconds)} | >= 100,000 | ${landed / seconds >= 100_000 ? 'PASS' : 'MISS'} |`,
    `| requests answered non-2xx (503: queue full) | ${run.non2xx} of ${run.requests} | | |`,
    `| samples dropped by intake (same-millisecond repeats, 4xx) | ${f(dropped)} | | |`,
    `| request latency p50 / p99 | ${run.p50} / ${run.p99} | | |`,
    `| ingester peak RSS | ${rss.toFixed(0)} MiB | | |`,
  ].join('\n');
  process.stdout.write(`${table}\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `\n${table}\n`, { flag: 'a' });
}

const PROM_VERSION = (): string =>
  /version (\S+)/.exec(
    spawnSync(process.env.INTAKE_TEST_PROMETHEUS ?? '/usr/bin/prometheus', ['--version'], { encoding: 'utf8' })
      .stdout ?? '',
  )?.[1] ?? '?';

runBenchmark(main, async () => {
  await prom?.stop();
});
