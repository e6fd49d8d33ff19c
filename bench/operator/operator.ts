/**
 * Operator benchmark (make bench-operator; not a test): against the test API server, create 1,000
 * WebhookIntegrations at once and time until all are Ready; then create single integrations one at
 * a time and time create -> first event accepted by the ingester. Then activity
 * (bench/operator/operator-activity.ts): 1,000 integrations in all, two ingester replicas reporting
 * activity for every one: status writes per second against the cap, the operator's CPU and RSS.
 *
 * Environment: BENCH_BURST (1000), BENCH_SINGLES (40), BENCH_ACTIVITY_INTEGRATIONS (1000; 0 skips
 * the activity part), BENCH_ACTIVITY_INTERVAL (seconds, 2), BENCH_ACTIVITY_WRITE_CAP (writes/s, 20),
 * BENCH_OPERATOR_NODE_OPTIONS (the operator's Node flags; default as the chart runs it: the
 * Dockerfile's NODE_OPTIONS and operator.maxOldSpaceSizeMiB), BENCH_OPERATOR_CPU_PROF (a directory:
 * the operator runs under --cpu-prof and writes its profile there when stopped;
 * `node dist/bench/support/cpuprofile.js FILE` sums it). BENCH_SCALE=N runs bench/operator/operator-scale.ts instead
 * (N WebhookIntegrations and N ApiKeys over BENCH_SCALE_NAMESPACES namespaces: writes per resource,
 * wall time against the API server's CPU, the resync, the route documents' list and watch cost).
 */
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import {
  applyCrds,
  createNamespace,
  KUBECONFIG,
  kubeClients,
  ROOT,
  kubectl,
  postEvent,
  requireCluster,
  startIngester,
  startOperator,
  uniqueName,
} from '../../test/integration/support/cluster.js';
import { startPodNetwork } from '../../test/integration/support/pod-network.js';
import { waitFor } from '../../test/support/waiting.js';
import { activityBenchmark } from './operator-activity.js';
import { scaleBenchmark } from './operator-scale.js';
import { imageNodeFlags, peakRssMiB, processCpuSeconds } from '../support/processes.js';

const BURST = Number(process.env.BENCH_BURST ?? 1000);
const CREATE_CONCURRENCY = 8;
const SINGLES = Number(process.env.BENCH_SINGLES ?? 40);
const TENANTS = 5;
const PROBE_MS = 5;
const MAX_PROBES = 200;
const ACTIVITY_INTEGRATIONS = Number(process.env.BENCH_ACTIVITY_INTEGRATIONS ?? 1000);
const ACTIVITY_INTERVAL = Number(process.env.BENCH_ACTIVITY_INTERVAL ?? 2);
const WRITE_CAP = Number(process.env.BENCH_ACTIVITY_WRITE_CAP ?? 20);
const ADMIN_SERVICE = 'intake-ingester-admin';
const CPU_PROF_DIR = process.env.BENCH_OPERATOR_CPU_PROF;

/** The heap limit the chart gives the operator (values.yaml operator.maxOldSpaceSizeMiB); 0 or absent: none. */
function chartOperatorHeapFlags(): string[] {
  const values = readFileSync(join(ROOT, 'charts/intake/values.yaml'), 'utf8');
  const mib = Number(/^operator:\n(?:(?: {2}.*)?\n)*? {2}maxOldSpaceSizeMiB: (\d+)/m.exec(values)?.[1] ?? 0);
  return mib > 0 ? [`--max-old-space-size=${mib}`] : [];
}

/**
 * The operator's Node flags: as the chart runs it (the image's NODE_OPTIONS and the chart's heap
 * limit; BENCH_OPERATOR_NODE_OPTIONS replaces them), plus the profiler when asked.
 */
function operatorNodeFlags(): string[] {
  const fromEnv = process.env.BENCH_OPERATOR_NODE_OPTIONS;
  const flags =
    fromEnv === undefined ? [...imageNodeFlags(), ...chartOperatorHeapFlags()] : fromEnv.split(/\s+/).filter(Boolean);
  if (CPU_PROF_DIR) flags.push('--cpu-prof', `--cpu-prof-dir=${resolve(CPU_PROF_DIR)}`);
  return flags;
}

/** The test API server's process (API server and etcd in one), for its CPU time; undefined when not found. */
function apiServerPid(): number | undefined {
  try {
    return Number(readFileSync(join(dirname(KUBECONFIG), 'pid'), 'utf8').trim()) || undefined;
  } catch {
    return undefined;
  }
}

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
};

/**
 * When the first request that the ingester accepted was sent. Probes go out every PROBE_MS without
 * waiting for earlier ones: a refused probe is answered only after the authentication failure
 * floor (hundreds of milliseconds), and a poller that waited for each answer would measure that
 * floor instead of when the route became usable.
 */
