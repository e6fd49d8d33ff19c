/**
 * The noisy-neighbour benchmark (part of make bench): can one tenant slow another?
 *
 * One built ingester on CPU 0 (log sink to a file), three integrations:
 *   - `steady` (namespace team-b): tenant B, single events at a fixed rate (open loop: requests go
 *     out on schedule whatever the answers, so a slowed server shows as latency, not as fewer sends);
 *   - `noisy` (namespace team-a): tenant A at 10x its events/s limit;
 *   - `hostile` (namespace team-a): tenant A's expression that would run for seconds in one built-in
 *     call ($distinct over 100,000 items), posted HOSTILE_RATE times a second: allowed to run, that
 *     is ten cores' worth of CPU asked for every second.
 * Every load is an open loop with evenly spaced sends (bench/open-loop.ts): a rate, as a sender's
 * clock makes it, not autocannon's burst at the start of each second.
 * "B alone" and "B beside A" alternate RUNS times; the tables quote medians. B must see no refusal
 * and keep its throughput and p99 within 10% of B alone.
 *
 * Then the per-tenant limiter's cost on the single-event path: the ingester's throughput at
 * saturation (wrk) and the limiter's own work per request measured in this process on the same
 * routes (TenantLimiter admitRequest + take), as a share of the CPU time one request costs.
 *
 *   BENCH_NOISY_DURATION   seconds per phase (default 10)
 *   BENCH_NOISY_RUNS       alternating pairs of phases (default 5)
 *   BENCH_NOISY_RATE       tenant B's events/s (default 1000)
 *   BENCH_NOISY_A          what tenant A does beside B: rate, hostile or both (default both)
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ROOT } from '../test/support/paths.js';
import { freePort } from '../test/support/ports.js';
import { waitFor } from '../test/support/waiting.js';
import { TenantLimiter } from '../ingester/limits/tenant-limiter.js';
import { RouteTable } from '../ingester/routing/route-table.js';
import { DEFAULT_TENANT_LIMITS, mergeTenantLimitDefaults } from '../api/limits.js';
import type { Route } from '../api/route.js';
import { tenantAuth, tenantRoute } from '../test/support/credentials.js';
import { median } from '../test/support/stats.js';
import { peakRssMiB, pinnedServer, runBenchmark } from './processes.js';

const PHASE_SECONDS = Number(process.env.BENCH_NOISY_DURATION ?? 10);
const RATE_B = Number(process.env.BENCH_NOISY_RATE ?? 1000);
const RUNS = Number(process.env.BENCH_NOISY_RUNS ?? 5);
const A_LIMIT = 200;
const A_RATE = 10 * A_LIMIT;
const HOSTILE_RATE = 20;
const A_DOES = process.env.BENCH_NOISY_A ?? 'both';
if (!['rate', 'hostile', 'both'].includes(A_DOES))
  throw new Error(`BENCH_NOISY_A must be rate, hostile or both, not ${JSON.stringify(A_DOES)}`);
const dir = mkdtempSync(join(process.env.BENCH_DIR || tmpdir(), 'intake-bench-noisy-'));

const webhook = (name: string, namespace: string, extra: Record<string, unknown> = {}): Route =>
  tenantRoute(name, namespace, extra) as Route;

/** Tenant B is far inside its limits; tenant A has a low events/s limit and a small mapping CPU budget. */
const ROUTES: Route[] = [
  webhook('steady', 'team-b'),
  webhook('noisy', 'team-a', { limits: { eventsPerSecond: A_LIMIT, eventsBurst: A_LIMIT } }),
  webhook('hostile', 'team-a', {
    mapping: { expression: '{"source": "h", "severity": $count($distinct([1..100000]))}' },
    limits: { namespace: { mappingCpuMillisPerSecond: 50, mappingCpuBurstMillis: 500 } },
  }),
];
const UNLIMITED = 1_000_000_000;
const GENEROUS = {
  namespace: { eventsPerSecond: UNLIMITED, eventsBurst: UNLIMITED },
  integration: { eventsPerSecond: UNLIMITED, eventsBurst: UNLIMITED },
};

const EVENT = JSON.stringify({
  source: 'web-01.example.com',
  severity: 'critical',
  class: 'cpu',
  type: 'high',
  description: 'CPU above 95%',
});

interface Load {
  rps: number;
  p50: number;
  p99: number;
  byStatus: Record<string, number>;
  errors: number;
}

/**
 * Load from bench/open-loop.ts in a process of its own on CPU 1: evenly spaced sends, latency in
 * microseconds from when each request was due. Tenant A's generators run at nice 19, so that on
 * the shared client core they never delay B's sends or B's clock (what is measured is the
 * ingester, not the load generators).
 */
