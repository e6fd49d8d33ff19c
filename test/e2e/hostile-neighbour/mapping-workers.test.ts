/**
 * Hostile-neighbour matrix, row "mapping workers and their queue, mapping CPU": namespace A sends
 * waves of 64 concurrent requests whose custom expression burns its whole CPU limit
 * (`[1..3].$count($distinct([1..100000]))`, stopped at mapping.timeout), while namespace B sends
 * custom-mapped requests at a steady rate to the same ingester.
 *
 * A reserves its worst case (the timeout) from its CPU budget before each evaluation is queued, so
 * it runs at most burst / timeout evaluations at once and is refused (429 MAPPING_CPU_LIMITED) for
 * the rest; it holds at most its share of the workers, and the workers take waiting evaluations
 * namespace by namespace in turn. So A's worker CPU stays within its budget plus its burst (plus
 * the evaluation a worker it holds may still be running), and B's requests find a worker free.
 * Before: all 64 were queued and run, ~30 s of worker CPU, and B waited behind them for seconds.
 *
 * The ingester and its workers are pinned to one core, as in the benchmark's shape: there A's
 * evaluations, which run long, are held to the idle-class worker, and B's short ones take the
 * prompt-class worker, which preempts it. With both workers of one class on one core, B's
 * evaluations waited behind A's burner for scheduler slices and ran at half speed.
 */
import { jest } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { mappingWorkerPids } from '../support/mapping-workers.js';
import { startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { expectUnharmed, steadyTenant, type SteadyResult } from './support.js';

jest.setTimeout(90_000);

const TIMEOUT_MS = 500;
/** The default namespace budget (tenantLimits.namespace): 500 ms of CPU a second, a burst of 2,000 ms. */
const CPU_PER_SECOND = 500;
const CPU_BURST = 2000;
/** Workers one namespace may hold (the default share of 2 workers: 1), each past its limit by the kill's grace. */
const WORKERS_A_MAY_HOLD = 1;
const ONE_EVALUATION_MS = TIMEOUT_MS + Math.max(50, TIMEOUT_MS * 0.2) + 50;
const CONCURRENT = 64;
const BASELINE_MS = 2_000;
/** Two of A's waves: the first is refused past its burst within a second. */
const ATTACK_MS = 6_000;
const B_PER_SECOND = 10;
/** 20 evaluations in flight: two seconds of B's traffic. */
const B_CPU_BURST = 10_000;

let ing: RunningIngester;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'intake-e2e-hn-mapping-'));
  ing = await startIngester((config) => {
    (config.routes as unknown[]).push(
      tenantRoute('burner', 'team-a', { mapping: { expression: '[1..3].$count($distinct([1..100000]))' } }),
      tenantRoute('steady', 'team-b', {
        mapping: { expression: '{"source": host, "severity": $lowercase(level), "description": "steady"}' },
        // Each of B's evaluations reserves the timeout while it waits or runs: at 10/s, the default
        // burst (4 in flight) would refuse B itself whenever this busy machine stalls its worker for
        // 400 ms. B's budget is sized for its own traffic; A's is the default.
        limits: { namespace: { mappingCpuBurstMillis: B_CPU_BURST } },
      }),
    );
    config.mapping = { timeout: `${TIMEOUT_MS}ms`, workers: 2 };
    config.sinks = { log: { path: join(dir, 'events.jsonl') } };
    config.deadLetter = { path: join(dir, 'dead.sqlite'), maxBytes: 64 << 20 };
  });
  pinned = pinToOneCore(ing.child.pid);
});

/** Every thread of process `pid` on one core (the workers it starts later inherit it), where taskset is. */
function pinToOneCore(pid: number | undefined): string {
  if (process.platform !== 'linux' || pid === undefined) return 'not pinned';
  const core = String(availableParallelism() - 1);
  const run = spawnSync('taskset', ['--all-tasks', '--cpu-list', '--pid', core, String(pid)], { encoding: 'utf8' });
  return run.status === 0 ? `pinned to CPU ${core}` : `not pinned (taskset: ${run.error?.message ?? run.stderr})`;
}
let pinned = 'not pinned';

