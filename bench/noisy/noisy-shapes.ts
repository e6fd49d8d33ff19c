/**
 * The noisy-neighbour benchmark's attack shapes (bench/noisy/noisy-neighbour.ts runs them after its
 * classic rounds): four ways a stranger or tenant A can try to take a shared resource of the
 * ingester from tenant B, each measured on a fresh ingester of its own (an attack's after-effects,
 * a blocked address or a full queue, stay in its own figures):
 *   - slow-bodies: SLOW_UPLOADS connections from one address to a signed integration of A's, each
 *     announcing a 1 MiB body with a bogus signature and sending one byte of it a second (the body
 *     must be read before the signature can be checked); B posts single events with Basic;
 *   - slow-expressions: tenant A posts to an integration whose expression burns the mapping time
 *     limit, BURNER_CONNECTIONS at once, with its namespace's mapping CPU budget at the default;
 *     B posts to a custom-mapped integration of its own (a fifth of B's rate: a custom expression
 *     costs several times a single event), so the shape measures the worker pool's fairness;
 *   - failing-remote-write: the ingester forwards data points by remote write to a receiver
 *     (bench/noisy/tenant-receiver.ts) that answers 429 and 500 to A's tenant (X-Scope-OrgID) and
 *     accepts B's; A and B post single data points, A's each of a new series (so that each takes
 *     about as many of the queue's bytes as one of B's: a request that needs more than the room
 *     left is refused, so A's requests must not be larger than B's to fill the queue to the byte).
 *     The queue is scaled down (remoteWrite.maxQueuedBytes 256 KiB) so that A fills it within a
 *     phase;
 *   - guard-stranger: from B's own address, wrong passwords to A's Basic integration and wrong
 *     signatures to A's signed one, continuously; B posts single events with Basic.
 * Each round of a shape takes three phases in turn, each after the ingester has gone quiet: "B
 * alone"; "B beside A"; and the bare floor, A's same attack against a bare node:http server on the
 * ingester's core at the ingester's priority (bench/noisy/canned-refusal.ts, answering what the ingester
 * answered one of A's requests) while B posts to the ingester. What B's p99 loses in the bare phase
 * is what A's traffic costs B on one core before any work of the ingester's own. Per shape the
 * table gives, as medians over the rounds, B's p99 beside A / B alone and the floor's p99 / B alone,
 * and their quotient: the target is at most 1.1, with no refusal of B in any phase.
 *
 *   BENCH_NOISY_SHAPES  all (default), none, or a comma-separated list of the shapes above
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { DEFAULT_TENANT_LIMITS } from '../../api/limits.js';
import type { Route } from '../../api/route.js';
import { basic, tenantAuth, tenantRoute } from '../../test/support/credentials.js';
import { ROOT } from '../../test/support/paths.js';
import { freePort } from '../../test/support/ports.js';
import { median } from '../../test/support/stats.js';
import { waitFor } from '../../test/support/waiting.js';
import { BENCH_TENANT_LIMITS, canConnect, peakRssMiB, processTreeCpuSeconds, track } from '../support/processes.js';
import {
  bareServer,
  cannedAnswer,
  EVENT,
  load,
  onLoadCpu,
  pooledP99,
  refusals,
  runJson,
  startNoisyIngester,
  statuses,
  stopServer,
  sumAnswers,
  type Answers,
  type Canned,
  type Load,
} from './noisy-load.js';

export const SHAPE_NAMES = ['slow-bodies', 'slow-expressions', 'failing-remote-write', 'guard-stranger'] as const;
export type ShapeName = (typeof SHAPE_NAMES)[number];

/** BENCH_NOISY_SHAPES: all (default), none, or a comma-separated list of SHAPE_NAMES. */
export function selectShapes(setting: string | undefined): ShapeName[] {
  const raw = (setting ?? '').trim();
  if (raw === '' || raw === 'all') return [...SHAPE_NAMES];
  if (raw === 'none') return [];
  const names = raw
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  for (const n of names)
    if (!(SHAPE_NAMES as readonly string[]).includes(n))
      throw new Error(
        `BENCH_NOISY_SHAPES: unknown shape ${JSON.stringify(n)} (all, none, or ${SHAPE_NAMES.join(', ')})`,
      );
  return names as ShapeName[];
}

/** Beside-A and bare-floor ratios over the rounds: what a shape must keep within of the floor. */
const TARGET = 1.1;

