/**
 * What an ingester in Kubernetes mode pays for BENCH_SCALE_INTEGRATIONS WebhookIntegrations and as
 * many ApiKeys (one sha256 credential each, over 500 namespaces) as the operator publishes them:
 * one route Secret each in the ingester's namespace of the test API server, created directly (no
 * operator). The ingester is started BENCH_RUNS times pinned to CPU 0 with the image's Node flags
 * and malloc setting.
 *
 * Per run: when /healthz first answered and when /readyz did (from the spawn), whether /healthz
 * answered while the routes were loading, the CPU time until ready, the peak RSS (VmHWM), and the
 * API server's CPU time meanwhile (its list and watch of the route Secrets). In the last run,
 * BENCH_ROTATIONS integrations (a different one each time) get a new password in their Secret,
 * one after the other; each is timed from the start of the API write until the ingester accepts
 * the new password and refuses the old one, both polled over HTTP on loopback, and the routes the
 * ingester placed again meanwhile are counted (intake_routes_placed_total: the changed ones only).
 * Targets (docs/benchmarks.md): ready within 3 s, /healthz answering while routes load, peak RSS at
 * most 150 MiB, a change accepted within 2 s at p99.
 *
 * Usage (after `make bench-build`): bash test/with-testcluster.sh node dist/bench/scale/scale-kubernetes.js
 *   BENCH_SCALE_INTEGRATIONS  integrations (and as many API keys), default 10000
 *   BENCH_RUNS                ingester starts to take the medians of, default 3
 *   BENCH_ROTATIONS           password rotations timed, default 50
 *   BENCH_OUT                 also append the markdown table to this file
 *   BENCH_COMPARE_ENTRY       other builds' dist/cmd/intake.js, comma-separated (say, main's, built
 *                             aside): each run starts them too, in turn with this build, on the same
 *                             Secrets; and their list clients are timed against this one's
 */
import type { V1Secret } from '@kubernetes/client-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import {
  createNamespace,
  KUBECONFIG,
  kubeClients,
  kubectl,
  requireCluster,
  uniqueName,
} from '../../test/integration/support/cluster.js';
import {
  apiKeyRoute,
  createSecrets,
  replaceRoute,
  routeSecret,
  webhookRoute,
} from '../../test/integration/support/route-secrets.js';
import { ROOT } from '../../test/support/paths.js';
import { freePort } from '../../test/support/ports.js';
import { median } from '../../test/support/stats.js';
import {
  imageMallocEnv,
  imageNodeFlags,
  peakRssMiB,
  procStatusKiB,
  processCpuSeconds,
  processTreeCpuSeconds,
  runBenchmark,
  statusOf,
  stopProcess,
  track,
} from '../support/processes.js';
import { f, table, verdict } from '../ingest/report.js';
import { DIR, log, RUNS, SERVER_CPU } from '../support/settings.js';

const INTEGRATIONS = Number(process.env.BENCH_SCALE_INTEGRATIONS ?? 10_000);
const ROTATIONS = Number(process.env.BENCH_ROTATIONS ?? 50);
const NAMESPACES = 500;
const CREATE_CONCURRENCY = 16;
const READY_TIMEOUT_MS = 120_000;
const PROPAGATION_TIMEOUT_MS = 30_000;
const POLL_MS = 5;
const SETTLE_MS = 10_000;
const COMPARE_ENTRIES = (process.env.BENCH_COMPARE_ENTRY ?? '').split(',').filter(Boolean);

const { core } = kubeClients();
const basic = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
};

/** The test API server's process (kube-apiserver with its etcd): whose CPU the list and watches cost. */
const apiServerPid = (): number => Number(readFileSync(join(dirname(KUBECONFIG), 'pid'), 'utf8').trim());

interface Started {
  child: ChildProcess;
  url: string;
  adminUrl: string;
  spawnedAt: number;
  stderr: () => string;
}

/**
 * The ingester in Kubernetes mode reading `namespace`. Polling a rotated-away password is a
 * stream of failures from one address, which the brute-force guard would rightly block and the
 * failure floor would slow to one answer per 300 ms: both are set out of the way.
 */
