/**
 * The sizing benchmark (make bench-sizing; docs/sizing.md is written from one run of it). What a
 * platform team needs per 1,000 events/s, measured at a fixed rate rather than at the most the
 * machine can do: on a shared machine the CPU seconds a process spends per event hold steady when
 * its throughput does not.
 *
 * In one invocation on loopback: a real nats-server with JetStream (.tools/bin/nats-server, CPU 1)
 * and, one after the other, two built ingesters on CPU 0 with the image's Node flags: one with the
 * log sink (to a file), one with the JetStream sink and a spool. Each ingester first sits idle
 * (its fixed cost), then takes two open-loop loads (bench/support/open-loop.ts on CPU 1: evenly
 * spaced sends, whatever the answers): single-event requests at SINGLE_RATE a second and 100-event
 * batches at BATCH_RATE requests a second. Each load has a warm-up load of its own before it; then,
 * over the measured load: the ingester's CPU time (its process tree, user + system), the events it
 * accepted (its own counters), its RSS sampled every 250 ms (steady: the median of the second
 * half) and its peak RSS (VmHWM, reset after the warm-up through /proc/PID/clear_refs); with
 * JetStream also nats-server's CPU time and RSS and the stream's bytes (the server's own count and
 * the files on disk). Every event is unique (a per-load tag and the request's number in its text),
 * so the bus stores each one instead of answering from its duplicate window.
 *
 *   BENCH_SIZING_SECONDS  seconds of each measured load (15)
 *   BENCH_SIZING_SINGLE_RATE  single-event requests a second (2000)
 *   BENCH_SIZING_BATCH_RATE   100-event requests a second (100: 10,000 events/s)
 *   BENCH_OUT=FILE  also append the tables, as markdown, to FILE
 *   BENCH_KEEP=1    keep the work dir (configs, the stream's files, the events log) afterwards
 */
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { stringify } from 'yaml';
import { median } from '../../test/support/stats.js';
import { freePort } from '../../test/support/ports.js';
import { load, type Load } from '../noisy/noisy-load.js';
import {
  BENCH_AUTH,
  BENCH_TENANT_LIMITS,
  benchWebhook,
  imageNodeFlags,
  processCpuSeconds,
  processTreeCpuSeconds,
  procStatusKiB,
  runBenchmark,
  startNatsServer,
  startPinnedIngester,
  stopProcess,
} from '../support/processes.js';

