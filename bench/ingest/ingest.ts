/**
 * The ingester benchmark (`make bench`, entry bench/run.sh). A benchmark, not a test: it prints what
 * it measured on this machine in this run, and PASS/MISS against the targets; it fails only when
 * something does not work (a server does not start, a request is answered other than 200).
 *
 * In one invocation, on loopback only:
 * - the built ingester (`node dist/cmd/intake.js ingester --config FILE`), config written to a temp
 *   dir, events (stdout) appended to a temp file as a container runtime would, stderr to a log;
 * - bench/ingest/baseline.ts: bare node:http doing the minimum of the same work;
 * - the Prometheus Pushgateway, when installed, as the peer for single metric pushes;
 * - Prometheus Alertmanager, when installed, as the peer for single events: `POST /api/v2/alerts`,
 *   one alert per request, routed to a receiver with no integrations (it notifies nobody), its
 *   own temp storage dir, no cluster listener.
 * Data mapping, on the same ingester: Alertmanager webhook notifications of 100 alerts
 * (one in ten resolved) through `mapping: {preset: alertmanager}`, and single events through a
 * small custom JSONata mapping measured alternately with unmapped single events; then every preset
 * on its tool's payload, native and JSONata alternately (bench/ingest/presets.ts, one short run each).
 * Servers run on CPU 0 (`taskset -c 0`), wrk (one thread) and this script on CPU 1. Each load
 * scenario gets a warm-up, then RUNS measured runs; the tables quote medians. Servers compared by
 * ratio are measured alternately, run by run, so a noisy neighbour hurts both alike.
 *
 * Environment: BENCH_DURATION (s per run, 10), BENCH_WARMUP (s, 3), BENCH_CONNECTIONS (32),
 * BENCH_RUNS (3), BENCH_PRESET_WARMUP (s, 1), BENCH_PRESET_DURATION (s, 3), BENCH_PRESET_RUNS (1),
 * BENCH_NO_PRESETS=1 (skip the presets scenario), BENCH_NO_PRESET_JSONATA=1 (its native side only), BENCH_OUT (also write the result as markdown there), BENCH_NO_PUSHGATEWAY=1
 * (run without the Pushgateway even when installed), BENCH_NO_ALERTMANAGER=1 (likewise), BENCH_DIR (work dir; default a new temp
 * dir), BENCH_NODE_OPTIONS (the ingester's Node flags; default the Dockerfile's NODE_OPTIONS),
 * the ingesters run with the image's malloc settings (the Dockerfile's `ENV MALLOC_*`) too;
 * BENCH_COMPARE_NODE_OPTIONS (when set, even empty: a second ingester with these Node flags
 * instead, measured alongside in the single-event scenario, e.g. "" for V8's defaults),
 * BENCH_COMPARE_ENTRY (another build's dist/cmd/intake.js: a second ingester of that build, with the
 * same flags, measured alongside in the single-event scenario: before and after in the same rounds),
 * BENCH_PROFILE=single|batch|metric|series|alertmanager|mapped|baseline (instead of the benchmark: one run of
 * that scenario against a server under `node --cpu-prof`, then the top functions; see profile()).
 *
 * This file drives the scenarios; settings.ts holds the knobs above and the work dir, servers.ts
 * starts and stops the servers, setup.ts writes the config and bodies and checks the answers,
 * load.ts runs wrk, report.ts prints the tables; processes.ts is what all the benchmarks share.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mainThreadProfile, summariseFile } from '../support/cpuprofile.js';
import { measure, monotonicUs, wrk, type Measured, type Target } from '../support/load.js';
import { BENCH_AUTH } from '../support/processes.js';
import { f, report, singleReport } from './report.js';
import {
  deployedEnv,
  deployedNodeFlags,
  machine,
  peakRssMiB,
  request,
  servers,
  startAlertmanager,
  startComparedIngester,
  startBaseline,
  startIngester,
  startServer,
  stopAll,
  stopServer,
  waitReady,
  type Server,
} from '../support/servers.js';
import { checkIngester, checkMapping, prepare, seriesScenario, targets } from './setup.js';
import { presetScenario } from './presets.js';
import { DIR, DURATION_S, log, NO_PRESETS, OK_EVENT, PROFILE, WARMUP_S } from '../support/settings.js';

/** BENCH_SINGLE_ONLY=1: scenario 1 alone (the ingester, the floor and Alertmanager, in turn), then its table. */
const SINGLE_ONLY = process.env.BENCH_SINGLE_ONLY === '1';
/**
 * BENCH_MAPPED_ONLY=1: the custom mapping against unmapped single events alone (alternately, medians
 * of BENCH_RUNS), then their ratio round by round; with BENCH_COMPARE_ENTRY, the same two on an
 * ingester of that build too, in the same rounds (a before and after).
 */
