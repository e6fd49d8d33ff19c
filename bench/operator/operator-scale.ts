/**
 * The operator at scale (make bench-operator with BENCH_SCALE=N; not a test): against the test API
 * server, N WebhookIntegrations and N ApiKeys over BENCH_SCALE_NAMESPACES namespaces (500) are
 * created at once (8 requests at a time), and timed until every one is Ready; the API server's
 * own count of write requests (apiserver_request_total) gives the operator's writes per resource,
 * and /proc the CPU of the operator and of the test API server process (kube-apiserver, its etcd
 * and its controllers: the floor, what the writes cost the API server whoever makes them). Then
 * the operator is restarted and its resync of the unchanged 2N resources timed and its writes
 * counted (target 0). Then the route documents: LIST and a one-route change through a watch, for
 * the 2N route Secrets as written (one per resource) and for the same routes in sharded Secrets.
 *
 * No ingester runs: their CPU would be counted against the floor (bench/operator.ts measures them).
 */
import { request } from 'node:https';
import { availableParallelism, cpus } from 'node:os';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Watch } from '@kubernetes/client-node';
import {
  applyCrds,
  createNamespace,
  KUBECONFIG,
  kubeClients,
  kubectl,
  requireCluster,
  ROOT,
  startOperator,
  type Proc,
} from '../../test/integration/support/cluster.js';
import { waitFor } from '../../test/support/waiting.js';
import { peakRssMiB, processCpuSeconds } from '../support/processes.js';

const SCALE = Number(process.env.BENCH_SCALE ?? 0);
const NAMESPACES = Number(process.env.BENCH_SCALE_NAMESPACES ?? 500);
const SHARDS = Number(process.env.BENCH_SCALE_SHARDS ?? 32);
const CREATE_CONCURRENCY = 8;
/** The operator's --workers: BENCH_OPERATOR_WORKERS, else the chart's default (values.yaml operator.workers). */
const WORKERS = process.env.BENCH_OPERATOR_WORKERS ?? chartOperatorWorkers();
const ROUTE_SELECTOR = 'intake.dev/route=true';
const OPERATOR_RESOURCES = ['secrets', 'events', 'webhookintegrations', 'apikeys', 'intakequotas'];
const KINDS = [
  { kind: 'WebhookIntegration', plural: 'webhookintegrations', prefix: 'hook' },
  { kind: 'ApiKey', plural: 'apikeys', prefix: 'key' },
] as const;

const { kc, custom } = kubeClients();
const cluster = kc.getCurrentCluster();
const token = kc.getCurrentUser()?.token ?? '';
const server = new URL(cluster?.server ?? 'https://127.0.0.1');
const ca = Buffer.from(cluster?.caData ?? '', 'base64');

/** One request to the API server, its answer read whole: status, bytes and time. */
function api(
  method: string,
  path: string,
  body?: string,
  contentType = 'application/json',
): Promise<{ status: number; body: string; bytes: number; ms: number }> {
  const started = performance.now();
  return new Promise((done, fail) => {
    const req = request(
      {
        host: server.hostname,
        port: server.port,
        method,
        path,
        ca,
        headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'content-type': contentType },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const all = Buffer.concat(chunks);
          done({
            status: res.statusCode ?? 0,
            body: all.toString(),
            bytes: all.length,
            ms: performance.now() - started,
          });
        });
        res.on('error', fail);
      },
    );
    req.on('error', fail);
    req.end(body);
  });
}

function chartOperatorWorkers(): string {
  const values = readFileSync(join(ROOT, 'charts/intake/values.yaml'), 'utf8');
  return /^operator:\n(?:(?: {2}.*)?\n)*? {2}workers: (\d+)/m.exec(values)?.[1] ?? '4';
}

/** The test API server's process (API server, etcd and controllers in one). */
function apiServerPid(): number {
  return Number(readFileSync(join(dirname(KUBECONFIG), 'pid'), 'utf8').trim());
}

/** The write counts once they stop changing (a request is counted when its answer is written). */
async function settledWriteCounts(): Promise<Map<string, number>> {
  let last = await writeCounts();
  for (let i = 0; i < 30; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = await writeCounts();
    if (total(now) === total(last)) return now;
    last = now;
  }
  return last;
}