async function load(o: {
  url: string;
  user: string;
  body: string;
  rate: number;
  seconds: number;
  connections: number;
  nice?: boolean;
}): Promise<Load> {
  const generator = [
    process.execPath,
    join(ROOT, 'dist/bench/open-loop.js'),
    o.url,
    tenantAuth(o.user).authorization,
    o.body,
    String(o.rate),
    String(o.seconds),
    String(o.connections),
  ];
  const pinned = ['taskset', '-c', '1', ...generator];
  const argv = o.nice ? ['nice', '-n', '19', ...pinned] : pinned;
  const child = spawn(argv[0] as string, argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`open-loop exited with ${code}`);
  return JSON.parse(out) as Load;
}

const singleEvents = (url: string, user: string, rate: number, seconds: number, nice = false): Promise<Load> =>
  load({ url, user, body: EVENT, rate, seconds, connections: 32, nice });

/** The hostile expression's payload, HOSTILE_RATE a second. */
const hostile = (url: string, seconds: number): Promise<Load> =>
  load({ url, user: 'hostile', body: '{"any": 1}', rate: HOSTILE_RATE, seconds, connections: 8, nice: true });

interface Phase {
  b: Load;
  a?: Load;
  hostile?: Load;
}

async function phase(port: number, withA: boolean): Promise<Phase> {
  const base = `http://127.0.0.1:${port}/events/webhook_`;
  const [b, a, h] = await Promise.all([
    singleEvents(`${base}steady`, 'steady', RATE_B, PHASE_SECONDS),
    withA && A_DOES !== 'hostile' ? singleEvents(`${base}noisy`, 'noisy', A_RATE, PHASE_SECONDS, true) : undefined,
    withA && A_DOES !== 'rate' ? hostile(`${base}hostile`, PHASE_SECONDS) : undefined,
  ]);
  return { b, ...(a ? { a } : {}), ...(h ? { hostile: h } : {}) };
}