const MAPPED_ONLY = process.env.BENCH_MAPPED_ONLY === '1';

/** BENCH_MAPPED_ONLY=1: the custom-mapping ratio, nothing else. */
async function mappedOnly(): Promise<void> {
  const s = await prepare();
  log(`work dir ${DIR}; ${machine()}; mapped single events against unmapped ones only`);
  const ingester = await startIngester(s);
  await checkIngester(s);
  await checkMapping(s);
  const t = targets(s, { ingester });
  const compareEntry = process.env.BENCH_COMPARE_ENTRY || undefined;
  const compared = compareEntry ? await startComparedIngester(s, deployedNodeFlags(), compareEntry) : undefined;
  const pairs: Array<[string, Target, Target]> = [['this build', t.single, t.mapped]];
  if (compared) {
    const mapped = { ...compared.target, label: `${compared.target.label}, custom mapping` };
    mapped.url = compared.target.url.replace(/webhook_bench$/, 'webhook_bench-mapped');
    mapped.bodyFile = s.bodies.raw;
    pairs.push([compareEntry as string, compared.target, mapped]);
  }
  const results = await measure(...pairs.flatMap(([, single, mapped]) => [single, mapped]));
  const lines = pairs.map(([name], i) => {
    const [unmapped, mapped] = [results[2 * i], results[2 * i + 1]] as [Measured, Measured];
    const rounds = unmapped.runs.map((u, j) => `${f(((mapped.runs[j]?.rps ?? 0) / u.rps) * 100, 1)}%`).join(' / ');
    return `${name}: unmapped ${f(unmapped.rps)} requests/s, custom mapping ${f(mapped.rps)} requests/s (ingester CPU, each round: ${mapped.runs.map((w) => f(w.serverCpu)).join(' / ')}%; CPU 0 busy ${mapped.runs.map((w) => f(w.serverCpuBusy)).join(' / ')}%): ${f((mapped.rps / unmapped.rps) * 100, 1)}% of unmapped (medians; rounds ${rounds}); peak RSS ${f(peakRssMiB(i === 0 ? ingester : (compared as { server: Server }).server))} MiB`;
  });
  // Workers killed, dead or retired during the runs (a retired demoted worker counts as none).
  const metrics = await request(`http://127.0.0.1:${s.ports.admin}/metrics`, {}, 5000);
  const restarts = /^intake_mapping_worker_restarts_total(?:\{[^}]*\})? (\S+)$/m.exec(metrics.text)?.[1] ?? '0';
  lines.push(`this build's mapping workers lost (killed or dead) during the runs: ${restarts}`);
  const text = lines.join('\n');
  process.stdout.write(`${text}\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `${text}\n`);
  await stopAll();
}

async function benchmark(): Promise<void> {
  const s = await prepare();
  const hasGateway =
    process.env.BENCH_NO_PUSHGATEWAY !== '1' &&
    spawnSync('sh', ['-c', 'command -v prometheus-pushgateway'], { stdio: 'ignore' }).status === 0;
  const env = Object.entries(deployedEnv()).map(([k, v]) => `${k}=${v}`);
  log(
    `work dir ${DIR}; ${machine()}; ingester node flags: ${deployedNodeFlags().join(' ') || '(none)'}; environment: ${env.join(' ') || '(none)'}`,
  );
  if (!hasGateway) log('running without the Prometheus Pushgateway: the metric-push comparison is skipped');
  const hasAlertmanager =
    process.env.BENCH_NO_ALERTMANAGER !== '1' &&
    spawnSync('sh', ['-c', 'command -v prometheus-alertmanager'], { stdio: 'ignore' }).status === 0;
  if (!hasAlertmanager) log('running without Prometheus Alertmanager: the single-alert comparison is skipped');

  let ingester = await startIngester(s);
  const baseline = await startBaseline(s);
  const base = await request(`http://127.0.0.1:${s.ports.baseline}/`, {
    method: 'POST',
    headers: { authorization: BENCH_AUTH },
    body: readFileSync(s.bodies.event),
  });
  if (base.status !== 200 || base.text !== OK_EVENT) throw new Error(`baseline answered ${base.status} ${base.text}`);
  let gateway: Server | undefined;
  if (hasGateway) {
    // --persistence.file= (empty): no persistence; Debian's default would write under /var/lib.
    gateway = startServer('pushgateway', [
      'prometheus-pushgateway',
      `--web.listen-address=127.0.0.1:${s.ports.gateway}`,
      '--persistence.file=',
      '--log.level=warn',
    ]);
    await waitReady(
      gateway,
      async () => (await request(`http://127.0.0.1:${s.ports.gateway}/-/ready`, {}, 1000)).status === 200,
    );
    const push = await request(`http://127.0.0.1:${s.ports.gateway}/metrics/job/bench`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain; version=0.0.4' },
      body: readFileSync(s.bodies.push),
    });
    if (push.status !== 200) throw new Error(`pushgateway answered the push with ${push.status} ${push.text}`);
  }
  const alertmanager = hasAlertmanager ? await startAlertmanager(s) : undefined;
  await checkIngester(s);
  const t = targets(s, {
    ingester,
    baseline,
    ...(gateway ? { gateway } : {}),
    ...(alertmanager ? { alertmanager } : {}),
  });

  const compareEntry = process.env.BENCH_COMPARE_ENTRY || undefined;
  const compareFlags =
    process.env.BENCH_COMPARE_NODE_OPTIONS?.split(/\s+/).filter(Boolean) ??
    (compareEntry ? deployedNodeFlags() : undefined);
  const compared = compareFlags ? await startComparedIngester(s, compareFlags, compareEntry) : undefined;
  const singleTargets = [
    t.single,
    t.baseline,
    ...(alertmanager ? [t.alert] : []),
    ...(compared ? [compared.target] : []),
  ];
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
  if (SINGLE_ONLY) {
    singleReport({ single, baseSingle, alerts, compared: comparedSingle, compareEntry, rss: rssAfterSingle });
    await stopAll();
    return;
  }
  if (compared) await stopServer(compared.server);
  // Alertmanager is only the single-event peer: stop it so it takes nothing from later scenarios.
  if (alertmanager) await stopServer(alertmanager);
  const [batch] = (await measure(t.batch)) as [Measured];
  const rssAfterBatch = peakRssMiB(ingester);
  const [metric, push] = (gateway ? await measure(t.metric, t.push) : await measure(t.metric)) as [
    Measured,
    Measured | undefined,
  ];
  const rssAfterMetric = { ingester: peakRssMiB(ingester), gateway: gateway ? peakRssMiB(gateway) : NaN };
  // Data mapping, on the same ingester: notifications through the preset, then the custom mapping
  // against unmapped single events, alternately.
  const { eventsPerNotification } = await checkMapping(s);
  const [notification] = (await measure(t.notification)) as [Measured];
  const rssAfterNotification = peakRssMiB(ingester);
  const [unmapped, mapped] = (await measure(t.single, t.mapped)) as [Measured, Measured];
  const rssAfterMapped = peakRssMiB(ingester);
  // Every preset on its tool's payload, native and JSONata alternately (bench/ingest/presets.ts).
  const presets = NO_PRESETS ? undefined : await presetScenario(s, ingester);

  // A fresh ingester for the series: its RSS is then the cost of 100,000 series, not of the load
  // scenarios' heap growth (which the peak RSS column above shows).
  log('series: restarting the ingester');
  await stopServer(ingester);
  ingester = await startIngester(s);
  const series = await seriesScenario(s, ingester);

  report({
    singleResults,
    single,
    baseSingle,
    alerts,
    compareFlags,
    comparedSingle,
    rssAfterSingle,
    batch,
    rssAfterBatch,
    gateway,
    metric,
    push,
    rssAfterMetric,
    eventsPerNotification,
    notification,
    rssAfterNotification,
    unmapped,
    mapped,
    rssAfterMapped,
    presets,
    series,
  });
}

