/**
 * The destinations benchmark (part of make bench): how fast accepted events reach their
 * destination. For each case a fresh built ingester (CPU 0), two measurements:
 * 1. a backlog: the destination holds its answers (our receiver keeps them back, Alertmanager is
 *    stopped with SIGSTOP) while EVENTS events are accepted, then it is released and timed until it
 *    took the last one: delivery alone, as the "sustained" targets of docs/benchmarks.md mean it;
 * 2. EVENTS more, timed from the first request until the destination took the last one: accepting
 *    and delivering share the ingester's one core, as they do in a storm.
 * Both also per second of the ingester's CPU time (steadier than the wall clock on a shared
 * machine). Cases: an HTTP receiver of our own (one event per request, and batches of 100) and a
 * real Alertmanager, each from the bus (nats-server, JetStream consumers) and from the standalone
 * outbox. The receiver, Alertmanager and nats-server share CPU 1 with this runner. Then
 * Alertmanager alone (bench/destinations/alertmanager-alone.ts): the ceiling of the Alertmanager rows;
 * and a bare undici client (bench/destinations/http-alone.ts): the floor of the HTTP batchSize 1 rows.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import {
  ALERTMANAGER_CONNECTIONS,
  MAX_ALERTS_PER_POST,
} from '../../ingester/destinations/alertmanager/alertmanager-destination.js';
import { ROOT } from '../../test/support/paths.js';
import { freePort } from '../../test/support/ports.js';
import { waitFor } from '../../test/support/waiting.js';
import { mainThreadProfile, summariseFile } from '../support/cpuprofile.js';
import { destinationEvent } from './destination-events.js';
import { monotonicUs } from '../support/load.js';
import {
  cpuBusyPercent,
  cpuTimes,
  peakRssMiB,
  processCpuSeconds,
  runBenchmark,
  stderrTail,
  BENCH_AUTH,
  BENCH_TENANT_LIMITS,
  benchWebhook,
  ingesterReady,
  pinnedIngester,
  startAlertmanager,
  startNatsServer,
} from '../support/processes.js';

const EVENTS = Number(process.env.BENCH_DESTINATION_EVENTS ?? 100_000);
/** BENCH_DESTINATION_PROFILE=<case> (http-1-bus, http-100-outbox, am-bus, ...): that case's ingester runs under --cpu-prof. */
const PROFILE = process.env.BENCH_DESTINATION_PROFILE;
/** BENCH_DESTINATION_CASES=http-100-bus,am-outbox: only these cases (default: all six, am-alone: Alertmanager's own ceiling, and http-alone: a bare undici client's). BENCH_DESTINATION_MAX_IN_FLIGHT: every destination's delivery.maxInFlight (default: the destination's own). */
const ONLY = process.env.BENCH_DESTINATION_CASES?.split(',').filter(Boolean);
/** BENCH_INGESTER_ROOT=<another checkout, built>: its ingester is the one measured (a before-and-after in alternating runs). */
const INGESTER_ROOT = process.env.BENCH_INGESTER_ROOT || undefined;
const wanted = (name: string): boolean => !ONLY || ONLY.includes(name);
/**
 * BENCH_DESTINATION_NATS_CPU: the CPU nats-server is pinned to, 1 (beside the receivers and
 * Alertmanager) unless told; 0 puts it beside the ingester (docs/benchmarks.md: which is fair).
 */
const NATS_CPU = process.env.BENCH_DESTINATION_NATS_CPU ?? '1';
const dir = mkdtempSync(join(process.env.BENCH_DIR || tmpdir(), 'intake-bench-dest-'));

/**
 * An HTTP destination that counts the events it answered; while its gate is closed it holds every
 * answer. The runner waits on this count rather than on the ingester's metrics: scraping them
 * every 100 ms took about 5% of the ingester's CPU in a profile of a slow (busy machine) run (its
 * process metrics list every socket and file descriptor), and that was counted as delivery's.
 */
async function receiver(): Promise<{ url: string; gate: Gate; close: () => void; answered: () => number }> {
  let held: Array<() => void> | undefined;
  let answered = 0;
  const srv: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const events = Array.isArray(body) ? body.length : 1;
      const answer = (): void => {
        answered += events;
        res.writeHead(200).end();
      };
      if (held) held.push(answer);
      else answer();
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  const gate: Gate = {
    close: () => (held ??= []),
    open: () => {
      const waiting = held ?? [];
      held = undefined;
      for (const answer of waiting) answer();
    },
  };
  return { url: `http://127.0.0.1:${port}/hook`, gate, close: () => srv.close(), answered: () => answered };
}