async function start(namespace: string, entry = join(ROOT, 'dist/cmd/intake.js')): Promise<Started> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const config = join(DIR, 'scale-kubernetes.yaml');
  writeFileSync(
    config,
    'logLevel: warn\nauthThrottle: {failures: 100000000, failuresPerAddress: 100000000, window: 1m, block: 1s, failureDelay: 0s}\n',
  );
  const args = [
    ...imageNodeFlags(),
    entry,
    'ingester',
    '--config',
    config,
    '--kubeconfig',
    KUBECONFIG,
    '--namespace',
    namespace,
    '--listen',
    `127.0.0.1:${port}`,
    '--admin-listen',
    `127.0.0.1:${adminPort}`,
    '--events-log',
    '/dev/null',
  ];
  const env = { ...process.env, NODE_ENV: 'production', ...imageMallocEnv() };
  const spawnedAt = performance.now();
  const child = track(
    spawn('taskset', ['-c', SERVER_CPU, process.execPath, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env }),
  );
  // The end of its stderr, to say why when it exits early.
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    spawnedAt,
    stderr: () => stderr,
  };
}

interface RunResult {
  healthMs: number;
  readyMs: number;
  readyCpuS: number;
  apiServerCpuS: number;
  healthyWhileLoading: boolean;
  peakMiB: number;
}

/** Polls /healthz and /readyz every 20 ms from the spawn until ready. */
async function measureStart(started: Started, apiPid: number): Promise<RunResult> {
  const { child, adminUrl, spawnedAt } = started;
  const apiCpu0 = processTreeCpuSeconds(apiPid);
  let healthMs: number | undefined;
  let healthyWhileLoading = false;
  for (;;) {
    if (performance.now() - spawnedAt > READY_TIMEOUT_MS) throw new Error('the ingester did not get ready');
    if (child.exitCode !== null)
      throw new Error(`the ingester exited with ${child.exitCode}: ${started.stderr().trim() || '(no output)'}`);
    const [health, ready] = await Promise.all([statusOf(`${adminUrl}/healthz`), statusOf(`${adminUrl}/readyz`)]);
    if (health.status === 200) healthMs ??= performance.now() - spawnedAt;
    if (health.status === 200 && ready.status === 503 && ready.body.includes('loading routes'))
      healthyWhileLoading = true;
    if (ready.status === 200) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const readyMs = performance.now() - spawnedAt;
  return {
    healthMs: healthMs ?? readyMs,
    readyMs,
    readyCpuS: processCpuSeconds(child.pid as number),
    apiServerCpuS: processTreeCpuSeconds(apiPid) - apiCpu0,
    healthyWhileLoading,
    peakMiB: peakRssMiB(child.pid),
  };
}

async function post(url: string, name: string, authorization: string): Promise<number> {
  const res = await fetch(`${url}/events/webhook_${name}`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: '{"source":"bench-host","severity":"critical"}',
  });
  await res.arrayBuffer();
  return res.status;
}

