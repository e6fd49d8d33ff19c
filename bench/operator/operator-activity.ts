/**
 * The activity part of `make bench-operator` (bench/operator/operator.ts starts the cluster side): N
 * WebhookIntegrations (1,000 in all), two ingester processes in Kubernetes mode behind the
 * ingester admin Service (an EndpointSlice made by hand, test/integration/support/pod-network.ts),
 * every integration receiving events on both replicas and some refused. Measured from the
 * operator's own metrics and /proc: status.activity writes per second (every second sampled, and
 * the peak) against the cap, the time until every integration shows what it received, the writes
 * during a quiet window (must be 0), and the operator's CPU and RSS.
 */
import { kubectl, type Proc } from '../../test/integration/support/cluster.js';
import type { PodNetwork } from '../../test/integration/support/pod-network.js';
import { waitFor } from '../../test/support/waiting.js';
import { peakRssMiB, processCpuSeconds, procStatusKiB } from '../support/processes.js';

export interface ActivityBenchOptions {
  operator: Proc;
  ingesters: Proc[];
  network: PodNetwork;
  system: string;
  service: string;
  /** Integrations per namespace that receive events. */
  integrations: Array<{ namespace: string; name: string }>;
  intervalSeconds: number;
  writeCap: number;
}

type Listed = { items: Array<{ metadata: { name: string }; status?: { activity?: { eventsLastHour?: number } } }> };