async function metric(admin: number, series: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${admin}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

interface Case {
  name: string;
  queue: 'bus' | 'outbox';
  destination: Record<string, unknown>;
  /** The bench integration's extra fields (routing rules); none by default. */
  route?: Record<string, unknown>;
}

/**
 * BENCH_DESTINATION_PROTECTION=N: each HTTP case is run in pairs, bare (no rules, the circuit
 * breaker off) and protected (N routing rules of the shapes of bench/destinations/rules.ts, none of
 * which matches, so every one is tried; the default breaker), alternately, twice: the cost of rules
 * and breaker as a ratio within one run.
 */
const PROTECTION_RULES = Number(process.env.BENCH_DESTINATION_PROTECTION ?? 0);
const protectionRules = (n: number): Array<Record<string, unknown>> =>
  Array.from({ length: n }, (_, i) => {
    const shapes: Array<Record<string, unknown>> = [
      { severity: { min: 'critical' }, source: { equals: `db-${i}` } },
      { type: { in: [`Disk${i}`, `Cpu${i}`, `Memory${i}`] } },
      { source: { regex: `web-${i}-[0-9]+` } },
      { customInfo: { team: { equals: `team-${i}` } } },
      { class: { regex: `(net|storage)-${i}.*` }, severity: { max: 'warning' } },
    ];
    return { name: `r${i}`, match: shapes[i % shapes.length], destinations: ['target'] };
  });

/** Holds a destination's answers (a backlog builds up behind it) until released. */
interface Gate {
  close(): void;
  open(): void;
}

/** Sends `count` events from `first` on, in 100-event requests, four at a time. */
async function send(c: Case, port: number, first: number, count: number): Promise<void> {
  let next = first;
  const end = first + count;
  const sender = async (): Promise<void> => {
    for (let sent = next; sent < end; sent = next) {
      next += 100;
      const body = JSON.stringify(
        Array.from({ length: Math.min(100, end - sent) }, (_, i) => destinationEvent(sent + i)),
      );
      const res = await fetch(`http://127.0.0.1:${port}/events/webhook_bench`, {
        method: 'POST',
        headers: {
          authorization: BENCH_AUTH,
          'content-type': 'application/json',
          'idempotency-key': `${c.name}-${sent}`,
        },
        body,
      });
      if (res.status !== 200) throw new Error(`${c.name}: POST answered ${res.status}: ${await res.text()}`);
    }
  };
  await Promise.all([sender(), sender(), sender(), sender()]);
}

interface CaseResult {
  /** Backlog of EVENTS accepted while the destination was held, then released: delivery alone. */
  drainPerSecond: number;
  /** The same per second of the ingester's CPU time: steadier than the wall clock on a busy machine. */
  drainPerCpuSecond: number;
  /** How busy each core was while the backlog was delivered: the ingester's (0), and the receiver's, nats-server's and Alertmanager's (1). */
  drainBusy: [number, number];
  /** CPU seconds Alertmanager (when it is the destination) and nats-server (with the bus) used while the backlog was delivered. */
  drainPeerCpu: { alertmanager?: number; nats?: number };
  /** EVENTS more, accepted and delivered at the same time on the ingester's one core. */
  bothPerSecond: number;
  bothPerCpuSecond: number;
  rss: number;
  profile?: string;
}

const delivered = (admin: number): Promise<number> =>
  metric(admin, 'intake_destination_delivered_total{destination="target"}');

/**
 * Resolves once `count()` reached `target`, reading it at half the time left at the rate seen so
 * far (20-400 ms apart): about ten reads for a backlog of a few seconds, the last within 20 ms of
 * the end. Times out after ten minutes.
 */
async function countedTo(name: string, count: () => Promise<number>, target: number): Promise<void> {
  // A kept-alive connection the ingester closed as it was reused (ECONNRESET on a busy machine,
  // after the seconds of sending in which nothing was read): read again on a new one.
  const read = async (): Promise<number> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await count();
      } catch (err) {
        if (attempt >= 3) throw err;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  const start = performance.now();
  const first = await read();
  for (let n = first; n < target; n = await read()) {
    const elapsed = performance.now() - start;
    if (elapsed > 600_000) throw new Error(`${name}: ${n} of ${target} after ten minutes`);
    const rate = (n - first) / Math.max(1, elapsed);
    const leftMs = rate > 0 ? (target - n) / rate : 400;
    await new Promise((r) => setTimeout(r, Math.min(400, Math.max(20, leftMs / 2))));
  }
}

/** The bus, and the pids whose CPU a case reports beside the ingester's. */
interface Peers {
  natsUrl: string;
  natsPid: number;
  alertmanagerPid?: number;
}

async function runCase(c: Case, peers: Peers, gate: Gate, answered?: () => number): Promise<CaseResult> {
  const natsUrl = peers.natsUrl;
  const [port, admin] = [await freePort(), await freePort()];
  const config = {
    listen: `127.0.0.1:${port}`,
    adminListen: `127.0.0.1:${admin}`,
    logLevel: 'warn',
    ...(c.queue === 'bus'
      ? {
          sinks: {
            jetstream: {
              url: natsUrl,
              stream: `BENCH_${c.name.replace(/\W/g, '_')}`,
              subjectPrefix: `bench.${c.name.replace(/\W/g, '_')}`,
              alertBucketPrefix: `bench-${c.name.replace(/\W/g, '-')}`,
              // A busy shared machine slows the acknowledgements; the benchmark measures delivery.
              timeout: '10s',
            },
          },
          deadLetter: {
            stream: `BENCH_DL_${c.name.replace(/\W/g, '_')}`,
            subjectPrefix: `benchdl.${c.name.replace(/\W/g, '_')}`,
          },
        }
      : { spool: { path: join(dir, `${c.name}-spool`) } }),
    destinations: [{ name: 'target', default: true, ...c.destination }],
    tenantLimits: BENCH_TENANT_LIMITS,
    // Shedding load is not what this measures: a neighbour on the machine must not fail the run.
    limits: { maxEventLoopDelay: '10s' },
    routes: [benchWebhook('bench', c.route ?? {})],
  };
  const file = join(dir, `${c.name.replace(/\W/g, '_')}.yaml`);
  writeFileSync(file, stringify(config));
  const profiling = PROFILE === c.name;
  const profDir = join(dir, `${c.name}-cpuprofile`);
  const child = pinnedIngester(c.name, file, {
    nodeFlags: ['--max-semi-space-size=4', ...(profiling ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [])],
    ...(INGESTER_ROOT ? { root: INGESTER_ROOT } : {}),
  });
  let window: { startUs: number; endUs: number } | undefined;
  try {
    await ingesterReady(c.name, child, admin);
    // 1. Delivery alone: a backlog accepted while the destination holds its answers, then released.
    gate.close();
    try {
      await send(c, port, 0, EVENTS);
    } finally {
      gate.open();
    }
    const released = performance.now();
    const startUs = monotonicUs();
    const cpuBefore = processCpuSeconds(child.pid as number);
    const coresBefore = cpuTimes();
    const amBefore = peers.alertmanagerPid ? processCpuSeconds(peers.alertmanagerPid) : NaN;
    const natsBefore = processCpuSeconds(peers.natsPid);
    // Our receiver counts what it answered; Alertmanager's rows read the ingester's count, from
    // its metrics, which costs the ingester CPU (a scrape also collects its process metrics): they
    // are read ever more often as the end nears instead of every 100 ms.
    const count = async (): Promise<number> => (answered ? answered() : await delivered(admin));
    const reached = (n: number): Promise<void> =>
      answered
        ? waitFor(`${c.name} reached ${n}`, async () => answered() >= n, 600_000, 10).then(() => undefined)
        : countedTo(c.name, count, n);
    await reached(EVENTS);
    const drainSeconds = (performance.now() - released) / 1000;
    const drainCpu = processCpuSeconds(child.pid as number) - cpuBefore;
    const coresAfter = cpuTimes();
    const drainPeerCpu = {
      ...(peers.alertmanagerPid ? { alertmanager: processCpuSeconds(peers.alertmanagerPid) - amBefore } : {}),
      ...(c.queue === 'bus' ? { nats: processCpuSeconds(peers.natsPid) - natsBefore } : {}),
    };
    const drainBusy: [number, number] = [
      cpuBusyPercent(coresBefore, coresAfter, '0'),
      cpuBusyPercent(coresBefore, coresAfter, '1'),
    ];
    window = { startUs, endUs: monotonicUs() };
    // 2. Accepting and delivering together, as in a storm.
    const started = performance.now();
    const cpuStarted = processCpuSeconds(child.pid as number);
    await send(c, port, EVENTS, EVENTS);
    await reached(2 * EVENTS);
    const bothSeconds = (performance.now() - started) / 1000;
    const bothCpu = processCpuSeconds(child.pid as number) - cpuStarted;
    return {
      drainPerSecond: EVENTS / drainSeconds,
      drainPerCpuSecond: EVENTS / drainCpu,
      drainBusy,
      drainPeerCpu,
      bothPerSecond: EVENTS / bothSeconds,
      bothPerCpuSecond: EVENTS / bothCpu,
      rss: peakRssMiB(child.pid),
    };
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${c.name} said:\n${stderrTail(child)}`);
  } finally {
    child.kill('SIGTERM');
    if (profiling && window) {
      await new Promise((r) => child.once('exit', r));
      const prof = mainThreadProfile(profDir);
      if (prof)
        process.stdout.write(
          `\nCPU profile of ${c.name}, the backlog's delivery (${join(profDir, prof)}):\n\n${summariseFile(join(profDir, prof), 35, window, EVENTS)}\n`,
        );
    }
  }
}

