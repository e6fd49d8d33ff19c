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
 * Every load is an open loop with evenly spaced sends (bench/support/open-loop.ts): a rate, as a sender's
 * clock makes it, not autocannon's burst at the start of each second.
 * "B alone", "B beside A" and a control phase alternate RUNS times. In the control phase B posts to
 * the ingester alone while A's generators post to a bare server on CPU 0 (bench/noisy/canned-refusal.ts,
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
 * Then the attack shapes (bench/noisy/noisy-shapes.ts), each on a fresh ingester of its own: slow
 * pre-auth bodies, concurrent slow expressions, a failing remote write tenant, a guard-tripping
 * stranger. Per shape, "B alone", "B beside A" and the bare floor (A's same attack against a bare
 * node:http server on the ingester's core) take turns RUNS times; the table gives B's p99 beside A
 * over B alone next to the floor's same ratio, and their quotient (wanted: at most 1.1).
 *
 *   BENCH_NOISY_DURATION   seconds per phase (default 10)
 *   BENCH_NOISY_RUNS       alternating pairs of phases (default 5)
 *   BENCH_NOISY_SHAPE_RUNS rounds per attack shape (default 9: at B's p99 of a few ms one stall of
 *                          a few ms decides a round, and rounds of one shape ran 0.7x-2.4x; the
 *                          median of nine moves far less than that of five)
 *   BENCH_NOISY_RATE       tenant B's events/s (default 1000)
 *   BENCH_NOISY_A          what tenant A does beside B: rate, hostile or both (default both), or none
 *                          (no classic rounds: only the attack shapes, and the limiter's cost)
 *   BENCH_NOISY_SHAPES     the attack shapes: all (default), none, or a comma-separated list of
 *                          slow-bodies, slow-expressions, failing-remote-write, guard-stranger
 *   BENCH_NOISY_CONTROL    0: no control phase (default 1)
 *   BENCH_NOISY_BARE       0: no "bare" phase (default 1)
 *   BENCH_NOISY_COMPARE    a second build's root (with dist/cmd/intake.js), e.g. the commit before a
 *                          change: both ingesters are measured in the same rounds, taking turns
 *   BENCH_NOISY_FLAGS      extra node flags for this build's ingester (space-separated); each
 *                          ingester's stdout (--trace-gc's lines) is kept in the run's directory
 *                          (BENCH_DIR, else the system's temporary one) as ingester-PORT.stdout
 *   BENCH_NOISY_COMPARE_FLAGS  the same for the compared build's ingester (with BENCH_NOISY_COMPARE,
 *                          which may be this build's root to compare flags alone)
 *   BENCH_NOISY_COST       0: skip the limiter's cost (wrk at saturation; default 1)
 *   BENCH_NOISY_A_POLICY   how A's generators give way to B's on CPU 1: idle (SCHED_IDLE, default) or
 *                          nice19 (how this benchmark ran until 2026-11-25, to compare)
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../test/support/paths.js';
import { TenantLimiter } from '../../ingester/limits/tenant-limiter.js';
import { RouteTable } from '../../ingester/routing/route-table.js';
import { DEFAULT_TENANT_LIMITS, mergeTenantLimitDefaults } from '../../api/limits.js';
import type { Route } from '../../api/route.js';
import { tenantAuth, tenantRoute } from '../../test/support/credentials.js';
import { median } from '../../test/support/stats.js';
import { peakRssMiB, runBenchmark } from '../support/processes.js';
import {
  A_POLICY,
  bareServer,
  cannedAnswer,
  EVENT,
  load,
  medianLoad,
  pooledP99,
  refusals,
  startNoisyIngester,
  statuses,
  stopServer,
  sumStatus,
  type Canned,
  type Load,
} from './noisy-load.js';
import { selectShapes, shapesReport } from './noisy-shapes.js';

const PHASE_SECONDS = Number(process.env.BENCH_NOISY_DURATION ?? 10);
const RATE_B = Number(process.env.BENCH_NOISY_RATE ?? 1000);
const RUNS = Number(process.env.BENCH_NOISY_RUNS ?? 5);
const SHAPE_RUNS = Number(process.env.BENCH_NOISY_SHAPE_RUNS ?? 9);
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
const SHAPES = selectShapes(process.env.BENCH_NOISY_SHAPES);
if (!['rate', 'hostile', 'both', 'none'].includes(A_DOES))
  throw new Error(`BENCH_NOISY_A must be rate, hostile, both or none, not ${JSON.stringify(A_DOES)}`);
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

const singleEvents = (url: string, user: string, rate: number, seconds: number, background = false): Promise<Load> =>
  load({
    url,
    authorization: tenantAuth(user).authorization,
    body: EVENT,
    rate,
    seconds,
    connections: 32,
    background,
    samples: !background,
  });

/** The hostile expression's payload, HOSTILE_RATE a second. */
const hostile = (url: string, seconds: number): Promise<Load> =>
  load({
    url,
    authorization: tenantAuth('hostile').authorization,
    body: '{"any": 1}',
    rate: HOSTILE_RATE,
    seconds,
    connections: 8,
    background: true,
  });

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
  const { child, port } = await startNoisyIngester({
    label,
    root,
    nodeFlags,
    dir,
    routes: ROUTES,
    tenantLimits: GENEROUS,
  });
  return { label, child, port, alone: [], beside: [], control: [], bare: [] };
}

/**
 * A's refusal as the ingester answers it (status, headers, body), for the control server to repeat.
 * Twice A's burst at once, so that A is refused however slowly a busy machine sends.
 */
async function cannedRefusal(port: number): Promise<Canned> {
  for (let round = 0; round < 5; round++) {
    const answers = await Promise.all(
      Array.from({ length: 2 * A_LIMIT }, () =>
        fetch(`http://127.0.0.1:${port}/events/webhook_noisy`, {
          method: 'POST',
          headers: { ...tenantAuth('noisy'), 'content-type': 'application/json' },
          body: EVENT,
        }),
      ),
    );
    const refused = answers.find((res) => res.status === 429);
    for (const res of answers) if (res !== refused) await res.arrayBuffer();
    if (refused) return cannedAnswer(refused);
  }
  throw new Error('tenant A was never refused');
}

const f = (n: number, d = 0): string => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
const pct = (r: number): string => `${f(r * 100, 1)}%`;
const verdict = (ok: boolean): string => (ok ? 'PASS' : 'MISS');
const machine = (): string =>
  `Machine: ${process.env.BENCH_NPROC ?? availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}, load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ')} at the end`;

/** Tenant A at 10x its rate and/or with its hostile expression beside B, in rounds; the table. */
async function classicRounds(subjects: Subject[]): Promise<string[]> {
  const canned = CONTROL || BARE ? await cannedRefusal((subjects[0] as Subject).port) : undefined;
  const controlServer = CONTROL && canned ? await bareServer('control server', canned, true) : undefined;
  const bareOne = BARE && canned ? await bareServer('bare server', canned, false) : undefined;
  const [controlPort, barePort] = [controlServer?.port, bareOne?.port];

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

  for (const server of [controlServer, bareOne]) if (server) await stopServer(server.child);

  const lines: string[] = [
    `Noisy neighbour. ${machine()}; the ingester on CPU 0 (log sink to a file), the load on CPU 1 (tenant A's generators ${A_POLICY === 'idle' ? 'under SCHED_IDLE' : 'at nice 19'}). Tenant B: ${RATE_B} single events/s (open loop). Tenant A (${A_DOES}): ${A_RATE} events/s against a limit of ${A_LIMIT}/s, and/or ${HOSTILE_RATE} payloads/s for an expression that would run for seconds each (team-a mapping CPU ${50} ms/s). ${PHASE_SECONDS} s phases, "B alone", "B beside A"${CONTROL ? ', the control (A against a bare server answering its 429, SCHED_IDLE)' : ''}${BARE ? ", bare (A against a bare server answering its 429 on the ingester's core at its priority)" : ''} in turn, ${RUNS} rounds${COMPARE ? ', the two builds taking turns' : ''}. Latencies from when each request was due. "pooled": the p99 of all B's samples of that kind of phase together.`,
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
  return lines;
}

/** The limiter's cost on the single-event path of the ingester on `port`; the table. */
function costTable(port: number): string[] {
  saturatedRps(port); // warm-up
  const saturated = median(Array.from({ length: RUNS }, () => saturatedRps(port)));
  const limiterNs = limiterNsPerRequest();
  const limiterShare = (limiterNs * saturated) / 1e9;
  return [
    '',
    '| target (this build) | measured | wanted | verdict |',
    '|---|---|---|---|',
    `| the limiter's share of a single-event request's CPU (${f(limiterNs)} ns x ${f(saturated)} requests/s at saturation) | ${f(limiterShare * 100, 2)}% | <= 3% | ${verdict(limiterShare <= 0.03)} |`,
  ];
}

async function main(): Promise<void> {
  const withFlags = (label: string, f: string[]): string => (f.length > 0 ? `${label} (${f.join(' ')})` : label);
  const builds = [
    { label: withFlags('this build', FLAGS), root: ROOT, nodeFlags: FLAGS },
    ...(COMPARE
      ? [{ label: withFlags(`compare: ${COMPARE}`, COMPARE_FLAGS), root: COMPARE, nodeFlags: COMPARE_FLAGS }]
      : []),
  ];
  const lines: string[] = [];
  if (A_DOES !== 'none' || COST) {
    const subjects: Subject[] = [];
    for (const b of builds) subjects.push(await startIngester(b.label, b.root, b.nodeFlags));
    if (A_DOES !== 'none') lines.push(...(await classicRounds(subjects)));
    if (COST) lines.push(...costTable((subjects[0] as Subject).port));
    for (const s of subjects) await stopServer(s.child);
  }
  if (SHAPES.length > 0)
    lines.push(
      '',
      ...(await shapesReport({
        shapes: SHAPES,
        builds,
        dir,
        seconds: PHASE_SECONDS,
        runs: SHAPE_RUNS,
        rateB: RATE_B,
        machine,
      })),
    );
  const table = lines.join('\n');
  process.stdout.write(`\n${table}\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `\n${table}\n`, { flag: 'a' });
}

runBenchmark(main);
