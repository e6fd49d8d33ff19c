/**
 * What an ingester pays per integration: a standalone config of BENCH_SCALE_INTEGRATIONS
 * WebhookIntegrations and as many ApiKeys (one sha256 credential each, over 500 namespaces),
 * started BENCH_RUNS times pinned to CPU 0 with the image's Node flags and malloc setting.
 *
 * Per run: when /healthz first answered and when /readyz did (from the spawn), whether /healthz
 * answered while the routes were loading (/readyz 503 "loading routes"), the peak RSS (VmHWM) and
 * the RSS a few seconds after ready. Then once more under the inspector with no routes and with
 * all of them: the V8 heap after a full GC, whose difference over the routes is the retained heap
 * per route. Targets (docs/benchmarks.md): ready within 3 s, /healthz answering while routes load,
 * peak RSS at most 150 MiB, at most 2 KiB of heap per route.
 *
 * Usage (after `make bench-build`): node dist/bench/scale/scale-integrations.js
 *   BENCH_SCALE_INTEGRATIONS  integrations (and as many API keys), default 10000
 *   BENCH_RUNS                runs to take the medians of, default 3
 *   BENCH_OUT                 also append the markdown table to this file
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ROOT } from '../../test/support/paths.js';
import { freePort } from '../../test/support/ports.js';
import { median } from '../../test/support/stats.js';
import {
  imageMallocEnv,
  imageNodeFlags,
  peakRssMiB,
  processCpuSeconds,
  procStatusKiB,
  runBenchmark,
  statusOf,
  stopProcess,
  track,
} from '../support/processes.js';
import { f, table, verdict } from '../ingest/report.js';
import { DIR, log, RUNS, SERVER_CPU } from '../support/settings.js';

const INTEGRATIONS = Number(process.env.BENCH_SCALE_INTEGRATIONS ?? 10_000);
const NAMESPACES = 500;
const READY_TIMEOUT_MS = 120_000;
const SETTLE_MS = 3000;
const KiB = 1024;
const MiB = 1024 * KiB;

const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The example config's settings with `count` integrations and as many API keys, the log sink to /dev/null. */
function writeConfig(count: number, name: string): string {
  const routes: unknown[] = [];
  for (let i = 0; i < count; i++) {
    const namespace = `team-${i % NAMESPACES}`;
    routes.push({
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'WebhookIntegration',
      name: `hook-${i}`,
      namespace,
      credentials: [{ username: `sender-${i}`, secret: { sha256: sha256Hex(`password-${i}`) } }],
    });
    routes.push({
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'ApiKey',
      name: `key-${i}`,
      namespace,
      credentials: [{ username: namespace, secret: { sha256: sha256Hex(`${namespace}_key-${i}`) } }],
    });
  }
  const path = join(DIR, name);
  writeFileSync(
    path,
    stringify({
      logLevel: 'warn',
      sinks: { log: { path: '/dev/null' } },
      deadLetter: { path: join(DIR, `${name}.dl`) },
      routes,
    }),
  );
  return path;
}

interface Started {
  child: ChildProcess;
  adminUrl: string;
  spawnedAt: number;
}

async function start(config: string, extraFlags: string[] = []): Promise<Started> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const args = [
    ...imageNodeFlags(),
    ...extraFlags,
    join(ROOT, 'dist/cmd/intake.js'),
    'ingester',
    '--config',
    config,
    '--listen',
    `127.0.0.1:${port}`,
    '--admin-listen',
    `127.0.0.1:${adminPort}`,
  ];
  const env = { ...process.env, NODE_ENV: 'production', ...imageMallocEnv() };
  const spawnedAt = performance.now();
  const child = track(
    spawn('taskset', ['-c', SERVER_CPU, process.execPath, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env }),
  );
  return { child, adminUrl: `http://127.0.0.1:${adminPort}`, spawnedAt };
}

interface RunResult {
  healthMs: number;
  readyMs: number;
  /** CPU seconds the ingester used until ready: what a busy machine does not change much. */
  readyCpuS: number;
  healthyWhileLoading: boolean;
  peakMiB: number;
  settledMiB: number;
}