/**
 * BENCH_PROFILE=SCENARIO: a warm-up and one run of that scenario against a server under
 * `node --cpu-prof`; the summary counts only the samples taken during the measured run (or, for
 * series, while the series were created and rendered). SCENARIO is single, batch, metric, series,
 * alertmanager (notifications through the preset) or mapped (the custom mapping) for the ingester,
 * or baseline (bench/ingest/baseline.ts under the single-event load, for comparison).
 */

/** A warm-up, then one measured run of `target` while the server runs under --cpu-prof. */
async function loadUnderProfiler(
  target: Target,
): Promise<{ window: { startUs: number; endUs: number }; requests: number; what: string }> {
  await wrk(target, WARMUP_S);
  const r = await wrk(target, DURATION_S);
  log(
    `${target.label} under --cpu-prof: ${r.rps.toFixed(0)} requests/s, p99 ${r.p99.toFixed(2)} ms, server CPU ${r.serverCpu.toFixed(0)}% (profiling slows it)`,
  );
  return { window: r, requests: r.requests, what: `${target.label}: ${f(r.rps)} requests/s under the profiler` };
}
async function profile(scenario: string): Promise<void> {
  const known = ['single', 'batch', 'metric', 'series', 'alertmanager', 'mapped', 'baseline'];
  if (!known.includes(scenario))
    throw new Error(`BENCH_PROFILE must be one of ${known.join(', ')}, not ${JSON.stringify(scenario)}`);
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
    server = await startBaseline(s, prof);
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
      const byName: Record<string, Target> = {
        single: t.single,
        batch: t.batch,
        metric: t.metric,
        alertmanager: t.notification,
        mapped: t.mapped,
      };
      ({ window, requests, what } = await loadUnderProfiler(byName[scenario] as Target));
    }
  }
  await stopServer(server, 30_000);
  const file = mainThreadProfile(profDir);
  if (!file) throw new Error(`no .cpuprofile written to ${profDir}`);
  const path = join(profDir, file);
  writeFileSync(`${path}.window.json`, JSON.stringify({ startUs: window.startUs, endUs: window.endUs, requests }));
  const text = `CPU profile of the ${server.name}, ${scenario} scenario (${what}; samples of the measured run only; ${path}):\n\n${summariseFile(path, 30, window, requests)}`;
  process.stdout.write(`${text}\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `${text}\n`);
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
(PROFILE ? profile(PROFILE) : MAPPED_ONLY ? mappedOnly() : benchmark())
  .then(
    () => log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`),
    (err: Error) => {
      log(stopping ? 'interrupted' : err.message);
      for (const s of servers) log(`${s.name} log: ${s.logFile}`);
      process.exitCode = 1;
    },
  )
  .finally(() => stopAll());