/** Sends until `status` comes back; the time the first such request was sent. */
async function sentAtFirst(url: string, name: string, authorization: string, status: number): Promise<number> {
  const deadline = performance.now() + PROPAGATION_TIMEOUT_MS;
  for (;;) {
    const sentAt = performance.now();
    const got = await post(url, name, authorization);
    if (got === status) return sentAt;
    if (sentAt > deadline) throw new Error(`${name}: no ${status} within ${PROPAGATION_TIMEOUT_MS} ms (last ${got})`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

async function placedRoutes(adminUrl: string): Promise<number> {
  const text = (await statusOf(`${adminUrl}/metrics`)).body;
  let sum = 0;
  for (const m of text.matchAll(/^intake_routes_placed_total(?:\{[^}]*\})? (\S+)$/gm)) sum += Number(m[1]);
  return sum;
}

/** Rotates integration `i`'s password and times until the new one is accepted and the old one refused. */
async function rotate(started: Started, namespace: string, i: number, round: number): Promise<number> {
  const name = `hook-${i}`;
  const team = `team-${i % NAMESPACES}`;
  const [oldPassword, newPassword] = [`password-${i}-${round}`, `password-${i}-${round + 1}`];
  const t0 = performance.now();
  await replaceRoute(core, namespace, `route-${name}`, webhookRoute(name, team, `sender-${i}`, newPassword));
  const [accepted, refused] = await Promise.all([
    sentAtFirst(started.url, name, basic(`sender-${i}`, newPassword), 200),
    sentAtFirst(started.url, name, basic(`sender-${i}`, oldPassword), 401),
  ]);
  return Math.max(accepted, refused) - t0;
}

/**
 * The list alone, this build's client against COMPARE_ENTRY's, alternately, 3 times each: the
 * wall time of the ingester's list of the route Secrets, with each document decoded and parsed as
 * its page arrives (the work the ingester does per Secret), and the API server's CPU meanwhile.
 */
async function compareLists(namespace: string, apiPid: number, entries: string[]): Promise<string[][]> {
  type Client = { list: (p: string, q: object, each: (s: V1Secret) => unknown) => Promise<{ items: unknown[] }> };
  const clientOf = async (dist: string): Promise<Client> => {
    const { KubeApiClient } = (await import(join(dist, 'kube/api-client.js'))) as {
      KubeApiClient: new (c: unknown) => Client;
    };
    const { apiConnection } = (await import(join(dist, 'kube/api-connection.js'))) as {
      apiConnection: (k: string) => unknown;
    };
    return new KubeApiClient(apiConnection(KUBECONFIG));
  };
  const clients: Array<[string, Client]> = [['this build', await clientOf(join(ROOT, 'dist'))]];
  for (const entry of entries) clients.push([entry, await clientOf(join(dirname(entry), '..'))]);
  const times = new Map<string, { ms: number[]; api: number[] }>(clients.map(([n]) => [n, { ms: [], api: [] }]));
  const path = `/api/v1/namespaces/${namespace}/secrets`;
  for (let round = 0; round < 3; round++)
    for (const [name, client] of clients) {
      const api0 = processCpuSeconds(apiPid);
      const t0 = performance.now();
      const { items } = await client.list(path, { labelSelector: 'intake.dev/route=true' }, (s) =>
        JSON.parse(Buffer.from(s.data?.['route.json'] ?? 'e30=', 'base64').toString('utf8')),
      );
      const ms = performance.now() - t0;
      times.get(name)?.ms.push(ms);
      times.get(name)?.api.push(processCpuSeconds(apiPid) - api0);
      log(`list of ${items.length} route Secrets, ${name}: ${f(ms)} ms`);
    }
  return clients.map(([name]) => {
    const t = times.get(name) as { ms: number[]; api: number[] };
    return [
      `list of the route Secrets alone, ${name} (median of 3)`,
      `${f(median(t.ms))} ms (API server CPU ${f(median(t.api), 2)} s)`,
    ];
  });
}

async function main(): Promise<void> {
  requireCluster();
  const namespace = uniqueName('intake-scale');
  await createNamespace(namespace);
  try {
    await measure(namespace);
  } finally {
    await kubectl(['delete', 'namespace', namespace, '--wait=false']);
  }
}

async function measure(namespace: string): Promise<void> {
  const routes = INTEGRATIONS * 2;
  log(`creating ${routes} route Secrets in ${namespace} (${CREATE_CONCURRENCY} at a time)`);
  const secrets = [];
  for (let i = 0; i < INTEGRATIONS; i++) {
    const team = `team-${i % NAMESPACES}`;
    secrets.push(routeSecret(`route-hook-${i}`, webhookRoute(`hook-${i}`, team, `sender-${i}`, `password-${i}-0`)));
    secrets.push(routeSecret(`route-key-${i}`, apiKeyRoute(`key-${i}`, team)));
  }
  const created0 = performance.now();
  await createSecrets(core, namespace, secrets, CREATE_CONCURRENCY);
  log(`created in ${f((performance.now() - created0) / 1000, 1)} s`);
  // The API server's own work after the burst of creates (compaction, its caches) is not the list's.
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const apiPid = apiServerPid();
  const load = loadavg().map((n) => n.toFixed(2));

  const listRows = COMPARE_ENTRIES.length ? await compareLists(namespace, apiPid, COMPARE_ENTRIES) : [];
  const runs: RunResult[] = [];
  const compared = new Map<string, RunResult[]>(COMPARE_ENTRIES.map((e) => [e, []]));
  let propagation: number[] = [];
  let placed = NaN;
  let peakAfterRotations = NaN;
  let rssAfterRotations = NaN;
  for (let run = 0; run < RUNS; run++) {
    for (const entry of COMPARE_ENTRIES) {
      const other = await start(namespace, entry);
      const result = await measureStart(other, apiPid);
      log(
        `run ${run + 1}, ${entry}: /healthz ${f(result.healthMs)} ms, ready ${f(result.readyMs)} ms (${f(result.readyCpuS, 2)} s CPU; API server ${f(result.apiServerCpuS, 2)} s CPU), peak RSS ${f(result.peakMiB)} MiB`,
      );
      compared.get(entry)?.push(result);
      await stopProcess(other.child);
    }
    const started = await start(namespace);
    const result = await measureStart(started, apiPid);
    log(
      `run ${run + 1}: /healthz ${f(result.healthMs)} ms, ready ${f(result.readyMs)} ms (${f(result.readyCpuS, 2)} s CPU; API server ${f(result.apiServerCpuS, 2)} s CPU), peak RSS ${f(result.peakMiB)} MiB`,
    );
    runs.push(result);
    if (run === RUNS - 1) {
      const before = await placedRoutes(started.adminUrl);
      propagation = [];
      for (let r = 0; r < ROTATIONS; r++) {
        // A different integration each time, spread over the namespaces.
        const i = (r * 7919) % INTEGRATIONS;
        propagation.push(await rotate(started, namespace, i, 0));
      }
      placed = (await placedRoutes(started.adminUrl)) - before;
      peakAfterRotations = peakRssMiB(started.child.pid);
      rssAfterRotations = procStatusKiB(started.child.pid, 'VmRSS') / 1024;
      log(
        `${ROTATIONS} rotations: median ${f(median(propagation))} ms, p99 ${f(percentile(propagation, 99))} ms, max ${f(Math.max(...propagation))} ms; routes placed meanwhile ${placed}`,
      );
    }
    await stopProcess(started.child);
  }

  const readyMs = median(runs.map((r) => r.readyMs));
  const peakMiB = Math.max(median(runs.map((r) => r.peakMiB)), peakAfterRotations);
  const p99 = percentile(propagation, 99);
  const rows = [
    ['ready after start', `${f(readyMs)} ms`, '<= 3000 ms', verdict(readyMs <= 3000)],
    ['CPU time until ready', `${f(median(runs.map((r) => r.readyCpuS)), 2)} s`, '', ''],
    ['API server CPU during the start (list, watch)', `${f(median(runs.map((r) => r.apiServerCpuS)), 2)} s`, '', ''],
    [
      '/healthz first answered',
      `${f(median(runs.map((r) => r.healthMs)))} ms`,
      'while routes load',
      verdict(runs.every((r) => r.healthyWhileLoading)),
    ],
    ['peak RSS (VmHWM), rotations included', `${f(peakMiB)} MiB`, '<= 150 MiB', verdict(peakMiB <= 150)],
    ['RSS after the rotations (VmRSS)', `${f(rssAfterRotations)} MiB`, '', ''],
    [`password rotation accepted, old refused: median of ${ROTATIONS}`, `${f(median(propagation))} ms`, '', ''],
    [`... p99 (max ${f(Math.max(...propagation))} ms)`, `${f(p99)} ms`, '<= 2000 ms', verdict(p99 <= 2000)],
    [`routes placed for ${ROTATIONS} rotations`, `${placed}`, `${ROTATIONS}`, verdict(placed === ROTATIONS)],
  ];
  for (const [, results] of [...compared].reverse()) {
    const m = (pick: (r: RunResult) => number, digits = 0): string => f(median(results.map(pick)), digits);
    rows[0]?.splice(2, 0, `${m((r) => r.readyMs)} ms`);
    rows[1]?.splice(2, 0, `${m((r) => r.readyCpuS, 2)} s`);
    rows[2]?.splice(2, 0, `${m((r) => r.apiServerCpuS, 2)} s`);
    rows[3]?.splice(2, 0, `${m((r) => r.healthMs)} ms`);
    rows[4]?.splice(2, 0, `${m((r) => r.peakMiB)} MiB (no rotations)`);
    for (const row of rows.slice(5)) row.splice(2, 0, '');
  }
  for (const [what, result] of listRows)
    rows.push([what as string, result as string, ...COMPARE_ENTRIES.map(() => ''), '', '']);
  const header = [
    'Kubernetes mode, one route Secret each',
    'median',
    ...COMPARE_ENTRIES.map((e) => `median, ${e}`),
    'target',
    'verdict',
  ];
  const title = `scale (Kubernetes mode): ${INTEGRATIONS} WebhookIntegrations + ${INTEGRATIONS} ApiKeys over ${NAMESPACES} namespaces, ${RUNS} runs, load average ${load.join(' ')}`;
  process.stdout.write(`${title}\n${table(header, rows, false)}\n`);
  if (process.env.BENCH_OUT) appendFileSync(process.env.BENCH_OUT, `\n### ${title}\n\n${table(header, rows, true)}\n`);
}

runBenchmark(main);