/** Polls /healthz and /readyz every 20 ms from the spawn until ready. */
async function measureStart(config: string): Promise<RunResult> {
  const { child, adminUrl, spawnedAt } = await start(config);
  let healthMs: number | undefined;
  let healthyWhileLoading = false;
  for (;;) {
    if (performance.now() - spawnedAt > READY_TIMEOUT_MS) throw new Error('the ingester did not get ready');
    if (child.exitCode !== null) throw new Error(`the ingester exited with ${child.exitCode}`);
    const [health, ready] = await Promise.all([statusOf(`${adminUrl}/healthz`), statusOf(`${adminUrl}/readyz`)]);
    if (health.status === 200) healthMs ??= performance.now() - spawnedAt;
    if (health.status === 200 && ready.status === 503 && ready.body.includes('loading routes'))
      healthyWhileLoading = true;
    if (ready.status === 200) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const readyMs = performance.now() - spawnedAt;
  const readyCpuS = processCpuSeconds(child.pid as number);
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const result = {
    healthMs: healthMs ?? readyMs,
    readyMs,
    readyCpuS,
    healthyWhileLoading,
    peakMiB: peakRssMiB(child.pid),
    settledMiB: procStatusKiB(child.pid, 'VmRSS') / 1024,
  };
  await stopProcess(child);
  return result;
}

/** The V8 heap used after a full GC, read through the inspector protocol once the ingester is ready. */
async function heapAfterGc(config: string): Promise<number> {
  const inspectPort = await freePort();
  const { child, adminUrl, spawnedAt } = await start(config, [`--inspect=127.0.0.1:${inspectPort}`]);
  while ((await statusOf(`${adminUrl}/readyz`)).status !== 200) {
    if (performance.now() - spawnedAt > READY_TIMEOUT_MS) throw new Error('the ingester did not get ready');
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const targets = (await (await fetch(`http://127.0.0.1:${inspectPort}/json/list`)).json()) as Array<{
    webSocketDebuggerUrl: string;
  }>;
  const socket = new WebSocket((targets[0] as { webSocketDebuggerUrl: string }).webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  let id = 0;
  const call = (method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> =>
    new Promise((resolve) => {
      const mine = ++id;
      socket.addEventListener('message', function listener(event) {
        const message = JSON.parse(String(event.data)) as { id?: number; result?: Record<string, unknown> };
        if (message.id !== mine) return;
        socket.removeEventListener('message', listener);
        resolve(message.result ?? {});
      });
      socket.send(JSON.stringify({ id: mine, method, params }));
    });
  await call('HeapProfiler.collectGarbage');
  await call('HeapProfiler.collectGarbage');
  const result = (await call('Runtime.evaluate', {
    expression: 'process.memoryUsage().heapUsed',
    returnByValue: true,
  })) as { result: { value: number } };
  socket.close();
  await stopProcess(child);
  return result.result.value;
}

async function main(): Promise<void> {
  const routes = INTEGRATIONS * 2;
  log(`writing a config of ${INTEGRATIONS} integrations and ${INTEGRATIONS} API keys over ${NAMESPACES} namespaces`);
  const config = writeConfig(INTEGRATIONS, 'scale.yaml');
  const empty = writeConfig(0, 'empty.yaml');
  const load = loadavg().map((n) => n.toFixed(2));
  const runs: RunResult[] = [];
  for (let i = 0; i < RUNS; i++) {
    const run = await measureStart(config);
    log(
      `run ${i + 1}: /healthz ${f(run.healthMs)} ms, ready ${f(run.readyMs)} ms (${f(run.readyCpuS, 2)} s CPU), peak RSS ${f(run.peakMiB)} MiB, RSS ${f(run.settledMiB)} MiB`,
    );
    runs.push(run);
  }
  const heapEmpty = await heapAfterGc(empty);
  const heapFull = await heapAfterGc(config);
  const perRoute = (heapFull - heapEmpty) / routes;
  const readyMs = median(runs.map((r) => r.readyMs));
  const peakMiB = median(runs.map((r) => r.peakMiB));
  const rows = [
    ['ready after start', `${f(readyMs)} ms`, '<= 3000 ms', verdict(readyMs <= 3000)],
    [
      '/healthz first answered',
      `${f(median(runs.map((r) => r.healthMs)))} ms`,
      'while routes load',
      verdict(runs.every((r) => r.healthyWhileLoading)),
    ],
    ['peak RSS (VmHWM)', `${f(peakMiB)} MiB`, '<= 150 MiB', verdict(peakMiB <= 150)],
    ['RSS 3 s after ready', `${f(median(runs.map((r) => r.settledMiB)))} MiB`, '', ''],
    ['heap after GC, no routes', `${f(heapEmpty / MiB, 1)} MiB`, '', ''],
    [`heap after GC, ${routes} routes`, `${f(heapFull / MiB, 1)} MiB`, '', ''],
    ['retained heap per route', `${f(perRoute)} B`, '<= 2048 B', verdict(perRoute <= 2 * KiB)],
  ];
  const header = ['standalone, sha256 credentials', 'median', 'target', 'verdict'];
  const title = `scale: ${INTEGRATIONS} WebhookIntegrations + ${INTEGRATIONS} ApiKeys over ${NAMESPACES} namespaces, ${RUNS} runs, load average ${load.join(' ')}`;
  process.stdout.write(`${title}\n${table(header, rows, false)}\n`);
  if (process.env.BENCH_OUT) appendFileSync(process.env.BENCH_OUT, `\n### ${title}\n\n${table(header, rows, true)}\n`);
}

runBenchmark(main);