const envNumber = (name: string, fallback: number): number => {
  const n = Number(process.env[name] || fallback);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number`);
  return n;
};
const SECONDS = envNumber('BENCH_SIZING_SECONDS', 15);
const SINGLE_RATE = envNumber('BENCH_SIZING_SINGLE_RATE', 2000);
const BATCH_RATE = envNumber('BENCH_SIZING_BATCH_RATE', 100);
const BATCH_SIZE = 100;
const WARM_UP_SECONDS = 4;
const IDLE_SECONDS = 5;
const CONNECTIONS = 16;
const STREAM = 'INTAKE_EVENTS';

const dir = mkdtempSync(join(process.env.BENCH_DIR || tmpdir(), 'intake-sizing-'));
const log = (m: string): void => void process.stderr.write(`bench-sizing: ${m}\n`);
/** The work dir holds the stream's files and the events log (hundreds of MiB): gone unless kept. */
const removeDir = async (): Promise<void> => {
  if (process.env.BENCH_KEEP !== '1') rmSync(dir, { recursive: true, force: true });
};

/** A typical monitoring event: the fields most tools send, about 300 bytes of JSON. */
const event = (tag: string, source: string): Record<string, unknown> => ({
  source,
  severity: 'critical',
  class: 'cpu',
  type: 'high',
  description: `CPU above 95% for 5 minutes (${tag} %i)`,
  agent_time: '2026-11-27T05:00:00Z',
  custom_info: { cluster: 'prod-eu-1', service: 'checkout', runbook: 'https://runbooks.example.com/cpu-high' },
});

type Shape = 'single' | 'batch';
const bodyOf = (shape: Shape, tag: string): string =>
  shape === 'single'
    ? JSON.stringify(event(tag, 'web-01.example.com'))
    : JSON.stringify(Array.from({ length: BATCH_SIZE }, (_, i) => event(tag, `web-${i}.example.com`)));
const rateOf = (shape: Shape): number => (shape === 'single' ? SINGLE_RATE : BATCH_RATE);
const eventsPerRequest = (shape: Shape): number => (shape === 'single' ? 1 : BATCH_SIZE);

interface Ingester {
  sink: 'log' | 'jetstream';
  pid: number;
  port: number;
  admin: number;
  stop: () => Promise<void>;
}

async function startIngester(sink: Ingester['sink'], natsUrl: string): Promise<Ingester> {
  const [port, admin] = [await freePort(), await freePort()];
  const config = {
    listen: `127.0.0.1:${port}`,
    adminListen: `127.0.0.1:${admin}`,
    logLevel: 'warn',
    deadLetter: { path: join(dir, `deadletter-${sink}.sqlite`) },
    tenantLimits: BENCH_TENANT_LIMITS,
    routes: [benchWebhook()],
    ...(sink === 'log'
      ? { sinks: { log: { path: join(dir, 'events.log') } } }
      : { sinks: { jetstream: { url: natsUrl } }, spool: { path: join(dir, 'spool') } }),
  };
  const file = join(dir, `${sink}.yaml`);
  writeFileSync(file, stringify(config));
  const child = await startPinnedIngester(`ingester (${sink})`, file, admin, { nodeFlags: imageNodeFlags() });
  return { sink, pid: child.pid as number, port, admin, stop: () => stopProcess(child) };
}

const metricsText = async (admin: number): Promise<string> => (await fetch(`http://127.0.0.1:${admin}/metrics`)).text();

/** V8's heap (used, and what it holds from the system) and Node's external memory, in MiB: where the RSS goes. */
async function heapMiB(admin: number): Promise<{ used: number; total: number; external: number }> {
  const text = await metricsText(admin);
  const gauge = (name: string): number =>
    Number(new RegExp(`^intake_ingester_nodejs_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) / 2 ** 20;
  return {
    used: gauge('heap_size_used_bytes'),
    total: gauge('heap_size_total_bytes'),
    external: gauge('external_memory_bytes'),
  };
}

/** Events the ingester accepted so far: stored by every sink, or spooled. */
async function eventsAccepted(admin: number): Promise<number> {
  const text = await metricsText(admin);
  let sum = 0;
  for (const m of text.matchAll(/^intake_events_(?:processed|cached)_total\{[^}]*\} (\d+(?:\.\d+)?)$/gm)) {
    sum += Number(m[1]);
  }
  return sum;
}

/** Events refused so far, by reason (the refusal's code): what a 503 or 429 during a load was. */
async function refusedByReason(admin: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const m of (await metricsText(admin)).matchAll(/^intake_events_rejected_total\{([^}]*)\} (\d+)$/gm)) {
    const reason = /reason="([^"]*)"/.exec(m[1] as string)?.[1] ?? '?';
    out.set(reason, (out.get(reason) ?? 0) + Number(m[2]));
  }
  return out;
}

/** Bytes of the files under `path` as the disk holds them (allocated blocks). */
function diskBytes(path: string): number {
  try {
    const st = statSync(path);
    if (!st.isDirectory()) return st.blocks * 512;
    return readdirSync(path).reduce((sum, name) => sum + diskBytes(join(path, name)), 0);
  } catch {
    return 0;
  }
}

interface Phase {
  sink: Ingester['sink'];
  shape: Shape;
  rate: number;
  wallSeconds: number;
  events: number;
  cpuSeconds: number;
  rssSteadyMiB: number;
  rssPeakMiB: number;
  heap: { used: number; total: number; external: number };
  answers: Load;
  /** Events refused during the load, by reason. */
  refused: Record<string, number>;
  bus?: {
    cpuSeconds: number;
    rssBeforeMiB: number;
    rssAfterMiB: number;
    streamBytes: number;
    diskBytes: number;
    messages: number;
  };
}

interface Bus {
  pid: number;
  streamState: () => Promise<{ bytes: number; messages: number }>;
  storeDir: string;
}

async function measure(ing: Ingester, shape: Shape, bus: Bus | undefined): Promise<Phase> {
  const url = `http://127.0.0.1:${ing.port}/events/webhook_bench`;
  const rate = rateOf(shape);
  const run = (tag: string, seconds: number): Promise<Load> =>
    load({
      url,
      authorization: BENCH_AUTH,
      body: bodyOf(shape, `${ing.sink}-${shape}-${tag}`),
      rate,
      seconds,
      connections: CONNECTIONS,
      variants: Math.ceil(rate * (seconds + 1)),
    });
  await run('warm-up', WARM_UP_SECONDS);
  writeFileSync(`/proc/${ing.pid}/clear_refs`, '5'); // VmHWM from here on
  const rss: number[] = [];
  const sampler = setInterval(() => rss.push(procStatusKiB(ing.pid, 'VmRSS') / 1024), 250);
  const busBefore = bus && {
    cpu: processCpuSeconds(bus.pid),
    rss: procStatusKiB(bus.pid, 'VmRSS') / 1024,
    stream: await bus.streamState(),
    disk: diskBytes(bus.storeDir),
  };
  const eventsBefore = await eventsAccepted(ing.admin);
  const refusedBefore = await refusedByReason(ing.admin);
  const cpuBefore = processTreeCpuSeconds(ing.pid);
  const t0 = performance.now();
  const answers = await run('measured', SECONDS);
  const wallSeconds = (performance.now() - t0) / 1000;
  const cpuSeconds = processTreeCpuSeconds(ing.pid) - cpuBefore;
  const events = (await eventsAccepted(ing.admin)) - eventsBefore;
  clearInterval(sampler);
  const heap = await heapMiB(ing.admin);
  const refused: Record<string, number> = {};
  for (const [reason, n] of await refusedByReason(ing.admin)) {
    if (n > (refusedBefore.get(reason) ?? 0)) refused[reason] = n - (refusedBefore.get(reason) ?? 0);
  }
  const phase: Phase = {
    sink: ing.sink,
    shape,
    rate: rate * eventsPerRequest(shape),
    wallSeconds,
    events,
    cpuSeconds,
    rssSteadyMiB: median(rss.slice(Math.floor(rss.length / 2))),
    rssPeakMiB: procStatusKiB(ing.pid, 'VmHWM') / 1024,
    heap,
    answers,
    refused,
  };
  if (bus && busBefore) {
    const stream = await bus.streamState();
    phase.bus = {
      cpuSeconds: processCpuSeconds(bus.pid) - busBefore.cpu,
      rssBeforeMiB: busBefore.rss,
      rssAfterMiB: procStatusKiB(bus.pid, 'VmRSS') / 1024,
      streamBytes: stream.bytes - busBefore.stream.bytes,
      messages: stream.messages - busBefore.stream.messages,
      diskBytes: diskBytes(bus.storeDir) - busBefore.disk,
    };
  }
  log(
    `${ing.sink} ${shape}: ${events} events in ${wallSeconds.toFixed(1)} s, ${cpuSeconds.toFixed(2)} CPU s, answers ${JSON.stringify(answers.byStatus)} errors ${answers.errors} refused ${JSON.stringify(refused)}`,
  );
  return phase;
}

interface Idle {
  cores: number;
  rssMiB: number;
  heap: { used: number; total: number; external: number };
}

/** The ingester's CPU use when nothing arrives, in cores, and its RSS then. */
async function idle(ing: Ingester): Promise<Idle> {
  const cpu = processTreeCpuSeconds(ing.pid);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
  const cores = (processTreeCpuSeconds(ing.pid) - cpu) / ((performance.now() - t0) / 1000);
  return { cores, rssMiB: procStatusKiB(ing.pid, 'VmRSS') / 1024, heap: await heapMiB(ing.admin) };
}

async function main(): Promise<void> {
  const loadBefore = loadavg();
  const nats = await startNatsServer(dir);
  const nc = await connect({ servers: nats.url });
  const jsm = await jetstreamManager(nc);
  const bus: Bus = {
    pid: nats.child.pid as number,
    storeDir: join(dir, 'nats'),
    streamState: async () => {
      try {
        const { state } = await jsm.streams.info(STREAM);
        return { bytes: state.bytes, messages: state.messages };
      } catch {
        return { bytes: 0, messages: 0 };
      }
    },
  };
  const phases: Phase[] = [];
  const idles: Record<string, Idle> = {};
  try {
    for (const sink of ['log', 'jetstream'] as const) {
      const ing = await startIngester(sink, nats.url);
      try {
        idles[sink] = await idle(ing);
        for (const shape of ['single', 'batch'] as const) {
          phases.push(await measure(ing, shape, sink === 'jetstream' ? bus : undefined));
        }
      } finally {
        await ing.stop();
      }
    }
  } finally {
    await nc.close();
    await stopProcess(nats.child);
  }
  const loadAfter = loadavg();
  report(phases, idles, loadBefore, loadAfter);
}

const f = (n: number, d = 0): string =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) : 'n/a';

function report(phases: Phase[], idles: Record<string, Idle>, loadBefore: number[], loadAfter: number[]): void {
  const machine = `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), ${f(totalmem() / 2 ** 30, 1)} GiB, node ${process.version}`;
  const lines = [
    `Machine: ${machine}. Load average (1 min) ${f(loadBefore[0] ?? NaN, 2)} before, ${f(loadAfter[0] ?? NaN, 2)} after.`,
    `Ingesters on CPU 0 (node ${imageNodeFlags().join(' ')}), open-loop load (${CONNECTIONS} connections) and nats-server on CPU 1; each load ${SECONDS} s after a ${WARM_UP_SECONDS} s warm-up.`,
    '',
    '| hand-off | requests | offered events/s | events accepted | answers | ingester CPU s | cores per 1,000 events/s | µs CPU per event | RSS steady MiB | RSS peak MiB | V8 heap used / total, external MiB (at the end) |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const p of phases) {
    const idleCores = idles[p.sink]?.cores ?? 0;
    // The fixed cost (timers, metrics) is counted once per replica, in the idle row, not per event.
    const perEvent = (p.cpuSeconds - idleCores * p.wallSeconds) / p.events;
    const statuses = Object.entries(p.answers.byStatus)
      .map(([s, n]) => `${s}: ${n}`)
      .join(', ');
    lines.push(
      `| ${p.sink} | ${p.shape === 'single' ? 'single event' : `${BATCH_SIZE}-event batch`} | ${f(p.rate)} | ${f(p.events)} | ${statuses}${p.answers.errors ? `, errors: ${p.answers.errors}` : ''}${Object.keys(p.refused).length ? ` (events refused: ${JSON.stringify(p.refused)})` : ''} | ${f(p.cpuSeconds, 2)} | ${f(perEvent * 1000, 3)} | ${f(perEvent * 1e6, 1)} | ${f(p.rssSteadyMiB)} | ${f(p.rssPeakMiB)} | ${f(p.heap.used)} / ${f(p.heap.total)}, ${f(p.heap.external)} |`,
    );
  }
  for (const [sink, i] of Object.entries(idles)) {
    lines.push(
      `| ${sink} | idle (${IDLE_SECONDS} s, nothing arriving) | 0 | | | | ${f(i.cores, 4)} cores | | ${f(i.rssMiB)} | | ${f(i.heap.used)} / ${f(i.heap.total)}, ${f(i.heap.external)} |`,
    );
  }
  lines.push(
    '',
    '| the bus (nats-server, one server, file storage, replicas 1) | requests | events | messages | stream bytes | bytes per event (stream) | on disk bytes | bytes per event (disk) | per million events on disk | nats-server CPU s | cores per 1,000 events/s | RSS before, after MiB |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const p of phases) {
    if (!p.bus) continue;
    const b = p.bus;
    lines.push(
      `| | ${p.shape === 'single' ? 'single event' : `${BATCH_SIZE}-event batch`} | ${f(p.events)} | ${f(b.messages)} | ${f(b.streamBytes)} | ${f(b.streamBytes / p.events)} | ${f(b.diskBytes)} | ${f(b.diskBytes / p.events)} | ${f(((b.diskBytes / p.events) * 1e6) / 2 ** 20)} MiB | ${f(b.cpuSeconds, 2)} | ${f((b.cpuSeconds / p.events) * 1000, 3)} | ${f(b.rssBeforeMiB)}, ${f(b.rssAfterMiB)} |`,
    );
  }
  const table = lines.join('\n');
  process.stdout.write(`\n${table}\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `\n${table}\n`, { flag: 'a' });
  if (process.env.BENCH_SIZING_JSON)
    writeFileSync(process.env.BENCH_SIZING_JSON, JSON.stringify({ phases, idles }, null, 2));
}

runBenchmark(main, removeDir);