/** The single-event path at saturation: wrk on CPU 1 against the ingester on CPU 0. */
function saturatedRps(port: number): number {
  const script = join(dir, 'single.lua');
  writeFileSync(
    script,
    [
      `wrk.method = "POST"`,
      `wrk.body = ${JSON.stringify(EVENT)}`,
      `wrk.headers["Content-Type"] = "application/json"`,
      `wrk.headers["Authorization"] = ${JSON.stringify(tenantAuth('steady').authorization)}`,
      '',
    ].join('\n'),
  );
  const r = spawnSync(
    'taskset',
    [
      '-c',
      '1',
      'wrk',
      '-t1',
      '-c32',
      `-d${PHASE_SECONDS}s`,
      '-s',
      script,
      `http://127.0.0.1:${port}/events/webhook_steady`,
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}`);
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1]);
}

/** The limiter's own work for one single-event request (admit before the body, take after validation), in ns. */
function limiterNsPerRequest(): number {
  const limiter = new TenantLimiter({
    defaults: mergeTenantLimitDefaults(DEFAULT_TENANT_LIMITS, GENEROUS),
    mode: 'file',
  });
  const { table } = RouteTable.build(
    ROUTES.map((route) => ({ route, source: 'bench' })),
    { allowPlaintext: true },
  );
  limiter.sync(table.entries());
  const entry = [...table.entries()].find((e) => e.name === 'steady');
  if (!entry) throw new Error('route steady missing');
  const loop = (n: number): number => {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      limiter.admitRequest(entry);
      limiter.take(entry, 1);
    }
    return Number(process.hrtime.bigint() - start) / n;
  };
  loop(200_000);
  return median(Array.from({ length: 5 }, () => loop(1_000_000)));
}

const medianLoad = (xs: Load[]): Load => ({
  rps: median(xs.map((x) => x.rps)),
  p50: median(xs.map((x) => x.p50)),
  p99: median(xs.map((x) => x.p99)),
  byStatus: sumStatus(xs.map((x) => x.byStatus)),
  errors: xs.reduce((n, x) => n + x.errors, 0),
});
const sumStatus = (xs: Record<string, number>[]): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const x of xs) for (const [k, v] of Object.entries(x)) out[k] = (out[k] ?? 0) + v;
  return out;
};
const statuses = (s: Record<string, number>): string =>
  Object.entries(s)
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ') || 'none';
const refusals = (l: Load): number =>
  Object.entries(l.byStatus).reduce((n, [code, v]) => (code === '200' ? n : n + v), 0) + l.errors;

async function main(): Promise<void> {
  const [port, admin] = [await freePort(), await freePort()];
  const config = {
    listen: `127.0.0.1:${port}`,
    adminListen: `127.0.0.1:${admin}`,
    logLevel: 'warn',
    sinks: { log: { path: join(dir, 'events.log') } },
    tenantLimits: GENEROUS,
    routes: ROUTES,
  };
  writeFileSync(join(dir, 'noisy.yaml'), stringify(config));
  const child = pinnedServer('ingester', '0', process.execPath, [
    '--max-semi-space-size=4',
    join(ROOT, 'dist/cmd/intake.js'),
    'ingester',
    '--config',
    join(dir, 'noisy.yaml'),
  ]);
  await waitFor('ingester', async () => (await fetch(`http://127.0.0.1:${admin}/readyz`)).ok, 20_000, 100);

  await phase(port, false); // warm-up
  const alone: Load[] = [];
  const beside: Phase[] = [];
  for (let i = 0; i < RUNS; i++) {
    alone.push((await phase(port, false)).b);
    beside.push(await phase(port, true));
  }
  const bAlone = medianLoad(alone);
  const bBeside = medianLoad(beside.map((p) => p.b));
  const aLoads = beside.flatMap((p) => (p.a ? [p.a] : []));
  const aNoisy = aLoads.length > 0 ? medianLoad(aLoads) : undefined;
  const aHostile = sumStatus(beside.map((p) => p.hostile?.byStatus ?? {}));

  saturatedRps(port); // warm-up
  const saturated = median(Array.from({ length: RUNS }, () => saturatedRps(port)));
  const limiterNs = limiterNsPerRequest();
  const limiterShare = (limiterNs * saturated) / 1e9;
  const rss = peakRssMiB(child.pid);

  const f = (n: number, d = 0): string => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
  const pct = (a: number, b: number): string => `${f((a / b) * 100, 1)}%`;
  const verdict = (ok: boolean): string => (ok ? 'PASS' : 'MISS');
  const table = [
    `Noisy neighbour. Machine: ${process.env.BENCH_NPROC ?? availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}; the ingester on CPU 0 (log sink to a file), the load on CPU 1. Tenant B: ${RATE_B} single events/s (open loop). Tenant A (${A_DOES}): ${A_RATE} events/s against a limit of ${A_LIMIT}/s, and/or ${HOSTILE_RATE} payloads/s for an expression that would run for seconds each (team-a mapping CPU ${50} ms/s). ${PHASE_SECONDS} s phases, "B alone" and "B beside A" alternating, medians of ${RUNS}. Peak RSS ${f(rss)} MiB.`,
    '',
    '| phase | tenant | requests/s | p50 ms | p99 ms | answers |',
    '|---|---|---|---|---|---|',
    `| B alone | B | ${f(bAlone.rps)} | ${f(bAlone.p50, 2)} | ${f(bAlone.p99, 2)} | ${statuses(bAlone.byStatus)} |`,
    `| B beside A | B | ${f(bBeside.rps)} | ${f(bBeside.p50, 2)} | ${f(bBeside.p99, 2)} | ${statuses(bBeside.byStatus)} |`,
    ...(aNoisy
      ? [
          `| B beside A | A at 10x its limit | ${f(aNoisy.rps)} | ${f(aNoisy.p50, 2)} | ${f(aNoisy.p99, 2)} | ${statuses(aNoisy.byStatus)} |`,
        ]
      : []),
    ...(A_DOES !== 'rate' ? [`| B beside A | A's hostile expression | | | | ${statuses(aHostile)} |`] : []),
    '',
    '| target | measured | wanted | verdict |',
    '|---|---|---|---|',
    `| B's throughput beside A / alone | ${pct(bBeside.rps, bAlone.rps)} | >= 90% | ${verdict(bBeside.rps >= 0.9 * bAlone.rps)} |`,
    `| B's p99 beside A / alone | ${pct(bBeside.p99, bAlone.p99)} (${f(bBeside.p99, 2)} vs ${f(bAlone.p99, 2)} ms) | <= 110% | ${verdict(bBeside.p99 <= 1.1 * bAlone.p99)} |`,
    `| B's refusals and errors beside A | ${refusals(bBeside)} | 0 | ${verdict(refusals(bBeside) === 0)} |`,
    `| the limiter's share of a single-event request's CPU (${f(limiterNs)} ns x ${f(saturated)} requests/s at saturation) | ${f(limiterShare * 100, 2)}% | <= 3% | ${verdict(limiterShare <= 0.03)} |`,
  ].join('\n');
  process.stdout.write(`\n${table}\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `\n${table}\n`, { flag: 'a' });
}

runBenchmark(main);
