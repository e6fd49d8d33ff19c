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
 * "B alone", "B beside A" and a control phase alternate RUNS times. In the control phase B posts to
 * the ingester alone while A's generators post to a bare server on CPU 0 (bench/canned-refusal.ts,
 * below every other process) that answers the ingester's own 429: what B's p99 gains there is the
 * measurement's floor (the generators share CPU 1), not the ingester's doing. B must see no refusal
 * and keep its throughput and p99 within 10% of B alone; the p99 is judged on B's samples pooled
 * over all phases of a kind and on the median of the per-pair ratios, and must hold on both.
 * A fourth phase, "bare" (since 2026-11-26), is the floor for any server on node:http: A's
 * generators post to a second bare server that answers the same 429 on the ingester's own core at
 * the ingester's priority, doing no other work. What B's p99 loses there is what answering A's
 * requests at all costs B on one core (the kernel's TCP, node's HTTP parser and writer), which no
 * change inside the ingester can remove.
 *
 * Then the per-tenant limiter's cost on the single-event path: the ingester's throughput at
 * saturation (wrk) and the limiter's own work per request measured in this process on the same
 * routes (TenantLimiter admitRequest + take), as a share of the CPU time one request costs.
 *
 *   BENCH_NOISY_DURATION   seconds per phase (default 10)
 *   BENCH_NOISY_RUNS       alternating pairs of phases (default 5)
 *   BENCH_NOISY_RATE       tenant B's events/s (default 1000)
 *   BENCH_NOISY_A          what tenant A does beside B: rate, hostile or both (default both)
 *   BENCH_NOISY_CONTROL    0: no control phase (default 1)
 *   BENCH_NOISY_BARE       0: no "bare" phase (default 1)
 *   BENCH_NOISY_COMPARE    a second build's root (with dist/cmd/intake.js), e.g. the commit before a
 *                          change: both ingesters are measured in the same rounds, taking turns
 *   BENCH_NOISY_FLAGS      extra node flags for this build's ingester (space-separated)
 *   BENCH_NOISY_COMPARE_FLAGS  the same for the compared build's ingester (with BENCH_NOISY_COMPARE,
 *                          which may be this build's root to compare flags alone)
 *   BENCH_NOISY_COST       0: skip the limiter's cost (wrk at saturation; default 1)
 *   BENCH_NOISY_A_POLICY   how A's generators give way to B's on CPU 1: idle (SCHED_IDLE, default) or
 *                          nice19 (how this benchmark ran until 2026-11-25, to compare)
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
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
import { canConnect, peakRssMiB, pinnedServer, runBenchmark, track } from './processes.js';

const PHASE_SECONDS = Number(process.env.BENCH_NOISY_DURATION ?? 10);
const RATE_B = Number(process.env.BENCH_NOISY_RATE ?? 1000);
const RUNS = Number(process.env.BENCH_NOISY_RUNS ?? 5);
const A_LIMIT = 200;
const A_RATE = 10 * A_LIMIT;
const HOSTILE_RATE = 20;
const A_DOES = process.env.BENCH_NOISY_A ?? 'both';
const CONTROL = process.env.BENCH_NOISY_CONTROL !== '0';
const BARE = process.env.BENCH_NOISY_BARE !== '0';
const COMPARE = process.env.BENCH_NOISY_COMPARE || undefined;
const flags = (name: string): string[] => (process.env[name] ?? '').split(' ').filter(Boolean);
const FLAGS = flags('BENCH_NOISY_FLAGS');
const COMPARE_FLAGS = flags('BENCH_NOISY_COMPARE_FLAGS');
const COST = process.env.BENCH_NOISY_COST !== '0';
const A_POLICY = process.env.BENCH_NOISY_A_POLICY ?? 'idle';
if (!['idle', 'nice19'].includes(A_POLICY))
  throw new Error(`BENCH_NOISY_A_POLICY must be idle or nice19, not ${JSON.stringify(A_POLICY)}`);
const BACKGROUND = A_POLICY === 'idle' ? ['chrt', '--idle', '0'] : ['nice', '-n', '19'];
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
  /** Every counted latency in µs (tenant B only): pooled over the phases of a kind. */
  samples?: number[];
}

/**
 * Load from bench/open-loop.ts in a process of its own on CPU 1: evenly spaced sends, latency in
 * microseconds from when each request was due. Tenant A's generators run under SCHED_IDLE
 * (`chrt --idle 0`): on the shared client core any runnable normal task preempts them at once, so
 * they never delay B's sends or B's clock (what is measured is the ingester, not the load
 * generators). Until 2026-11-25 they ran at nice 19, which the kernel's scheduler (EEVDF) only
 * weighs, without preempting on wake-up; A's achieved rate is in the table to show that SCHED_IDLE
 * still leaves it all the CPU it needs.
 */