/** A real Alertmanager on CPU 1; its gate stops the process (SIGSTOP) and continues it. */
async function alertmanager(): Promise<{ url: string; pid: number; gate: Gate; stop: () => void }> {
  const { url, child } = await startAlertmanager(dir);
  return {
    url,
    pid: child.pid as number,
    gate: { close: () => void child.kill('SIGSTOP'), open: () => void child.kill('SIGCONT') },
    stop: () => void child.kill('SIGTERM'),
  };
}

/**
 * A bare undici client on CPU 0 posting EVENTS events one per request over `connections` to a
 * fresh receiver of ours on CPU 1 (bench/destinations/http-alone.ts): the floor of the HTTP
 * batchSize 1 rows.
 */
async function httpAlone(connections: number): Promise<Ceiling> {
  const r = await receiver();
  try {
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(
        'taskset',
        [
          '-c',
          '0',
          process.execPath,
          join(ROOT, 'dist/bench/destinations/http-alone.js'),
          r.url,
          String(EVENTS),
          String(connections),
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('exit', (code) =>
        code === 0 ? resolve(stdout) : reject(new Error(`http-alone exited with ${code}: ${stderr}`)),
      );
    });
    const { seconds, cpuSeconds } = JSON.parse(out) as { seconds: number; cpuSeconds: number };
    return { perSecond: EVENTS / seconds, perCpuSecond: EVENTS / cpuSeconds, cpuPercent: (100 * cpuSeconds) / seconds };
  } finally {
    r.close();
  }
}