/** 64 x 1 MiB announced: the default limits.maxInFlightBodyBytes (64 MiB), held one byte a second. */
const SLOW_UPLOADS = 64;
const SLOW_CONTENT_LENGTH = 1024 * 1024;
const SLOW_BYTE_INTERVAL_MS = 1000;
/** An expression that runs past the mapping time limit (500 ms of CPU) in three built-in calls. */
const BURNER_EXPRESSION = '[1..3].$count($distinct([1..100000]))';
const BURNER_CONNECTIONS = 64;
const BURNER_RATE = 128;
/** A's data points a second, each of a new series among A_SERIES (fewer than the namespace's 10,000). */
const POINTS_RATE = 400;
const A_SERIES = 4000;
const QUEUE_BYTES = 256 * 1024;
const TENANT_HEADER = 'X-Scope-OrgID';
/** Each stranger's requests a second: wrong passwords, and wrong signatures. */
const STRANGER_RATE = 50;

const GITHUB_SECRET = 'noisy-bench-github-secret';
const BOGUS_SIGNATURE = { 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` };
const B_KEY = 'b-meter_0123456789abcdef0123456789abcdef';
const A_KEY = 'a-meter_0123456789abcdef0123456789abcdef';

const webhook = (name: string, namespace: string, extra: Record<string, unknown> = {}): Route =>
  tenantRoute(name, namespace, extra) as Route;
const signed = (name: string, namespace: string): Route =>
  webhook(name, namespace, {
    credentials: [],
    authentication: { mode: 'signature', signature: { scheme: 'github', secrets: [{ value: GITHUB_SECRET }] } },
  });
const apiKey = (name: string, namespace: string, key: string): Route => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'ApiKey',
  name,
  namespace,
  credentials: [{ username: name, secret: { plain: key } }],
});

/** B's raw event for its custom-mapped integration, and the expression that maps it (cheap). */
const RAW_EVENT = JSON.stringify({ host: 'web-01.example.com', level: 'critical', msg: 'CPU above 95%' });
const B_EXPRESSION = '{"source": host, "severity": level, "class": "cpu", "type": "high", "description": msg}';
const B_POINT = JSON.stringify({ metric: 'b.load', data: 0.75, source: 'web-01', tags: { env: 'prod' } });
/** `%i`: open-loop's variant number, a series of its own. */
const A_POINT = JSON.stringify({ metric: 'a.load', data: 0.5, source: 'a-host', tags: { series: '%i' } });

interface Shape {
  name: ShapeName;
  /** What A (or the stranger) does, and what B does, for the table. */
  attack: string;
  bDoes: string;
  routes: Route[];
  /** More ingester settings (remoteWrite). */
  settings?: Record<string, unknown>;
  /** B's steady load against the ingester on `port`, with every latency kept. */
  b: (port: number, seconds: number) => Promise<Load>;
  /** A's attack against `port`: the ingester, or the bare server. */
  a: (port: number, seconds: number) => Promise<Answers>;
  /** One of A's requests to the ingester: its answer is what the bare server repeats. */
  sample: (port: number) => Promise<Canned>;
  /**
   * The ingester answers A before reading the body (a refusal at once, docs/design.md §4b): the
   * bare server does too, so that A's traffic (an attacker reconnects when answered) is the same
   * against both.
   */
  answersBeforeBody?: boolean;
}

/**
 * What the ingester answers one of A's slow uploads once A holds its address's share: two
 * uploads are held open (2 MiB, the default per-address share), a third is answered at once.
 */
async function slowUploadAnswer(port: number, path: string, headers: Record<string, string>): Promise<Canned> {
  const head =
    `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n` +
    `content-length: ${SLOW_CONTENT_LENGTH}\r\n` +
    Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('') +
    '\r\n{';
  const open = (): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(head, () => resolve(socket)));
      socket.once('error', reject);
    });
  const held = [await open(), await open()];
  await new Promise((r) => setTimeout(r, 200));
  const third = await open();
  try {
    const text = await new Promise<string>((resolve, reject) => {
      let got = '';
      third.on('data', (chunk: Buffer) => {
        got += chunk.toString('latin1');
        const end = got.indexOf('\r\n\r\n');
        const length = /\r\ncontent-length: (\d+)/i.exec(got);
        if (end >= 0 && length && got.length >= end + 4 + Number(length[1])) resolve(got);
      });
      setTimeout(() => reject(new Error(`no answer to a slow upload within 5 s: ${JSON.stringify(got)}`)), 5000);
    });
    const [top = '', ...lines] = text.slice(0, text.indexOf('\r\n\r\n')).split('\r\n');
    const answerHeaders: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).toLowerCase();
      if (!['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(name))
        answerHeaders[name] = line.slice(colon + 1).trim();
    }
    return {
      status: Number(top.split(' ')[1]),
      headers: answerHeaders,
      body: text.slice(text.indexOf('\r\n\r\n') + 4),
    };
  } finally {
    for (const socket of [...held, third]) socket.destroy();
  }
}

const post = async (port: number, path: string, headers: Record<string, string>, body: string): Promise<Canned> =>
  cannedAnswer(
    await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    }),
  );

/** Tenant B: `rate` requests a second (open loop), every latency kept for the table. */
const steady = (url: string, authorization: string, body: string, rate: number, seconds: number): Promise<Load> =>
  load({ url, authorization, body, rate, seconds, connections: 32, samples: true });

/** A's (or a stranger's) open-loop load, under SCHED_IDLE on the load CPU. */
const attacker = (
  url: string,
  authorization: string,
  body: string,
  rate: number,
  seconds: number,
  connections: number,
  headers: Record<string, string> = {},
): Promise<Load> => load({ url, authorization, body, rate, seconds, connections, background: true, headers });

const events = (port: number, name: string): string => `http://127.0.0.1:${port}/events/webhook_${name}`;
const metrics = (port: number): string => `http://127.0.0.1:${port}/v1/integrations/metrics`;

function defineShape(name: ShapeName, rateB: number, receiverUrl: string | undefined): Shape {
  const bEvents: Pick<Shape, 'bDoes' | 'b'> = {
    bDoes: `${rateB} single events/s, Basic`,
    b: (port, seconds) => steady(events(port, 'steady'), tenantAuth('steady').authorization, EVENT, rateB, seconds),
  };
  switch (name) {
    case 'slow-bodies':
      return {
        name,
        attack: `${SLOW_UPLOADS} connections from one address to A's signed integration, each announcing ${SLOW_CONTENT_LENGTH} bytes with a bogus signature and sending a byte every ${SLOW_BYTE_INTERVAL_MS} ms (reconnecting when answered)`,
        ...bEvents,
        routes: [webhook('steady', 'team-b'), signed('a-signed', 'team-a')],
        // One second more than B's: B's generator does not count its first second.
        a: (port, seconds) =>
          runJson<Answers>(
            onLoadCpu(
              [
                process.execPath,
                join(ROOT, 'dist/bench/noisy/slow-upload.js'),
                events(port, 'a-signed'),
                JSON.stringify(BOGUS_SIGNATURE),
                String(SLOW_UPLOADS),
                String(SLOW_CONTENT_LENGTH),
                String(SLOW_BYTE_INTERVAL_MS),
                String(seconds + 1),
              ],
              true,
            ),
          ),
        sample: (port) => slowUploadAnswer(port, '/events/webhook_a-signed', BOGUS_SIGNATURE),
        answersBeforeBody: true,
      };
    case 'slow-expressions': {
      const rate = Math.max(1, Math.round(rateB / 5));
      return {
        name,
        attack: `A posts ${BURNER_RATE}/s on ${BURNER_CONNECTIONS} connections at once to an expression that burns the mapping time limit (${BURNER_EXPRESSION}), its namespace's mapping CPU budget at the default (${DEFAULT_TENANT_LIMITS.namespace.mappingCpuMillisPerSecond} ms/s, burst ${DEFAULT_TENANT_LIMITS.namespace.mappingCpuBurstMillis} ms)`,
        bDoes: `${rate} custom-mapped events/s, Basic`,
        routes: [
          webhook('b-mapped', 'team-b', { mapping: { expression: B_EXPRESSION } }),
          webhook('a-burner', 'team-a', {
            mapping: { expression: BURNER_EXPRESSION },
            limits: {
              namespace: {
                mappingCpuMillisPerSecond: DEFAULT_TENANT_LIMITS.namespace.mappingCpuMillisPerSecond,
                mappingCpuBurstMillis: DEFAULT_TENANT_LIMITS.namespace.mappingCpuBurstMillis,
              },
            },
          }),
        ],
        b: (port, seconds) =>
          steady(events(port, 'b-mapped'), tenantAuth('b-mapped').authorization, RAW_EVENT, rate, seconds),
        a: (port, seconds) =>
          attacker(
            events(port, 'a-burner'),
            tenantAuth('a-burner').authorization,
            '{"any": 1}',
            BURNER_RATE,
            seconds,
            BURNER_CONNECTIONS,
          ),
        sample: (port) => post(port, '/events/webhook_a-burner', tenantAuth('a-burner'), '{"any": 1}'),
      };
    }
    case 'failing-remote-write':
      if (!receiverUrl) throw new Error('failing-remote-write needs its receiver');
      return {
        name,
        attack: `A posts ${POINTS_RATE} single data points/s, each of a new series (${A_SERIES} in turn); the remote write receiver answers 429 and 500 to A's tenant (${TENANT_HEADER}) and 204 to B's; the queue scaled down (remoteWrite.maxQueuedBytes ${QUEUE_BYTES / 1024} KiB)`,
        bDoes: `${rateB} single data points/s, API key`,
        routes: [apiKey('b-meter', 'team-b', B_KEY), apiKey('a-meter', 'team-a', A_KEY)],
        settings: {
          remoteWrite: { url: receiverUrl, tenantHeader: TENANT_HEADER, maxQueuedBytes: QUEUE_BYTES },
        },
        b: (port, seconds) => steady(metrics(port), basic('b-meter', B_KEY), B_POINT, rateB, seconds),
        a: (port, seconds) =>
          load({
            url: metrics(port),
            authorization: basic('a-meter', A_KEY),
            body: A_POINT,
            variants: A_SERIES,
            rate: POINTS_RATE,
            seconds,
            connections: 32,
            background: true,
          }),
        sample: (port) =>
          post(
            port,
            '/v1/integrations/metrics',
            { authorization: basic('a-meter', A_KEY) },
            A_POINT.replace('%i', 'x'),
          ),
      };
    case 'guard-stranger':
      return {
        name,
        attack: `from B's address, ${STRANGER_RATE}/s wrong passwords to A's Basic integration and ${STRANGER_RATE}/s wrong signatures to A's signed one`,
        ...bEvents,
        routes: [webhook('steady', 'team-b'), webhook('a-basic', 'team-a'), signed('a-signed', 'team-a')],
        a: async (port, seconds) =>
          sumAnswers(
            await Promise.all([
              attacker(events(port, 'a-basic'), basic('a-basic', 'wrong'), EVENT, STRANGER_RATE, seconds, 32),
              attacker(
                events(port, 'a-signed'),
                basic('a-signed', 'wrong'),
                EVENT,
                STRANGER_RATE,
                seconds,
                32,
                BOGUS_SIGNATURE,
              ),
            ]),
          ),
        sample: (port) => post(port, '/events/webhook_a-basic', { authorization: basic('a-basic', 'wrong') }, EVENT),
      };
  }
}

/** The receiver failing A's tenant, under SCHED_IDLE on the load CPU (B's requests never wait for it). */
async function startReceiver(): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const argv = onLoadCpu(
    [process.execPath, join(ROOT, 'dist/bench/noisy/tenant-receiver.js'), String(port), TENANT_HEADER, 'team-a'],
    true,
  );
  const child = track(spawn(argv[0] as string, argv.slice(1), { stdio: ['ignore', 'ignore', 'inherit'] }));
  await waitFor('remote write receiver', () => canConnect(port), 10_000, 50);
  return { url: `http://127.0.0.1:${port}/api/v1/write`, child };
}