const SCHED_BATCH = 3;
const SCHED_IDLE = 5;
/** A /proc stat file's numeric fields by their number in proc(5); undefined once it has ended. */
function statOf(path: string): ((field: number) => number) | undefined {
  try {
    const text = readFileSync(path, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (field) => Number(fields[field - 3]);
  } catch {
    return undefined;
  }
}

/** The ingester's mapping worker processes: each one's class by its threads, and its CPU time (ms). */
function workersOf(pid: number): { pid: number; cls: 'prompt' | 'idle' | 'other'; cpuMs: number }[] {
  return mappingWorkerPids(pid).flatMap((d) => {
    const stat = statOf(`/proc/${d}/stat`);
    if (!stat) return [];
    try {
      const threads = readdirSync(`/proc/${d}/task`).flatMap((t) => {
        const ts = statOf(`/proc/${d}/task/${t}/stat`);
        return ts ? [{ policy: ts(41), nice: ts(19) }] : [];
      });
      const cls = threads.every((t) => t.policy === SCHED_IDLE)
        ? 'idle'
        : threads.every((t) => t.policy === SCHED_BATCH && t.nice === 19)
          ? 'prompt'
          : 'other';
      return [{ pid: Number(d), cls, cpuMs: (stat(14) + stat(15)) * 10 }];
    } catch {
      return []; // it ended meanwhile
    }
  });
}

/**
 * Every 500 ms until `untilMs`: whether a prompt worker (B's) was there, and the class of every
 * worker that used 100 ms of CPU or more since the last look (A's burners).
 */
async function sampleWorkers(
  pid: number,
  untilMs: number,
): Promise<{ samples: number; withPrompt: number; burners: string[] }> {
  let last = new Map<number, number>();
  const seen = { samples: 0, withPrompt: 0, burners: [] as string[] };
  while (performance.now() < untilMs) {
    await new Promise((r) => setTimeout(r, 500));
    const now = workersOf(pid);
    seen.samples++;
    if (now.some((w) => w.cls === 'prompt')) seen.withPrompt++;
    for (const w of now) if (last.has(w.pid) && w.cpuMs - (last.get(w.pid) ?? 0) >= 100) seen.burners.push(w.cls);
    last = new Map(now.map((w) => [w.pid, w.cpuMs]));
  }
  return seen;
}

afterAll(async () => {
  await ing?.stop('SIGKILL'); // the row is over: a graceful stop would drain what A left in flight
});

/** Namespace B: custom-mapped requests at a steady rate. */
const tenantB = (durationMs: number): Promise<SteadyResult> =>
  steadyTenant({
    url: `${ing.url}/events/webhook_steady`,
    headers: { 'content-type': 'application/json', ...tenantAuth('steady') },
    body: (seq) => ({ body: JSON.stringify({ host: `web-${seq}`, level: 'MAJOR' }) }),
    perSecond: B_PER_SECOND,
    durationMs,
    timeoutMs: 15_000,
    adminUrl: ing.adminUrl,
  });

/** Namespace A: waves of CONCURRENT burners, the next a second after the last answer (or at `untilMs`), until `untilMs`. */
async function attack(untilMs: number): Promise<Map<string, number>> {
  const answers = new Map<string, number>();
  const one = async (): Promise<void> => {
    let key: string;
    try {
      const res = await fetch(`${ing.url}/events/webhook_burner`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...tenantAuth('burner') },
        body: '{"any":1}',
        signal: AbortSignal.timeout(20_000),
      });
      const body = (await res.json()) as { code?: string };
      key = `${res.status} ${body.code ?? ''}${res.headers.get('retry-after') ? ' retry-after' : ''}`;
    } catch {
      key = 'no answer';
    }
    answers.set(key, (answers.get(key) ?? 0) + 1);
  };
  while (performance.now() < untilMs) {
    await Promise.all(Array.from({ length: CONCURRENT }, one));
    await new Promise((r) => setTimeout(r, Math.min(1_000, Math.max(0, untilMs - performance.now()))));
  }
  return answers;
}