async function firstAcceptedSend(
  ingestUrl: string,
  name: string,
  credentials: () => Promise<string | undefined>,
): Promise<number> {
  const deadline = performance.now() + 30_000;
  const inFlight = new Set<Promise<void>>();
  let acceptedAt: number | undefined;
  let authorization: string | undefined;
  while (acceptedAt === undefined) {
    if (performance.now() > deadline) throw new Error(`${name}: no event accepted within 30 s`);
    authorization ??= await credentials();
    if (authorization !== undefined && inFlight.size < MAX_PROBES) {
      const sentAt = performance.now();
      const probe: Promise<void> = postEvent(ingestUrl, name, authorization).then((status) => {
        if (status === 200 && (acceptedAt === undefined || sentAt < acceptedAt)) acceptedAt = sentAt;
        inFlight.delete(probe);
      });
      inFlight.add(probe);
    }
    await new Promise((r) => setTimeout(r, PROBE_MS));
  }
  await Promise.all(inFlight);
  return acceptedAt;
}

type Listed = { items: Array<{ status?: { conditions?: Array<{ type: string; status: string }> } }> };

async function main(): Promise<void> {
  if (Number(process.env.BENCH_SCALE ?? 0) > 0) return scaleBenchmark(operatorNodeFlags());
  requireCluster();
  const { core, custom } = kubeClients();
  await applyCrds();
  const system = uniqueName('bench-system');
  const tenants = Array.from({ length: TENANTS }, (_, i) => uniqueName(`bench-t${i}`));
  for (const ns of [system, ...tenants]) await createNamespace(ns);
  const network = await startPodNetwork();
  const operator = await startOperator(
    system,
    tenants,
    [
      '--log-level',
      'info',
      '--workers',
      '8',
      '--ingester-admin-service',
      ADMIN_SERVICE,
      '--activity-interval',
      `${ACTIVITY_INTERVAL}s`,
      '--activity-writes-per-second',
      String(WRITE_CAP),
    ],
    network.env,
    operatorNodeFlags(),
  );
  const ingester = await startIngester(system, ['--log-level', 'warn']);
  const second = await startIngester(system, ['--log-level', 'warn']);
  try {
    // Created the way a GitOps controller applies a change, several requests at a time, so that
    // the figure is the operator's and not one kubectl's sequential client-side apply.
    const operatorPid = operator.child.pid as number;
    const serverPid = apiServerPid();
    const ingesterCpu = (): number =>
      processCpuSeconds(ingester.child.pid as number) + processCpuSeconds(second.child.pid as number);
    const cpu0 = {
      operator: processCpuSeconds(operatorPid),
      server: serverPid ? processCpuSeconds(serverPid) : NaN,
      ingesters: ingesterCpu(),
      bench: process.cpuUsage(),
    };
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CREATE_CONCURRENCY }, async () => {
        for (let i = next++; i < BURST; i = next++) {
          const namespace = tenants[i % TENANTS] as string;
          await custom.createNamespacedCustomObject({
            group: 'intake.dev',
            version: 'v1alpha1',
            namespace,
            plural: 'webhookintegrations',
            body: {
              apiVersion: 'intake.dev/v1alpha1',
              kind: 'WebhookIntegration',
              metadata: { name: `burst-${i}`, namespace },
              spec: {},
            },
          });
        }
      }),
    );
    const applyMs = performance.now() - t0;
    await waitFor(
      `${BURST} Ready`,
      async () => {
        let ready = 0;
        for (const namespace of tenants) {
          const list = (await custom.listNamespacedCustomObject({
            group: 'intake.dev',
            version: 'v1alpha1',
            namespace,
            plural: 'webhookintegrations',
          })) as Listed;
          ready += list.items.filter((i) =>
            i.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
          ).length;
        }
        return ready === BURST;
      },
      300_000,
      500,
    );
    const allReadyMs = performance.now() - t0;
    const burstCpu = {
      operator: processCpuSeconds(operatorPid) - cpu0.operator,
      server: serverPid ? processCpuSeconds(serverPid) - cpu0.server : NaN,
      ingesters: ingesterCpu() - cpu0.ingesters,
      bench: ((u) => (u.user + u.system) / 1e6)(process.cpuUsage(cpu0.bench)),
    };
    const burstPeakRss = peakRssMiB(operatorPid);

    const credentialsOf = async (namespace: string, name: string): Promise<string | undefined> => {
      const secret = await core
        .readNamespacedSecret({ namespace, name: `intake-webhook-${name}` })
        .catch(() => undefined);
      const auth = secret?.data?.authorization;
      return auth === undefined ? undefined : Buffer.from(auth, 'base64').toString();
    };
    const latencies: number[] = [];
    for (let i = 0; i < SINGLES; i++) {
      const namespace = tenants[i % TENANTS] as string;
      const name = `single-${i}`;
      const start = performance.now();
      await custom.createNamespacedCustomObject({
        group: 'intake.dev',
        version: 'v1alpha1',
        namespace,
        plural: 'webhookintegrations',
        body: {
          apiVersion: 'intake.dev/v1alpha1',
          kind: 'WebhookIntegration',
          metadata: { name, namespace },
          spec: {},
        },
      });
      latencies.push((await firstAcceptedSend(ingester.url, name, () => credentialsOf(namespace, name))) - start);
    }
    const rows = [
      ['machine', `${availableParallelism()} cores, ${cpus()[0]?.model ?? 'unknown CPU'}, node ${process.version}`],
      [
        `burst: ${BURST} WebhookIntegrations created (${CREATE_CONCURRENCY} requests at a time)`,
        `${(applyMs / 1000).toFixed(1)} s`,
      ],
      [
        `burst: first create -> all ${BURST} Ready (polled every 0.5 s)`,
        `${(allReadyMs / 1000).toFixed(1)} s (target <= 10 s: ${allReadyMs <= 10_000 ? 'PASS' : 'MISS'})`,
      ],
      [
        'burst: CPU from first create to all Ready',
        `operator ${burstCpu.operator.toFixed(1)} s, API server and etcd ${Number.isNaN(burstCpu.server) ? 'not found' : `${burstCpu.server.toFixed(1)} s`}, the 2 ingesters ${burstCpu.ingesters.toFixed(1)} s, this benchmark ${burstCpu.bench.toFixed(1)} s`,
      ],
      [
        `burst: operator peak RSS (VmHWM; node flags: ${operatorNodeFlags().join(' ') || 'none'})`,
        `${burstPeakRss.toFixed(0)} MiB (chart limit 256 MiB: ${burstPeakRss <= 256 ? 'PASS' : 'MISS'})`,
      ],
      [
        `single apply -> first accepted event sent, p50 (n=${SINGLES})`,
        `${percentile(latencies, 50).toFixed(0)} ms (target <= 100 ms: ${percentile(latencies, 50) <= 100 ? 'PASS' : 'MISS'})`,
      ],
      [
        `single apply -> first accepted event sent, p99 (n=${SINGLES})`,
        `${percentile(latencies, 99).toFixed(0)} ms (target <= 1000 ms: ${percentile(latencies, 99) <= 1000 ? 'PASS' : 'MISS'})`,
      ],
    ];
    // Activity: more integrations up to ACTIVITY_INTEGRATIONS, then the load on both replicas.
    const print = (): void =>
      void process.stdout.write(
        `\n| measure | result |\n|---|---|\n${rows.map(([a, b]) => `| ${a} | ${b} |`).join('\n')}\n`,
      );
    if (ACTIVITY_INTEGRATIONS <= 0) {
      print();
      return;
    }
    const extra = Math.max(0, ACTIVITY_INTEGRATIONS - BURST);
    if (extra > 0) {
      const more = await kubectl(
        ['apply', '-f', '-'],
        Array.from(
          { length: extra },
          (_, i) => `apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: act-${i}, namespace: ${tenants[i % TENANTS]}}
spec: {}
`,
        ).join('---\n'),
      );
      if (more.code !== 0) throw new Error(more.stderr);
    }
    const integrations = [
      ...Array.from({ length: Math.min(BURST, ACTIVITY_INTEGRATIONS) }, (_, i) => ({
        namespace: tenants[i % TENANTS] as string,
        name: `burst-${i}`,
      })),
      ...Array.from({ length: extra }, (_, i) => ({ namespace: tenants[i % TENANTS] as string, name: `act-${i}` })),
    ];
    rows.push(
      ...(await activityBenchmark({
        operator,
        ingesters: [ingester, second],
        network,
        system,
        service: ADMIN_SERVICE,
        integrations,
        intervalSeconds: ACTIVITY_INTERVAL,
        writeCap: WRITE_CAP,
      })),
    );
    print();
  } catch (err) {
    process.stderr.write(
      `operator exit: ${operator.child.exitCode ?? operator.child.signalCode ?? 'running'}\noperator log (tail):\n${operator.output().slice(-4000)}\ningester log (tail):\n${ingester.output().slice(-2000)}\n`,
    );
    throw err;
  } finally {
    // The tenants' namespaces go while the operator still runs: only it removes its finalizer from
    // the integrations, and namespaces left Terminating would keep the API server busy in the next run.
    await kubectl(['delete', 'namespace', ...tenants, '--timeout=300s']);
    await operator.stop();
    await ingester.stop();
    await second.stop();
    await network.close();
    await kubectl(['delete', 'namespace', system, '--wait=false']);
  }
}

main().catch((err: Error) => {
  process.stderr.write(`bench-operator: ${err.message}\n`);
  process.exit(1);
});