/**
 * Waits until the ingesters (with their mapping workers) have used under a tenth of a core for half
 * a second, at most 60 s: work an attack left queued is not charged to the next phase.
 */
async function settle(pids: number[]): Promise<void> {
  const cpu = (): number => pids.reduce((sum, pid) => sum + processTreeCpuSeconds(pid), 0);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const before = cpu();
    await new Promise((r) => setTimeout(r, 500));
    if (cpu() - before < 0.05) return;
  }
}

export interface Build {
  label: string;
  root: string;
  nodeFlags: string[];
}

/** One build's ingester for one shape, with what its rounds measured. */
interface Subject {
  build: Build;
  child: ChildProcess;
  port: number;
  alone: Load[];
  beside: Load[];
  bare: Load[];
  attack: Answers[];
  attackBare: Answers[];
  /** The ingester's peak RSS, MiB, read before it is stopped. */
  rss: number;
}

/** Every selected shape in turn, RUNS rounds each, every build in the same rounds; the table. */
export async function shapesReport(o: {
  shapes: ShapeName[];
  builds: Build[];
  dir: string;
  seconds: number;
  runs: number;
  rateB: number;
  machine: () => string;
}): Promise<string[]> {
  const receiver = o.shapes.includes('failing-remote-write') ? await startReceiver() : undefined;
  const measured: Array<{ shape: Shape; subjects: Subject[] }> = [];
  try {
    for (const name of o.shapes) {
      const shape = defineShape(name, o.rateB, receiver?.url);
      const subjects: Subject[] = [];
      for (const build of o.builds) {
        const { child, port } = await startNoisyIngester({
          ...build,
          label: `${build.label}, ${name}`,
          dir: o.dir,
          routes: shape.routes,
          tenantLimits: BENCH_TENANT_LIMITS,
          ...(shape.settings ? { settings: shape.settings } : {}),
        });
        subjects.push({ build, child, port, alone: [], beside: [], bare: [], attack: [], attackBare: [], rss: NaN });
      }
      const bare = await bareServer(
        `bare server (${name})`,
        await shape.sample((subjects[0] as Subject).port),
        false,
        shape.answersBeforeBody ?? false,
      );
      const quiet = (): Promise<void> => settle(subjects.flatMap((s) => (s.child.pid ? [s.child.pid] : [])));
      const phase = async (s: Subject, aPort: number | undefined): Promise<{ b: Load; a?: Answers }> => {
        await quiet();
        const [b, a] = await Promise.all([
          shape.b(s.port, o.seconds),
          aPort === undefined ? undefined : shape.a(aPort, o.seconds),
        ]);
        return { b, ...(a ? { a } : {}) };
      };
      for (const s of subjects) await phase(s, s.port); // warm-up, A beside B
      // The bare server warmed up too: a cold one answered A slower in the first floor phase, a
      // floor that moved round by round (3.8-6.4x of B alone in the first round, not after).
      await phase(subjects[0] as Subject, bare.port);
      for (let i = 0; i < o.runs; i++) {
        // With two builds, they take turns, and the one that goes first alternates round by round.
        for (const s of i % 2 === 0 ? subjects : [...subjects].reverse()) {
          s.alone.push((await phase(s, undefined)).b);
          const beside = await phase(s, s.port);
          s.beside.push(beside.b);
          if (beside.a) s.attack.push(beside.a);
          const floor = await phase(s, bare.port);
          s.bare.push(floor.b);
          if (floor.a) s.attackBare.push(floor.a);
        }
      }
      measured.push({ shape, subjects });
      process.stderr.write(`bench: noisy neighbour, shape ${name} done\n`);
      for (const s of subjects) s.rss = peakRssMiB(s.child.pid);
      await stopServer(bare.child);
      for (const s of subjects) await stopServer(s.child);
    }
  } finally {
    if (receiver) await stopServer(receiver.child);
  }
  return shapesTable(o, measured);
}