/** Write requests to the operator's resources the API server has answered so far, by verb, resource and subresource. */
async function writeCounts(): Promise<Map<string, number>> {
  const text = (await api('GET', '/metrics')).body;
  const counts = new Map<string, number>();
  for (const m of text.matchAll(/^apiserver_request_total\{([^}]*)\} (\d+)/gm)) {
    const labels = Object.fromEntries(
      [...(m[1] as string).matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1] as string, l[2] as string]),
    );
    if (!['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY'].includes(labels.verb ?? '')) continue;
    // What the operator writes; not the API server's own lease renewals or the controllers' work.
    if (!OPERATOR_RESOURCES.includes(labels.resource ?? '')) continue;
    // A refused write (409: a create the cache did not know was done) is shown apart.
    const refused = Number(labels.code ?? 0) >= 300 ? ` (${labels.code})` : '';
    const key = `${labels.verb} ${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''}${refused}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(m[2]));
  }
  return counts;
}

const delta = (after: Map<string, number>, before: Map<string, number>): Map<string, number> =>
  new Map(
    [...after]
      .map(([k, v]) => [k, v - (before.get(k) ?? 0)] as [string, number])
      .filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1]),
  );
const total = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);
const show = (m: Map<string, number>): string => [...m].map(([k, v]) => `${k} ${v}`).join(', ') || 'none';

const operatorReconciles = async (proc: Proc): Promise<number> =>
  [
    ...(await (await fetch(`${proc.adminUrl}/metrics`)).text()).matchAll(
      /^intake_operator_reconciles_total\{[^}]*\} (\d+)/gm,
    ),
  ].reduce((n, m) => n + Number(m[1]), 0);

/** Seconds the operator's workers spent in reconciles so far (the sum of its reconcile duration histogram). */
const reconcileSeconds = async (proc: Proc): Promise<number> =>
  [
    ...(await (await fetch(`${proc.adminUrl}/metrics`)).text()).matchAll(
      /^intake_operator_reconcile_duration_seconds_sum\{[^}]*\} ([\d.e+-]+)/gm,
    ),
  ].reduce((n, m) => n + Number(m[1]), 0);

/** Counts resources whose Ready condition is True, from one watch per kind (no repeated lists of 2N). */
function readyWatch(): { ready: () => number; stop: () => void } {
  const ready = new Set<string>();
  const aborts: AbortController[] = [];
  const watch = new Watch(kc);
  for (const { plural } of KINDS)
    void watch
      .watch(
        `/apis/intake.dev/v1alpha1/${plural}`,
        { resourceVersion: '0' },
        (
          _phase,
          obj: {
            metadata: { namespace: string; name: string };
            status?: { conditions?: Array<{ type: string; status: string }> };
          },
        ) => {
          const key = `${plural}/${obj.metadata.namespace}/${obj.metadata.name}`;
          if (obj.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) ready.add(key);
        },
        () => undefined,
      )
      .then((a) => aborts.push(a));
  return { ready: () => ready.size, stop: () => aborts.forEach((a) => a.abort()) };
}

/** An operator that ran out of heap (the chart's limit is sized for fewer resources) ends the run at once. */
const exited = (proc: Proc): boolean => proc.child.exitCode !== null || proc.child.signalCode !== null;

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/** LIST of route Secrets in `namespace`, three times: median time, bytes, objects, API server CPU per list. */
async function measureList(namespace: string, selector: string, pid: number) {
  const times: number[] = [];
  const cpu: number[] = [];
  let bytes = 0;
  let items = 0;
  for (let i = 0; i < 3; i++) {
    const before = processCpuSeconds(pid);
    const r = await api('GET', `/api/v1/namespaces/${namespace}/secrets?labelSelector=${encodeURIComponent(selector)}`);
    const parsedAt = performance.now();
    items = (JSON.parse(r.body) as { items: unknown[] }).items.length;
    times.push(r.ms + (performance.now() - parsedAt));
    cpu.push(processCpuSeconds(pid) - before);
    bytes = r.bytes;
  }
  return { ms: median(times), bytes, items, cpu: median(cpu) };
}

/** Bytes one watcher receives for a change to one Secret (a label added), and how long until it arrives. */
async function measureWatchedChange(namespace: string, name: string, selector: string) {
  const list = await api(
    'GET',
    `/api/v1/namespaces/${namespace}/secrets?labelSelector=${encodeURIComponent(selector)}&limit=1`,
  );
  const rv = (JSON.parse(list.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  return new Promise<{ bytes: number; ms: number }>((done, fail) => {
    let started = 0;
    const req = request(
      {
        host: server.hostname,
        port: server.port,
        path: `/api/v1/namespaces/${namespace}/secrets?watch=1&labelSelector=${encodeURIComponent(selector)}&resourceVersion=${rv}`,
        ca,
        headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      },
      (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => {
          bytes += c.length;
          if (c.includes(10)) {
            const ms = performance.now() - started;
            req.destroy();
            done({ bytes, ms });
          }
        });
        started = performance.now();
        void api(
          'PATCH',
          `/api/v1/namespaces/${namespace}/secrets/${name}`,
          JSON.stringify({ metadata: { labels: { 'bench.intake.dev/touched': String(Date.now()) } } }),
          'application/merge-patch+json',
        );
      },
    );
    req.on('error', (err) => (started ? undefined : fail(err)));
    req.end();
  });
}

export async function scaleBenchmark(operatorFlags: string[]): Promise<void> {
  requireCluster();
  await applyCrds();
  const run = Math.random().toString(36).slice(2, 6);
  const system = `scale-${run}-system`;
  const shards = `scale-${run}-shards`;
  const tenants = Array.from({ length: NAMESPACES }, (_, i) => `scale-${run}-t${i}`);
  await createNamespace(system);
  await createNamespace(shards);
  const made = await kubectl(
    ['apply', '-f', '-'],
    tenants.map((ns) => `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${ns}}\n`).join('---\n'),
  );
  if (made.code !== 0) throw new Error(made.stderr);
  // Let the controllers finish with the new namespaces (ServiceAccounts), and with namespaces an
  // earlier run left terminating, before anything is measured.
  await new Promise((r) => setTimeout(r, 5000));
  await waitFor(
    'no namespace terminating',
    async () => !(await kubectl(['get', 'namespaces', '--no-headers'])).stdout.includes('Terminating'),
    600_000,
    2000,
  );
  const pid = apiServerPid();
  const start = (): Promise<Proc> =>
    startOperator(
      system,
      [],
      ['--log-level', 'warn', '--workers', WORKERS, '--resync-period', '3600'],
      {},
      operatorFlags,
    );
  let operator = await start();
  const watcher = readyWatch();
  const rows: Array<[string, string]> = [];
  try {
    await waitFor('operator caches synced', async () => (await fetch(`${operator.adminUrl}/readyz`)).ok, 60_000, 200);
    const resources = Array.from({ length: SCALE }, (_, i) =>
      KINDS.map((k) => ({ ...k, namespace: tenants[i % NAMESPACES] as string, name: `${k.prefix}-${i}` })),
    ).flat();
    const writes0 = await writeCounts();
    const cpu0 = {
      server: processCpuSeconds(pid),
      operator: processCpuSeconds(operator.child.pid as number),
      bench: process.cpuUsage(),
    };
    const busy0 = await reconcileSeconds(operator);
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CREATE_CONCURRENCY }, async () => {
        for (let i = next++; i < resources.length; i = next++) {
          const r = resources[i] as (typeof resources)[number];
          await custom.createNamespacedCustomObject({
            group: 'intake.dev',
            version: 'v1alpha1',
            namespace: r.namespace,
            plural: r.plural,
            body: {
              apiVersion: 'intake.dev/v1alpha1',
              kind: r.kind,
              metadata: { name: r.name, namespace: r.namespace },
              spec: {},
            },
          });
        }
      }),
    );
    const createdMs = performance.now() - t0;
    await waitFor(
      `${resources.length} Ready`,
      async () => exited(operator) || watcher.ready() >= resources.length,
      1_800_000,
      250,
    );
    if (exited(operator)) throw new Error(`the operator exited: ${operator.output().slice(-3000)}`);
    const readyMs = performance.now() - t0;
    const cpu1 = {
      server: processCpuSeconds(pid) - cpu0.server,
      operator: processCpuSeconds(operator.child.pid as number) - cpu0.operator,
      bench: ((u) => (u.user + u.system) / 1e6)(process.cpuUsage(cpu0.bench)),
    };
    const busy = (await reconcileSeconds(operator)) - busy0;
    const burstWrites = delta(await settledWriteCounts(), writes0);
    const operatorWrites = total(burstWrites) - resources.length; // less the benchmark's own creates
    const refusedWrites = [...burstWrites].filter(([k]) => k.endsWith(')')).reduce((n, [, v]) => n + v, 0);
    const rssBurst = peakRssMiB(operator.child.pid);

    rows.push(
      ['machine', `${availableParallelism()} cores, ${cpus()[0]?.model ?? 'unknown CPU'}, node ${process.version}`],
      [
        `created: ${SCALE} WebhookIntegrations and ${SCALE} ApiKeys over ${NAMESPACES} namespaces (${CREATE_CONCURRENCY} at a time)`,
        `${(createdMs / 1000).toFixed(1)} s`,
      ],
      [`first create -> all ${resources.length} Ready (wall)`, `${(readyMs / 1000).toFixed(1)} s`],
      [
        'CPU from first create to all Ready',
        `API server+etcd (the floor) ${cpu1.server.toFixed(1)} s, operator ${cpu1.operator.toFixed(1)} s, benchmark ${cpu1.bench.toFixed(1)} s`,
      ],
      [
        'wall / floor (target <= 1.5)',
        `${(readyMs / 1000 / cpu1.server).toFixed(2)} (${readyMs / 1000 / cpu1.server <= 1.5 ? 'PASS' : 'MISS'}); on ${availableParallelism()} cores the floor alone needs ${(cpu1.server / availableParallelism()).toFixed(1)} s`,
      ],
      [
        'API writes by the operator per resource (target <= 3)',
        `${(operatorWrites / resources.length).toFixed(4)} (${operatorWrites} for ${resources.length}, ${refusedWrites} of them refused; ${operatorWrites - refusedWrites <= 3 * resources.length ? 'PASS' : 'MISS'}); all writes: ${show(burstWrites)}`,
      ],
      [
        `operator's workers (--workers ${WORKERS}): busy in reconciles, on average`,
        `${(busy / (readyMs / 1000)).toFixed(1)} (${((busy / resources.length) * 1000).toFixed(0)} ms per resource)`,
      ],
      ['operator peak RSS (VmHWM)', `${rssBurst.toFixed(0)} MiB`],
    );
    process.stdout.write(`${rows.map(([a, b]) => `| ${a} | ${b} |`).join('\n')}\n`);

    // Resync: a new operator reads all 2N and their Secrets, and must find nothing to write.
    await operator.stop();
    const writes1 = await writeCounts();
    const r0 = { server: processCpuSeconds(pid), bench: process.cpuUsage() };
    const t1 = performance.now();
    operator = await start();
    const restarted = operator;
    await waitFor(
      'resync',
      async () => exited(restarted) || (await operatorReconciles(restarted)) >= resources.length,
      1_800_000,
      250,
    );
    if (exited(restarted)) throw new Error(`the operator exited: ${restarted.output().slice(-3000)}`);
    const resyncMs = performance.now() - t1;
    const r1 = {
      server: processCpuSeconds(pid) - r0.server,
      operator: processCpuSeconds(operator.child.pid as number),
    };
    const resyncWrites = delta(await settledWriteCounts(), writes1);
    rows.push(
      [
        `restarted operator: start -> all ${resources.length} reconciled`,
        `${(resyncMs / 1000).toFixed(1)} s (operator CPU ${r1.operator.toFixed(1)} s, API server+etcd ${r1.server.toFixed(1)} s)`,
      ],
      [
        'API writes in that resync (target 0)',
        `${total(resyncWrites)} (${total(resyncWrites) === 0 ? 'PASS' : 'MISS'})${total(resyncWrites) ? `: ${show(resyncWrites)}` : ''}`,
      ],
    );
    await operator.stop();

    // Route documents: one Secret per resource (as written) against the same routes in SHARDS Secrets.
    const perRoute = await api(
      'GET',
      `/api/v1/namespaces/${system}/secrets?labelSelector=${encodeURIComponent(ROUTE_SELECTOR)}`,
    );
    const routes = (
      JSON.parse(perRoute.body) as { items: Array<{ metadata: { name: string }; data: Record<string, string> }> }
    ).items;
    const shardSelector = 'bench.intake.dev/route-shard=true';
    for (let s = 0; s < SHARDS; s++) {
      const data: Record<string, string> = {};
      routes.forEach((r, i) => {
        if (i % SHARDS === s) data[r.metadata.name] = r.data['route.json'] as string;
      });
      const created = await api(
        'POST',
        `/api/v1/namespaces/${shards}/secrets`,
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: `routes-${s}`, labels: { 'bench.intake.dev/route-shard': 'true' } },
          data,
        }),
      );
      if (created.status >= 300) throw new Error(`shard ${s}: ${created.status} ${created.body.slice(0, 300)}`);
    }
    const listOne = await measureList(system, ROUTE_SELECTOR, pid);
    const listShards = await measureList(shards, shardSelector, pid);
    const changeOne = await measureWatchedChange(system, routes[0]?.metadata.name as string, ROUTE_SELECTOR);
    const changeShard = await measureWatchedChange(shards, 'routes-0', shardSelector);
    const fmt = (l: Awaited<ReturnType<typeof measureList>>): string =>
      `${l.items} objects, ${(l.bytes / 1048576).toFixed(1)} MiB, ${l.ms.toFixed(0)} ms with the client's JSON.parse, API server+etcd CPU ${l.cpu.toFixed(2)} s`;
    rows.push(
      [`LIST of the ${routes.length} route Secrets (one per resource; median of 3)`, fmt(listOne)],
      [`LIST of the same routes in ${SHARDS} shard Secrets (median of 3)`, fmt(listShards)],
      [
        'one route changed: what each watching ingester receives',
        `one per resource: ${changeOne.bytes} bytes in ${changeOne.ms.toFixed(0)} ms; sharded: ${changeShard.bytes} bytes in ${changeShard.ms.toFixed(0)} ms`,
      ],
    );
  } finally {
    watcher.stop();
    await operator.stop();
    process.stdout.write(`\n| measure | result |\n|---|---|\n${rows.map(([a, b]) => `| ${a} | ${b} |`).join('\n')}\n`);
    // No finalizers: the namespaces go without an operator. Left to the namespace controller.
    await kubectl(['delete', 'namespace', system, shards, ...tenants, '--wait=false']);
  }
}