const metric = async (operator: Proc, name: string): Promise<number> => {
  const text = await (await fetch(`${operator.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name));
  return line ? Number(line.split(' ').pop()) : 0;
};
const WRITES = 'intake_operator_activity_status_writes_total{result="ok"}';

/** Runs `work` on `items` with at most `concurrency` at once. */
async function pool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

export async function activityBenchmark(o: ActivityBenchOptions): Promise<string[][]> {
  const pods = o.ingesters.map((_, i) => `192.0.2.${20 + i}`);
  o.ingesters.forEach((ing, i) => o.network.routes.set(`${pods[i]}:8081`, Number(new URL(ing.adminUrl).port)));
  const applied = await kubectl(
    ['apply', '-f', '-'],
    `apiVersion: v1
kind: Service
metadata: {name: ${o.service}, namespace: ${o.system}}
spec: {ports: [{name: admin, port: 8081, protocol: TCP}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: ${o.service}-pods
  namespace: ${o.system}
  labels: {kubernetes.io/service-name: ${o.service}, endpointslice.kubernetes.io/managed-by: intake-bench}
addressType: IPv4
ports: [{name: admin, port: 8081, protocol: TCP}]
endpoints:
${pods.map((ip) => `  - {addresses: ["${ip}"], conditions: {ready: true}}`).join('\n')}
`,
  );
  if (applied.code !== 0) throw new Error(applied.stderr);

  // Credentials of every integration (the operator's Secrets), then events on both replicas.
  const auth = new Map<string, string>();
  for (const namespace of new Set(o.integrations.map((i) => i.namespace))) {
    const got = await kubectl(['get', 'secrets', '-n', namespace, '-l', 'intake.dev/credentials=true', '-o', 'json']);
    const list = JSON.parse(got.stdout) as {
      items: Array<{ metadata: { name: string }; data?: { authorization?: string } }>;
    };
    for (const s of list.items)
      auth.set(
        `${namespace}/${s.metadata.name.replace(/^intake-webhook-/, '')}`,
        Buffer.from(s.data?.authorization ?? '', 'base64').toString(),
      );
  }
  const send = async (ingester: Proc, name: string, authorization: string): Promise<number> => {
    const res = await fetch(`${ingester.url}/events/webhook_${name}`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json', 'user-agent': 'bench-operator' },
      body: JSON.stringify({ source: 'bench', severity: 'warning' }),
    });
    await res.arrayBuffer();
    return res.status;
  };
  // Every replica has every route before the load (a 401 while waiting would count as a refusal).
  for (const ingester of o.ingesters)
    await waitFor(
      'routes on the replica',
      async () => {
        const text = await (await fetch(`${ingester.adminUrl}/metrics`)).text();
        const line = text.split('\n').find((l) => l.startsWith('intake_routes{kind="WebhookIntegration"}'));
        return Number(line?.split(' ').pop() ?? 0) >= o.integrations.length;
      },
      300_000,
      500,
    );

  const cpuStart = processCpuSeconds(o.operator.child.pid as number);
  const writesStart = await metric(o.operator, WRITES);
  const started = performance.now();
  const perSecond: number[] = [];
  let lastWrites = writesStart;
  let maxRssKiB = 0;
  let maxHeapUsed = 0;
  let maxHeapTotal = 0;
  const sampler = setInterval(() => {
    metric(o.operator, 'intake_operator_nodejs_heap_size_used_bytes').then(
      (v) => (maxHeapUsed = Math.max(maxHeapUsed, v)),
      () => {},
    );
    metric(o.operator, 'intake_operator_nodejs_heap_size_total_bytes').then(
      (v) => (maxHeapTotal = Math.max(maxHeapTotal, v)),
      () => {},
    );
    metric(o.operator, WRITES).then(
      (w) => {
        perSecond.push(w - lastWrites);
        lastWrites = w;
      },
      () => {},
    );
    maxRssKiB = Math.max(maxRssKiB, procStatusKiB(o.operator.child.pid, 'VmRSS') || 0);
  }, 1000);

  // One event per integration on each replica, and a wrong password for one in ten (a refusal).
  let refused = 0;
  await pool(o.integrations, 32, async ({ namespace, name }) => {
    const authorization = auth.get(`${namespace}/${name}`) as string;
    for (const ingester of o.ingesters) {
      // A route the operator has not published yet (its reconcile backing off under this load) is a 401: again.
      const status = await waitFor(
        `event for ${namespace}/${name}`,
        async () => {
          const code = await send(ingester, name, authorization);
          if (code !== 200 && code !== 401) throw new Error(`event for ${namespace}/${name}: ${code}`);
          return code === 200 ? code : undefined;
        },
        120_000,
        500,
      );
      if (status !== 200) throw new Error(`event for ${namespace}/${name}: ${status}`);
    }
    if (Number(name.replace(/\D/g, '')) % 10 === 0) {
      const status = await send(o.ingesters[0] as Proc, name, 'Basic d3Jvbmc6d3Jvbmc=');
      if (status === 401) refused++;
    }
  });
  const loadMs = performance.now() - started;
  const expected = o.ingesters.length;
  await waitFor(
    `status.activity of all ${o.integrations.length} integrations`,
    async () => {
      let done = 0;
      for (const namespace of new Set(o.integrations.map((i) => i.namespace))) {
        const got = await kubectl(['get', 'webhookintegrations', '-n', namespace, '-o', 'json']);
        const list = JSON.parse(got.stdout) as Listed;
        done += list.items.filter((i) => (i.status?.activity?.eventsLastHour ?? 0) >= expected).length;
      }
      return done >= o.integrations.length;
    },
    600_000,
    2000,
  );
  const convergedMs = performance.now() - started;
  const cpuBusy = processCpuSeconds(o.operator.child.pid as number) - cpuStart;
  const writesBusy = (await metric(o.operator, WRITES)) - writesStart;
  // Quiet: nothing new arrives for several intervals; nothing may be written.
  const quietStart = await metric(o.operator, WRITES);
  const quietSeconds = Math.max(10, 4 * o.intervalSeconds);
  await new Promise((r) => setTimeout(r, quietSeconds * 1000));
  const quietWrites = (await metric(o.operator, WRITES)) - quietStart;
  clearInterval(sampler);
  const peak = Math.max(...perSecond);
  const mean = writesBusy / (convergedMs / 1000);
  const n = o.integrations.length;
  return [
    [
      `activity: ${n} integrations, ${o.ingesters.length} ingester replicas, interval ${o.intervalSeconds} s, cap ${o.writeCap} writes/s`,
      `${n * o.ingesters.length} events and ${refused} refusals sent in ${(loadMs / 1000).toFixed(1)} s`,
    ],
    [`activity: load start -> all ${n} status.activity merged`, `${(convergedMs / 1000).toFixed(1)} s`],
    [
      'activity: status writes',
      `${writesBusy} (mean ${mean.toFixed(1)}/s, peak ${peak}/s in any sampled second; cap ${o.writeCap}/s: ${peak <= o.writeCap + 1 ? 'PASS' : 'MISS'})`,
    ],
    [
      `activity: writes while quiet (${quietSeconds} s, nothing new)`,
      `${quietWrites} (target 0: ${quietWrites === 0 ? 'PASS' : 'MISS'})`,
    ],
    [
      'activity: operator CPU while merging and writing',
      `${cpuBusy.toFixed(1)} s over ${(convergedMs / 1000).toFixed(1)} s (${((100 * cpuBusy) / (convergedMs / 1000)).toFixed(0)}% of one core)`,
    ],
    [
      'activity: operator RSS',
      `max ${(maxRssKiB / 1024).toFixed(0)} MiB sampled, peak ${peakRssMiB(o.operator.child.pid).toFixed(0)} MiB (VmHWM); V8 heap at most ${(maxHeapUsed / 2 ** 20).toFixed(0)} MiB used of ${(maxHeapTotal / 2 ** 20).toFixed(0)} MiB`,
    ],
  ];
}