async function load(o: {
  url: string;
  user: string;
  body: string;
  rate: number;
  seconds: number;
  connections: number;
  background?: boolean;
  samples?: boolean;
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
  const argv = o.background ? [...BACKGROUND, ...pinned] : pinned;
  const child = spawn(argv[0] as string, argv.slice(1), {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, OPEN_LOOP_SAMPLES: o.samples ? '1' : '0' },
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`open-loop exited with ${code}`);
  return JSON.parse(out) as Load;
}

const singleEvents = (url: string, user: string, rate: number, seconds: number, background = false): Promise<Load> =>
  load({ url, user, body: EVENT, rate, seconds, connections: 32, background, samples: !background });

/** The hostile expression's payload, HOSTILE_RATE a second. */
const hostile = (url: string, seconds: number): Promise<Load> =>
  load({ url, user: 'hostile', body: '{"any": 1}', rate: HOSTILE_RATE, seconds, connections: 8, background: true });

interface Phase {
  b: Load;
  a?: Load;
  hostile?: Load;
}

/** B against the ingester on `port`; A (if any) against `aPort`: the ingester, or the control server. */
async function phase(port: number, aPort: number | undefined): Promise<Phase> {
  const base = `http://127.0.0.1:${port}/events/webhook_`;
  const aBase = `http://127.0.0.1:${aPort}/events/webhook_`;
  const withA = aPort !== undefined;
  const [b, a, h] = await Promise.all([
    singleEvents(`${base}steady`, 'steady', RATE_B, PHASE_SECONDS),
    withA && A_DOES !== 'hostile' ? singleEvents(`${aBase}noisy`, 'noisy', A_RATE, PHASE_SECONDS, true) : undefined,
    withA && A_DOES !== 'rate' ? hostile(`${aBase}hostile`, PHASE_SECONDS) : undefined,
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

/** The 99th percentile of every sample of these phases together, in ms (as open-loop takes it). */
function pooledP99(xs: Load[]): number {
  const all = Float64Array.from(xs.flatMap((x) => x.samples ?? [])).sort();
  return (all[Math.min(all.length - 1, Math.floor(0.99 * all.length))] ?? Number.NaN) / 1000;
}

/** One ingester under test, with what its rounds measured. */
interface Subject {
  label: string;
  child: ChildProcess;
  port: number;
  alone: Load[];
  beside: Phase[];
  control: Phase[];
  bare: Phase[];
}

async function startIngester(label: string, root: string, nodeFlags: string[]): Promise<Subject> {
  const [port, admin] = [await freePort(), await freePort()];
  const config = {
    listen: `127.0.0.1:${port}`,
    adminListen: `127.0.0.1:${admin}`,
    logLevel: 'warn',
    sinks: { log: { path: join(dir, `events-${port}.log`) } },
    tenantLimits: GENEROUS,
    routes: ROUTES,
  };
  writeFileSync(join(dir, `noisy-${port}.yaml`), stringify(config));
  const child = pinnedServer(`ingester (${label})`, '0', process.execPath, [
    '--max-semi-space-size=4',
    ...nodeFlags,
    join(root, 'dist/cmd/intake.js'),
    'ingester',
    '--config',
    join(dir, `noisy-${port}.yaml`),
  ]);
  await waitFor(label, async () => (await fetch(`http://127.0.0.1:${admin}/readyz`)).ok, 20_000, 100);
  return { label, child, port, alone: [], beside: [], control: [], bare: [] };
}

/** A's refusal as the ingester answers it (status, headers, body), for the control server to repeat. */
async function cannedRefusal(port: number): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  for (let i = 0; i < 10 * A_LIMIT; i++) {
    const res = await fetch(`http://127.0.0.1:${port}/events/webhook_noisy`, {
      method: 'POST',
      headers: { ...tenantAuth('noisy'), 'content-type': 'application/json' },
      body: EVENT,
    });
    const body = await res.text();
    if (res.status !== 429) continue;
    const headers: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      if (!['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(k)) headers[k] = v;
    });
    return { status: res.status, headers, body };
  }
  throw new Error('tenant A was never refused');
}

async function main(): Promise<void> {
  const withFlags = (label: string, f: string[]): string => (f.length > 0 ? `${label} (${f.join(' ')})` : label);
  const subjects = [await startIngester(withFlags('this build', FLAGS), ROOT, FLAGS)];
  if (COMPARE)
    subjects.push(await startIngester(withFlags(`compare: ${COMPARE}`, COMPARE_FLAGS), COMPARE, COMPARE_FLAGS));
  const canned = CONTROL || BARE ? await cannedRefusal((subjects[0] as Subject).port) : undefined;
  type Canned = Awaited<ReturnType<typeof cannedRefusal>>;
  /**
   * A bare server on CPU 0 answering A's requests with `canned`: under SCHED_IDLE (the control: it
   * never takes the ingester's CPU), or at the ingester's own priority (the bare phase: it competes
   * for the core as the ingester's own refusals do, at node:http's cost alone).
   */
  const bareServer = async (what: string, refusal: Canned, idle: boolean): Promise<number> => {
    const port = await freePort();
    const argv = [
      'taskset',
      '-c',
      '0',
      process.execPath,
      join(ROOT, 'dist/bench/canned-refusal.js'),
      String(port),
      String(refusal.status),
      JSON.stringify(refusal.headers),
      refusal.body,
    ];
    const command = idle ? ['chrt', '--idle', '0', ...argv] : argv;
    track(spawn(command[0] as string, command.slice(1), { stdio: ['ignore', 'ignore', 'inherit'] }));
    await waitFor(what, () => canConnect(port), 10_000, 50);
    return port;
  };
  const controlPort = CONTROL && canned ? await bareServer('control server', canned, true) : undefined;
  const barePort = BARE && canned ? await bareServer('bare server', canned, false) : undefined;

  for (const s of subjects) await phase(s.port, s.port); // warm-up, A beside B
  for (let i = 0; i < RUNS; i++) {
    // With two builds, they take turns, and the one that goes first alternates round by round.
    const order = i % 2 === 0 ? subjects : [...subjects].reverse();
    for (const s of order) {
      s.alone.push((await phase(s.port, undefined)).b);
      s.beside.push(await phase(s.port, s.port));
      if (controlPort !== undefined) s.control.push(await phase(s.port, controlPort));
      if (barePort !== undefined) s.bare.push(await phase(s.port, barePort));
    }
  }

  const f = (n: number, d = 0): string => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
  const pct = (r: number): string => `${f(r * 100, 1)}%`;
  const verdict = (ok: boolean): string => (ok ? 'PASS' : 'MISS');
  const lines: string[] = [
    `Noisy neighbour. Machine: ${process.env.BENCH_NPROC ?? availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}, load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(
        ' / ',
      )} at the end; the ingester on CPU 0 (log sink to a file), the load on CPU 1 (tenant A's generators ${A_POLICY === 'idle' ? 'under SCHED_IDLE' : 'at nice 19'}). Tenant B: ${RATE_B} single events/s (open loop). Tenant A (${A_DOES}): ${A_RATE} events/s against a limit of ${A_LIMIT}/s, and/or ${HOSTILE_RATE} payloads/s for an expression that would run for seconds each (team-a mapping CPU ${50} ms/s). ${PHASE_SECONDS} s phases, "B alone", "B beside A"${CONTROL ? ', the control (A against a bare server answering its 429, SCHED_IDLE)' : ''}${BARE ? ", bare (A against a bare server answering its 429 on the ingester's core at its priority)" : ''} in turn, ${RUNS} rounds${COMPARE ? ', the two builds taking turns' : ''}. Latencies from when each request was due. "pooled": the p99 of all B's samples of that kind of phase together.`,
  ];
  for (const s of subjects) {
    const bAlone = medianLoad(s.alone);
    const bBeside = medianLoad(s.beside.map((p) => p.b));
    const aLoads = s.beside.flatMap((p) => (p.a ? [p.a] : []));
    const aNoisy = aLoads.length > 0 ? medianLoad(aLoads) : undefined;
    const aHostile = sumStatus(s.beside.map((p) => p.hostile?.byStatus ?? {}));
    const pooledAlone = pooledP99(s.alone);
    const pooledBeside = pooledP99(s.beside.map((p) => p.b));
    const pairRatios = s.beside.map((p, i) => p.b.p99 / (s.alone[i] as Load).p99);
    /** A phase where A posts elsewhere (control, bare): B's figures, A's, and B's p99 against B alone. */
    const against = (phases: Phase[]) =>
      phases.length === 0
        ? undefined
        : {
            b: medianLoad(phases.map((p) => p.b)),
            a: phases.flatMap((p) => (p.a ? [p.a] : [])),
            pooled: pooledP99(phases.map((p) => p.b)),
            ratios: phases.map((p, i) => p.b.p99 / (s.alone[i] as Load).p99),
          };
    const control = against(s.control);
    const bare = against(s.bare);
    const pooledRatio = pooledBeside / pooledAlone;
    const pairRatio = median(pairRatios);
    const p99Ok = pooledRatio <= 1.1 && pairRatio <= 1.1;
    const row = (phase: string, tenant: string, l: Load, pooled = Number.NaN): string =>
      `| ${phase} | ${tenant} | ${f(l.rps)} | ${f(l.p50, 2)} | ${f(l.p99, 2)} | ${f(pooled, 2)} | ${statuses(l.byStatus)}${l.errors ? `, errors: ${l.errors}` : ''} |`;
    lines.push(
      '',
      `**${s.label}** (peak RSS ${f(peakRssMiB(s.child.pid))} MiB)`,
      '',
      '| phase | tenant | requests/s | p50 ms | p99 ms (median) | p99 ms (pooled) | answers |',
      '|---|---|---|---|---|---|---|',
      row('B alone', 'B', bAlone, pooledAlone),
      row('B beside A', 'B', bBeside, pooledBeside),
      ...(aNoisy ? [row('B beside A', 'A at 10x its limit', aNoisy)] : []),
      ...(A_DOES !== 'rate' ? [`| B beside A | A's hostile expression | | | | | ${statuses(aHostile)} |`] : []),
      ...(control ? [row('control', 'B (A against the bare server, SCHED_IDLE)', control.b, control.pooled)] : []),
      ...(control && control.a.length > 0
        ? [row('control', 'A at 10x, against the bare server', medianLoad(control.a))]
        : []),
      ...(bare ? [row('bare', "B (A against a bare server on the ingester's core)", bare.b, bare.pooled)] : []),
      ...(bare && bare.a.length > 0 ? [row('bare', 'A at 10x, against that server', medianLoad(bare.a))] : []),
      '',
      `B's p99 beside A / alone, each round: ${pairRatios.map(pct).join(' / ')}` +
        (control ? `; control / alone, each round: ${control.ratios.map(pct).join(' / ')}` : '') +
        (bare ? `; bare / alone, each round: ${bare.ratios.map(pct).join(' / ')}` : ''),
      '',
      '| target | measured | wanted | verdict |',
      '|---|---|---|---|',
      `| B's throughput beside A / alone | ${pct(bBeside.rps / bAlone.rps)} | >= 90% | ${verdict(bBeside.rps >= 0.9 * bAlone.rps)} |`,
      `| B's p99 beside A / alone: pooled; median of the rounds' ratios | ${pct(pooledRatio)} (${f(pooledBeside, 2)} vs ${f(pooledAlone, 2)} ms); ${pct(pairRatio)} | both <= 110% | ${verdict(p99Ok)} |`,
      `| (as measured until 2026-11-25: median p99 beside / median p99 alone) | ${pct(bBeside.p99 / bAlone.p99)} | | |`,
      ...(control
        ? [
            `| (the floor: B's p99 in the control phase / alone: pooled; median of the rounds' ratios) | ${pct(control.pooled / pooledAlone)}; ${pct(median(control.ratios))} | | |`,
          ]
        : []),
      ...(bare
        ? [
            `| (node:http's floor: B's p99 beside a bare server answering A on the ingester's core / alone: pooled; median of the rounds' ratios) | ${pct(bare.pooled / pooledAlone)}; ${pct(median(bare.ratios))} | | |`,
          ]
        : []),
      `| B's refusals and errors beside A | ${refusals(bBeside)} | 0 | ${verdict(refusals(bBeside) === 0)} |`,
    );
  }
  if (COST) {
    const port = (subjects[0] as Subject).port;
    saturatedRps(port); // warm-up
    const saturated = median(Array.from({ length: RUNS }, () => saturatedRps(port)));
    const limiterNs = limiterNsPerRequest();
    const limiterShare = (limiterNs * saturated) / 1e9;
    lines.push(
      '',
      '| target (this build) | measured | wanted | verdict |',
      '|---|---|---|---|',
      `| the limiter's share of a single-event request's CPU (${f(limiterNs)} ns x ${f(saturated)} requests/s at saturation) | ${f(limiterShare * 100, 2)}% | <= 3% | ${verdict(limiterShare <= 0.03)} |`,
    );
  }
  const table = lines.join('\n');
  process.stdout.write(`\n${table}\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `\n${table}\n`, { flag: 'a' });
}

runBenchmark(main);
