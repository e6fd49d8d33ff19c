/**
 * What the noisy-neighbour benchmark's phases share (bench/noisy/noisy-neighbour.ts and the attack shapes
 * of bench/noisy/noisy-shapes.ts): an ingester on CPU 0, the load generators as processes of their own on
 * CPU 1, a bare node:http server on CPU 0 answering one canned answer, and the figures taken over
 * phases.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { Route } from '../../api/route.js';
import { median } from '../../test/support/stats.js';
import { ROOT } from '../../test/support/paths.js';
import { freePort } from '../../test/support/ports.js';
import { waitFor } from '../../test/support/waiting.js';
import { BENCH_EVENT, canConnect, startPinnedIngester, stopProcess, track } from '../support/processes.js';

export const A_POLICY = process.env.BENCH_NOISY_A_POLICY ?? 'idle';
if (!['idle', 'nice19'].includes(A_POLICY))
  throw new Error(`BENCH_NOISY_A_POLICY must be idle or nice19, not ${JSON.stringify(A_POLICY)}`);
/** How tenant A's generators give way to B's on CPU 1 (see `load`). */
const BACKGROUND = A_POLICY === 'idle' ? ['chrt', '--idle', '0'] : ['nice', '-n', '19'];

/** Tenant B's (and the rate attack's) single event. */
export const EVENT = BENCH_EVENT;

/** What a load got back: answers by status, and requests that got none (closed, timed out). */
export interface Answers {
  byStatus: Record<string, number>;
  errors: number;
}

export interface Load extends Answers {
  rps: number;
  p50: number;
  p99: number;
  /** Every counted latency in µs (tenant B only): pooled over the phases of a kind. */
  samples?: number[];
}

/** A generator's command line on CPU 1; `background`: under SCHED_IDLE (or nice 19), for tenant A. */
export const onLoadCpu = (argv: string[], background = false): string[] => {
  const pinned = ['taskset', '-c', '1', ...argv];
  return background ? [...BACKGROUND, ...pinned] : pinned;
};