/** B's requests slower than this are counted per phase kind (pooled over the rounds). */
const SLOW_MS = 5;
const f = (n: number, d = 2): string => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
const times = (r: number): string => (Number.isFinite(r) ? `${f(r)}x` : 'n/a');
/** B's p99 of a phase; none when not one of B's requests was answered (all timed out). */
const p99 = (l: Load): number => (Number.isFinite(l.p99) ? l.p99 : Number.POSITIVE_INFINITY);
/** The median of ratios, n/a (NaN) when a round had no answer to go by. */
const medianRatio = (xs: number[]): number => (xs.every(Number.isFinite) ? median(xs) : Number.NaN);

function shapesTable(
  o: { builds: Build[]; seconds: number; runs: number; rateB: number; machine: () => string },
  measured: Array<{ shape: Shape; subjects: Subject[] }>,
): string[] {
  const withBuild = o.builds.length > 1;
  const lines = [
    `Noisy neighbour, attack shapes. ${o.machine()}; each shape on a fresh ingester on CPU 0 (log sink to a file), the load on CPU 1 (A's generators and the remote write receiver under SCHED_IDLE). ${o.seconds} s phases "B alone", "B beside A" and the bare floor (A's same attack against a bare node:http server on the ingester's core at its priority, answering what the ingester answered one of A's requests, while B posts to the ingester) in turn, each after the ingester went quiet; ${o.runs} rounds per shape after one warm-up phase beside A and one beside the bare server${withBuild ? ', the builds taking turns' : ''}. B's p99 from when each request was due (open loop). The ratios are medians over the ${o.runs} rounds of each round's ratio; the quotient is (beside A / alone) / (floor / alone); wanted: at most ${TARGET}, and no refusal of B in any phase (refusals: answers other than 200, and requests without an answer; n/a: a phase in which none of B's requests was answered).`,
    '',
    ...measured.map(({ shape }) => `- ${shape.name}: ${shape.attack}; B: ${shape.bDoes}.`),
    '',
    `| shape${withBuild ? ' | build' : ''} | B's p99 ms alone / beside A / floor (medians) | beside A / alone | floor / alone | quotient | B's refusals alone / beside A / floor | A's answers (ingester; bare server) | verdict |`,
    `|---${withBuild ? '|---' : ''}|---|---|---|---|---|---|---|`,
  ];
  const rounds: string[] = [];
  for (const { shape, subjects } of measured) {
    for (const s of subjects) {
      const beside = s.beside.map((b, i) => p99(b) / p99(s.alone[i] as Load));
      const floor = s.bare.map((b, i) => p99(b) / p99(s.alone[i] as Load));
      const quotient = medianRatio(beside) / medianRatio(floor);
      const refused = [s.alone, s.beside, s.bare].map((phases) => phases.reduce((n, l) => n + refusals(l), 0));
      // NaN (a phase without one answer to B) is no pass.
      const ok = quotient <= TARGET && refused.every((n) => n === 0);
      const answers = (a: Answers[]): string => {
        const sum = sumAnswers(a);
        if (Object.keys(sum.byStatus).length === 0 && sum.errors === 0) return 'none (every request held to the end)';
        return `${statuses(sum.byStatus)}${sum.errors ? `, no answer: ${sum.errors}` : ''}`;
      };
      const p99s = (ls: Load[]): string => f(median(ls.map(p99)));
      lines.push(
        `| ${shape.name}${withBuild ? ` | ${s.build.label} (peak RSS ${f(s.rss, 0)} MiB)` : ''} | ${p99s(s.alone)} / ${p99s(s.beside)} / ${p99s(s.bare)} | ${times(medianRatio(beside))} | ${times(medianRatio(floor))} | **${times(quotient)}** | ${refused.join(' / ')} | ${answers(s.attack)}; ${answers(s.attackBare)} | ${ok ? 'PASS' : 'MISS'} |`,
      );
      // What refused B, so that a MISS says which limit or queue B met.
      const bStatuses = (phases: Load[]): string =>
        statuses(
          phases.reduce<Record<string, number>>((sum, l) => {
            for (const [status, n] of Object.entries(l.byStatus)) sum[status] = (sum[status] ?? 0) + n;
            return sum;
          }, {}),
        );
      // B's samples pooled over the rounds: one slow phase (a major collection, another process on
      // the core) moves one round's p99 several-fold, the pooled one far less.
      const [pAlone, pBeside, pBare] = [s.alone, s.beside, s.bare].map(pooledP99) as [number, number, number];
      const slow = (ls: Load[]): number =>
        ls.reduce((n, l) => n + (l.samples ?? []).filter((us) => us > SLOW_MS * 1000).length, 0);
      rounds.push(
        `${shape.name}${withBuild ? ` (${s.build.label})` : ''}, each round: beside A / alone ${beside.map(times).join(' / ')}; floor / alone ${floor.map(times).join(' / ')}; pooled over the rounds, B's p99 ${f(pAlone)} / ${f(pBeside)} / ${f(pBare)} ms, beside A / alone ${times(pBeside / pAlone)}, floor / alone ${times(pBare / pAlone)}, quotient ${times(pBeside / pBare)}, B's requests over ${SLOW_MS} ms ${slow(s.alone)} / ${slow(s.beside)} / ${slow(s.bare)}; B's answers alone: ${bStatuses(s.alone)}, beside A: ${bStatuses(s.beside)}, in the floor phase: ${bStatuses(s.bare)}`,
      );
    }
  }
  return [...lines, '', ...rounds.map((r) => `- ${r}`)];
}