/** CPU seconds the mapping workers used for one integration (intake_mapping_cpu_seconds_total). */
async function cpuMsOf(integration: string): Promise<number> {
  const text = await (await fetch(`${ing.adminUrl}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('intake_mapping_cpu_seconds_total{') && l.includes(`integration="${integration}"`));
  return line ? Number(line.split(' ').pop()) * 1000 : 0;
}

/** cpuMsOf once it has stopped growing (A's evaluations still queued or running have ended), at most 60 s. */
async function settledCpuMsOf(integration: string): Promise<number> {
  const deadline = performance.now() + 60_000;
  let last = await cpuMsOf(integration);
  for (;;) {
    await new Promise((r) => setTimeout(r, 2_000));
    const now = await cpuMsOf(integration);
    if (now === last || performance.now() > deadline) return now;
    last = now;
  }
}

describe('hostile neighbour: mapping workers, their queue and the mapping CPU budget', () => {
  it("A's 64 concurrent CPU burners stay within A's budget; B's custom-mapped requests stay near their baseline", async () => {
    // The pool starts with the first custom expression: start it before anything is timed.
    const warm = await fetch(`${ing.url}/events/webhook_steady`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...tenantAuth('steady') },
      body: JSON.stringify({ host: 'warm', level: 'MINOR' }),
    });
    expect(warm.status).toBe(200);

    const alone = await tenantB(BASELINE_MS);
    expectUnharmed(alone, { p99BoundMs: 2_000 });

    const started = performance.now();
    const attacking = attack(started + ATTACK_MS);
    const sampling = pinned.startsWith('pinned')
      ? sampleWorkers(ing.child.pid as number, started + ATTACK_MS)
      : undefined;
    const beside = await tenantB(ATTACK_MS);
    const answers = await attacking;
    const workers = await sampling;
    // What A set going runs on after its requests were answered or given up: count it all.
    const usedMs = await settledCpuMsOf('burner');
    const elapsedS = (performance.now() - started) / 1000;
    const allowedMs = CPU_BURST + CPU_PER_SECOND * elapsedS + WORKERS_A_MAY_HOLD * ONE_EVALUATION_MS;

    // A bound near B's baseline that holds on a busy 2-core machine shared with other test runs:
    // B's evaluations run in a nice-19 worker (A's in the idle one beside it), which waits whenever
    // anything else on that core wants it, so a few times B's p99 alone, and never under a second
    // (measured at a load average of 14: B alone 82 ms, beside A 261 ms). Before admission B's
    // requests waited behind A's 64 for 15 s and more, or were refused MAPPING_BUSY. At B's 10/s the
    // two classes do not show here (the test in mapping-workers.test.ts measures them on one core).
    const p99BoundMs = Math.max(1_000, 4 * alone.p99Ms);
    console.log(
      `mapping workers (${pinned}): B alone p50 ${alone.p50Ms.toFixed(1)} ms p99 ${alone.p99Ms.toFixed(1)} ms; ` +
        `under attack p50 ${beside.p50Ms.toFixed(1)} ms p99 ${beside.p99Ms.toFixed(1)} ms (bound ${p99BoundMs.toFixed(0)} ms); ` +
        `A used ${Math.round(usedMs)} ms of worker CPU in ${elapsedS.toFixed(1)} s (allowed ${Math.round(allowedMs)} ms); ` +
        `A's answers ${JSON.stringify(Object.fromEntries(answers))}; workers ${JSON.stringify(workers)}`,
    );

    expectUnharmed(beside, { p99BoundMs });
    if (workers) {
      // A's evaluations, which run long, run in the idle worker; B keeps a prompt worker, which
      // preempts it on their one core (the first of A's burners starts in it and is moved to
      // SCHED_IDLE at a tenth of its limit: a moment without one while its replacement starts).
      // Before: both workers SCHED_IDLE, no prompt worker at any look.
      expect(workers.burners.length).toBeGreaterThan(0);
      expect({ burners: workers.burners, idle: workers.burners.filter((c) => c === 'idle').length }).toEqual({
        burners: workers.burners,
        idle: workers.burners.length,
      });
      expect(workers.withPrompt).toBeGreaterThanOrEqual(workers.samples / 2);
    }
    expect({ usedMs, ok: usedMs <= allowedMs }).toEqual({ usedMs, ok: true });
    // A ran into its limit (422, kept) for what it reserved, and was refused at once for the rest.
    expect(answers.get('422 MAPPING_FAILED')).toBeGreaterThan(0);
    expect(answers.get('429 MAPPING_CPU_LIMITED retry-after')).toBeGreaterThan(0);
  });
});