/** Runs a generator to its end and returns the JSON line it printed. */
export async function runJson<T>(argv: string[], env: Record<string, string> = {}): Promise<T> {
  const child = spawn(argv[0] as string, argv.slice(1), {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`${argv.find((a) => a.endsWith('.js')) ?? argv[0]} exited with ${code}`);
  return JSON.parse(out) as T;
}

/**
 * Load from bench/support/open-loop.ts in a process of its own on CPU 1: evenly spaced sends, latency in
 * microseconds from when each request was due. Tenant A's generators run under SCHED_IDLE
 * (`chrt --idle 0`): on the shared client core any runnable normal task preempts them at once, so
 * they never delay B's sends or B's clock (what is measured is the ingester, not the load
 * generators). Until 2026-11-25 they ran at nice 19, which the kernel's scheduler (EEVDF) only
 * weighs, without preempting on wake-up; A's achieved rate is in the table to show that SCHED_IDLE
 * still leaves it all the CPU it needs.
 */
export const load = (o: {
  url: string;
  authorization: string;
  body: string;
  rate: number;
  seconds: number;
  connections: number;
  background?: boolean;
  samples?: boolean;
  /** More request headers (a signature, say). */
  headers?: Record<string, string>;
  /** Requests prepared, the body's `%i` replaced by 0 to variants-1, sent in turn. */
  variants?: number;
}): Promise<Load> =>
  runJson<Load>(
    onLoadCpu(
      [
        process.execPath,
        join(ROOT, 'dist/bench/support/open-loop.js'),
        o.url,
        o.authorization,
        o.body,
        String(o.rate),
        String(o.seconds),
        String(o.connections),
      ],
      o.background,
    ),
    {
      OPEN_LOOP_SAMPLES: o.samples ? '1' : '0',
      OPEN_LOOP_HEADERS: JSON.stringify(o.headers ?? {}),
      OPEN_LOOP_VARIANTS: String(o.variants ?? 1),
    },
  );

/**
 * An ingester of the built tree at `root` on CPU 0 (log sink to a file), once /readyz says ready;
 * its stdout (its log; --trace-gc's lines) in `dir`/ingester-PORT.stdout.
 */
export async function startNoisyIngester(o: {
  label: string;
  root: string;
  nodeFlags: string[];
  dir: string;
  routes: Route[];
  tenantLimits: unknown;
  /** More settings (remoteWrite, say). */
  settings?: Record<string, unknown>;
}): Promise<{ child: ChildProcess; port: number; admin: number }> {
  const [port, admin] = [await freePort(), await freePort()];
  const config = {
    listen: `127.0.0.1:${port}`,
    adminListen: `127.0.0.1:${admin}`,
    logLevel: 'warn',
    sinks: { log: { path: join(o.dir, `events-${port}.log`) } },
    deadLetter: { path: join(o.dir, `deadletter-${port}.sqlite`) },
    tenantLimits: o.tenantLimits,
    routes: o.routes,
    ...o.settings,
  };
  writeFileSync(join(o.dir, `noisy-${port}.yaml`), stringify(config));
  const child = await startPinnedIngester(`ingester (${o.label})`, join(o.dir, `noisy-${port}.yaml`), admin, {
    nodeFlags: ['--max-semi-space-size=4', ...o.nodeFlags],
    root: o.root,
    // Kept beside the config: what --trace-gc (BENCH_NOISY_FLAGS) or the ingester's log says.
    stdoutFile: join(o.dir, `ingester-${port}.stdout`),
  });
  return { child, port, admin };
}

/** Stops a server this benchmark started and waits for it to be gone. */
export const stopServer = (child: ChildProcess): Promise<void> => stopProcess(child);

/** An answer of the ingester (status, headers, body) for a bare server to repeat. */
export interface Canned {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export async function cannedAnswer(res: Response): Promise<Canned> {
  const body = await res.text();
  const headers: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (!['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(k)) headers[k] = v;
  });
  return { status: res.status, headers, body };
}

/**
 * A bare node:http server on CPU 0 (bench/noisy/canned-refusal.ts) answering every request with `canned`
 * once it has read the body: under SCHED_IDLE (the control phase: it never takes the ingester's
 * CPU), or at the ingester's own priority (the bare phase: it competes for the core as the
 * ingester's own answers to A do, at node:http's cost alone).
 */
export async function bareServer(
  what: string,
  canned: Canned,
  idle: boolean,
  atOnce = false,
): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const argv = [
    'taskset',
    '-c',
    '0',
    process.execPath,
    join(ROOT, 'dist/bench/noisy/canned-refusal.js'),
    String(port),
    String(canned.status),
    JSON.stringify(canned.headers),
    canned.body,
    ...(atOnce ? ['at-once'] : []),
  ];
  const command = idle ? ['chrt', '--idle', '0', ...argv] : argv;
  const child = track(spawn(command[0] as string, command.slice(1), { stdio: ['ignore', 'ignore', 'inherit'] }));
  await waitFor(what, () => canConnect(port), 10_000, 50);
  return { port, child };
}

export const sumStatus = (xs: Record<string, number>[]): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const x of xs) for (const [k, v] of Object.entries(x)) out[k] = (out[k] ?? 0) + v;
  return out;
};

export const medianLoad = (xs: Load[]): Load => ({
  rps: median(xs.map((x) => x.rps)),
  p50: median(xs.map((x) => x.p50)),
  p99: median(xs.map((x) => x.p99)),
  byStatus: sumStatus(xs.map((x) => x.byStatus)),
  errors: xs.reduce((n, x) => n + x.errors, 0),
});

/** Answers summed over loads: by status, and errors. */
export const sumAnswers = (xs: Answers[]): Answers => ({
  byStatus: sumStatus(xs.map((x) => x.byStatus)),
  errors: xs.reduce((n, x) => n + x.errors, 0),
});

export const statuses = (s: Record<string, number>): string =>
  Object.entries(s)
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ') || 'none';

/** Answers other than 200, plus requests that got no answer. */
export const refusals = (l: Answers): number =>
  Object.entries(l.byStatus).reduce((n, [code, v]) => (code === '200' ? n : n + v), 0) + l.errors;

/** The 99th percentile of every sample of these phases together, in ms (as open-loop takes it). */
export function pooledP99(xs: Load[]): number {
  const all = Float64Array.from(xs.flatMap((x) => x.samples ?? [])).sort();
  return (all[Math.min(all.length - 1, Math.floor(0.99 * all.length))] ?? Number.NaN) / 1000;
}