interface Ceiling {
  perSecond: number;
  perCpuSecond: number;
  cpuPercent: number;
}

/** The median of the ceilings measured (by alerts/s), for the table. */
function medianCeiling(all: Ceiling[]): Ceiling {
  const sorted = [...all].sort((a, b) => a.perSecond - b.perSecond);
  return sorted[Math.floor((sorted.length - 1) / 2)] as Ceiling;
}

/** What a fresh Alertmanager on CPU 1 takes of intake's alerts for EVENTS events, from a client on CPU 0. */
async function alertmanagerAlone(): Promise<Ceiling> {
  const am = await alertmanager();
  try {
    const cpuBefore = processCpuSeconds(am.pid);
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(
        'taskset',
        [
          '-c',
          '0',
          process.execPath,
          join(ROOT, 'dist/bench/destinations/alertmanager-alone.js'),
          am.url,
          String(EVENTS),
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('exit', (code) =>
        code === 0 ? resolve(stdout) : reject(new Error(`alertmanager-alone exited with ${code}: ${stderr}`)),
      );
    });
    const cpu = processCpuSeconds(am.pid) - cpuBefore;
    const { seconds } = JSON.parse(out) as { seconds: number };
    return { perSecond: EVENTS / seconds, perCpuSecond: EVENTS / cpu, cpuPercent: (100 * cpu) / seconds };
  } finally {
    am.stop();
  }
}

async function main(): Promise<void> {
  const nats = await startNatsServer(dir, NATS_CPU);
  const natsUrl = nats.url;
  const natsPid = nats.child.pid as number;
  // The timeout outlasts the held answers of the backlog phase: nothing is retried, nothing lost.
  const delivery = {
    backoffMin: '100ms',
    backoffMax: '500ms',
    maxAttempts: 1000,
    ...(process.env.BENCH_DESTINATION_MAX_IN_FLIGHT
      ? { maxInFlight: Number(process.env.BENCH_DESTINATION_MAX_IN_FLIGHT) }
      : {}),
  };
  const rows: string[] = [];
  let ceiling: Ceiling | undefined;
  /** Alertmanager alone, measured right before each queue's Alertmanager case. */
  const ceilings = new Map<string, Ceiling>();
  /** The cases' results by name, for the ratios against the ceiling and the floor. */
  const results = new Map<string, CaseResult>();
  const row = (what: string, queue: string, r: CaseResult, name?: string): void => {
    if (name) results.set(name, r);
    const peer = (s: number | undefined): string => (s === undefined ? '-' : s.toFixed(2));
    rows.push(
      `| ${what} | ${queue === 'bus' ? 'JetStream consumer' : 'outbox (standalone)'} | ${r.drainPerSecond.toFixed(0)} | ${r.drainPerCpuSecond.toFixed(0)} | ${r.drainBusy.map((b) => b.toFixed(0)).join(' / ')} | ${peer(r.drainPeerCpu.alertmanager)} / ${peer(r.drainPeerCpu.nats)} | ${r.bothPerSecond.toFixed(0)} | ${r.bothPerCpuSecond.toFixed(0)} | ${r.rss.toFixed(0)} |`,
    );
  };
  for (const queue of ['bus', 'outbox'] as const) {
    for (const batchSize of [1, 100]) {
      if (!wanted(`http-${batchSize}-${queue}`)) continue;
      if (PROTECTION_RULES > 0) {
        for (let pair = 0; pair < 2; pair++) {
          for (const protectedCase of [false, true]) {
            const r = await receiver();
            try {
              const destination = {
                http: { url: r.url, batchSize, timeout: '120s' },
                delivery,
                ...(protectedCase ? {} : { circuitBreaker: { enabled: false } }),
              };
              const name = `http-${batchSize}-${queue}-${protectedCase ? 'protected' : 'bare'}-${pair}`;
              const route = protectedCase ? { rules: protectionRules(PROTECTION_RULES) } : {};
              const what = `HTTP, batchSize ${batchSize}, ${protectedCase ? `${PROTECTION_RULES} rules + breaker` : 'bare'} (pair ${pair + 1})`;
              row(
                what,
                queue,
                await runCase({ name, queue, destination, route }, { natsUrl, natsPid }, r.gate, r.answered),
              );
            } finally {
              r.close();
            }
          }
        }
        continue;
      }
      const r = await receiver();
      try {
        const destination = { http: { url: r.url, batchSize, timeout: '120s' }, delivery };
        const name = `http-${batchSize}-${queue}`;
        row(
          `HTTP, batchSize ${batchSize}`,
          queue,
          await runCase({ name, queue, destination }, { natsUrl, natsPid }, r.gate, r.answered),
          name,
        );
      } finally {
        r.close();
      }
    }
    if (process.env.BENCH_NO_ALERTMANAGER !== '1' && wanted(`am-${queue}`)) {
      // The ceiling measured right before the case it is compared with: on a shared machine the
      // load changes within a run, and a ceiling from another minute would flatter or wrong it.
      if (wanted('am-alone')) ceilings.set(queue, await alertmanagerAlone());
      const am = await alertmanager();
      // Every event is a new alert: the caps must hold both phases, or most events are refused.
      const caps = { maxAlertsPerNamespace: 4 * EVENTS, maxAlerts: 4 * EVENTS };
      const destination = { alertmanager: { urls: [am.url], timeout: '120s', ...caps }, delivery };
      row(
        'Alertmanager (one alert per event)',
        queue,
        await runCase(
          { name: `am-${queue}`, queue, destination },
          { natsUrl, natsPid, alertmanagerPid: am.pid },
          am.gate,
        ),
        `am-${queue}`,
      );
      am.stop();
    }
  }
  if (process.env.BENCH_NO_ALERTMANAGER !== '1' && wanted('am-alone'))
    ceiling = ceilings.size > 0 ? medianCeiling([...ceilings.values()]) : await alertmanagerAlone();
  // The HTTP destination opens as many connections as its maxInFlight (256 for batchSize 1).
  const bareConnections = Number(process.env.BENCH_DESTINATION_MAX_IN_FLIGHT ?? 256);
  const bare = wanted('http-alone') ? await httpAlone(bareConnections) : undefined;
  const table = [
    `Destinations${INGESTER_ROOT ? ` (the ingester of ${INGESTER_ROOT})` : ''}. Machine: ${process.env.BENCH_NPROC ?? availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(
        ' ',
      )} at the end; ingester on CPU 0; receiver and Alertmanager on CPU 1, nats-server on CPU ${NATS_CPU}. Per case a fresh ingester; events in 100-event requests (4 at a time). Backlog: ${EVENTS} events accepted while the destination held its answers, then released, timed until it took the last one (delivery alone). Accept + deliver: ${EVENTS} more, timed from the first request until the destination took the last (both on the ingester's one core). One run each.`,
    '',
    '| destination | queue | backlog delivered, events/s | per ingester CPU-s | CPU 0 / CPU 1 busy %, backlog | Alertmanager / nats-server CPU-s, backlog | accepted and delivered, events/s | per ingester CPU-s | ingester peak RSS MiB |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    ...(ceiling
      ? [
          '',
          `Alertmanager alone, the ceiling of the Alertmanager rows: the alerts intake sends for ${EVENTS} such events (new alerts, intake's own labels and annotations), posted straight to a fresh Alertmanager on CPU 1 in batches of ${MAX_ALERTS_PER_POST} over ${ALERTMANAGER_CONNECTIONS} connections from a client on CPU 0: **${ceiling.perSecond.toFixed(0)} alerts/s**, Alertmanager at ${ceiling.cpuPercent.toFixed(0)}% of its core (${ceiling.perCpuSecond.toFixed(0)} alerts per Alertmanager CPU-second).${NATS_CPU === '1' ? ' In the Alertmanager rows nats-server shares that core too.' : ''}${ceilings.size > 1 ? ` (the lower of the ${ceilings.size} measured, each right before its case)` : ''}`,
        ]
      : []),
    ...(bare
      ? [
          '',
          `A bare undici client, the floor of the HTTP batchSize 1 rows (\`http-alone\`): ${EVENTS} such events posted one per request over ${bareConnections} connections, as many at once, from CPU 0 to a fresh receiver of ours on CPU 1: **${bare.perSecond.toFixed(0)} events/s** (${bare.perCpuSecond.toFixed(0)} per client CPU-second, the client at ${bare.cpuPercent.toFixed(0)}% of its core).`,
        ]
      : []),
  ].join('\n');
  const ratios: string[] = [];
  const pct = (a: number, b: number): string => `${((100 * a) / b).toFixed(0)}%`;
  for (const queue of ['bus', 'outbox']) {
    const am = results.get(`am-${queue}`);
    const alone = ceilings.get(queue) ?? ceiling;
    if (am && alone)
      ratios.push(
        `Alertmanager from the ${queue}: ${pct(am.drainPerSecond, alone.perSecond)} of Alertmanager alone's ${alone.perSecond.toFixed(0)} alerts/s measured just before (target 80%); Alertmanager took ${am.drainPeerCpu.alertmanager ? (EVENTS / am.drainPeerCpu.alertmanager).toFixed(0) : '?'} alerts per its CPU-second (alone: ${alone.perCpuSecond.toFixed(0)})`,
      );
    const http = results.get(`http-1-${queue}`);
    if (http && bare)
      ratios.push(
        `HTTP batchSize 1 from the ${queue}: ${pct(http.drainPerCpuSecond, bare.perCpuSecond)} of the bare client's events per CPU-second (target 70%), ${pct(http.drainPerSecond, bare.perSecond)} on the wall clock`,
      );
  }
  const summary = ratios.length > 0 ? `\n\nIn this run: ${ratios.join('; ')}.` : '';
  process.stdout.write(`\n${table}${summary}\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `\n${table}${summary}\n`, { flag: 'a' });
}

runBenchmark(main);
