/**
 * The mapping worker pool on its own (api/mapping/worker-pool.ts), with the built worker script:
 * worker processes stopped at their CPU limit by SIGKILL and replaced, killed on close, and
 * started without chrt when chrt is there but refuses; each tenant's share of the workers and of
 * the queue, and waiting evaluations taken tenant by tenant in turn; the two classes of workers
 * (prompt: SCHED_BATCH at nice 19; idle: SCHED_IDLE), a tenant whose evaluation ran long held to
 * the idle ones, and a prompt worker demoted in the middle of a long evaluation; batches: a
 * tenant's waiting payloads in one message, stopped for another tenant, a long batch demoted and
 * finished in its worker, a long tenant's batches in idle workers only.
 */
import { jest } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_MAPPING_LIMITS, MappingBusy, MappingError, type MappingLimits } from '../../api/mapping/engine.js';
import { writeFrame } from '../../api/mapping/frames.js';
import { MappingWorkerPool } from '../../api/mapping/worker-pool.js';
import { readProcStat, type WorkerPriority } from '../../api/mapping/worker-priority.js';
import { ROOT } from '../support/paths.js';
import { waitFor } from '../support/waiting.js';

jest.setTimeout(60_000);

const workerUrl = pathToFileURL(join(ROOT, 'dist/api/mapping/mapping-worker.js'));
const limits: MappingLimits = { ...DEFAULT_MAPPING_LIMITS, timeoutMs: 300 };
const bytes = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));
const alive = (pid: number): boolean => existsSync(`/proc/${pid}`);
const SCHED_BATCH = 3;
const SCHED_IDLE = 5;
/** The scheduling policy and nice value of each thread of a process. */
const threadPolicies = (pid: number): { policy: number; nice: number }[] =>
  readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
    const stat = readProcStat(`/proc/${pid}/task/${tid}/stat`);
    return stat ? [{ policy: stat(41), nice: stat(19) }] : [];
  });

// Past every limit these tests set whatever the JIT did, almost all in one uninterruptible
// built-in call: $distinct over 40,000 distinct strings (3.6-4.7 s here; the list is made in some
// 30-90 ms, the only part the worker's own check can stop). $distinct over 100,000 numbers took
// 1.5-4.6 s on one machine, within a test's limit when warm.
const BURNER = '$count($distinct($split($string([1..40000]), ",")))';

describe('the mapping worker pool', () => {
  (process.platform === 'linux' ? it : it.skip)(
    'kills a worker whose evaluation passes its CPU limit (D1012, charged about the limit) and maps the next payload in a new one; close() kills the rest',
    async () => {
      const lost: string[] = [];
      const pool = new MappingWorkerPool({ size: 1, workerUrl, onWorkerLost: (r) => lost.push(r) });
      try {
        const first = await pool.run('{"n": n}', limits, bytes({ n: 1 }));
        expect(first.items).toEqual([{ n: 1 }]);
        const [hostilePid] = pool.pids;
        const err = (await pool.run(BURNER, limits, bytes({})).then(
          () => undefined,
          (e: unknown) => e,
        )) as MappingError;
        expect(err).toBeInstanceOf(MappingError);
        expect(err.code).toBe('D1012');
        expect(err.cpuMs).toBeGreaterThanOrEqual(limits.timeoutMs);
        expect(err.cpuMs).toBeLessThan(limits.timeoutMs * 3);
        expect(lost).toHaveLength(1);
        await waitFor('the killed worker gone', async () => !alive(hostilePid as number));
        const next = await pool.run('{"n": n + 1}', limits, bytes({ n: 1 }));
        expect(next.items).toEqual([{ n: 2 }]);
        const [replacement] = pool.pids;
        expect(replacement).not.toBe(hostilePid);
        await pool.close();
        expect(alive(replacement as number)).toBe(false);
        await expect(pool.run('n', limits, bytes({ n: 1 }))).rejects.toThrow(/shutting down/);
      } finally {
        await pool.close();
      }
    },
  );

  (process.platform === 'linux' ? it : it.skip)(
    "a worker collects its garbage on its JavaScript thread: V8's helper threads seldom wake",
    async () => {
      const pool = new MappingWorkerPool({ size: 1, workerUrl });
      try {
        // Garbage enough for dozens of scavenges, and code hot enough for the optimising compiler.
        // (A cold worker's first of these takes some 340 ms of CPU time: a limit far above it.)
        const generous = { ...limits, timeoutMs: 5000 };
        for (let i = 0; i < 20; i++)
          expect((await pool.run('$count([1..10000].{"x": $string($)})', generous, bytes({}))).items).toEqual([10000]);
        const [pid] = pool.pids;
        // Context switches of each of V8's helper threads (named V8Worker), from start-up on.
        const helperSwitches = readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
          if (readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim() !== 'V8Worker') return [];
          const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
          return [Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1])];
        });
        expect(helperSwitches.length).toBeGreaterThan(0);
        // Compile jobs still wake them; with the collector's parallel jobs too, thousands in all.
        expect(helperSwitches.reduce((a, b) => a + b, 0)).toBeLessThan(1000);
      } finally {
        await pool.close();
      }
    },
  );

  (process.platform === 'linux' ? it : it.skip)(
    'starts its workers without chrt, at nice 19, when chrt is on PATH but cannot set the policy, and says why',
    async () => {
      // A chrt that refuses as util-linux's does under a seccomp profile that forbids it.
      const dir = mkdtempSync(join(tmpdir(), 'intake-e2e-chrt-'));
      const chrt = join(dir, 'chrt');
      writeFileSync(
        chrt,
        `#!${process.execPath}\nprocess.stderr.write("chrt: failed to set pid 0's policy: Operation not permitted\\n");\nprocess.exit(1);\n`,
      );
      chmodSync(chrt, 0o755);
      const path = process.env.PATH;
      process.env.PATH = `${dir}${delimiter}${path ?? ''}`;
      let priority: WorkerPriority | undefined;
      const pool = new MappingWorkerPool({ size: 1, workerUrl, onFirstWorker: (p) => (priority = p) });
      try {
        const result = await pool.run('{"n": n}', limits, bytes({ n: 1 }));
        expect(result.items).toEqual([{ n: 1 }]);
        expect(priority).toEqual({
          policy: 'nice',
          nice: 19,
          why: "chrt could not set SCHED_IDLE: chrt: failed to set pid 0's policy: Operation not permitted",
        });
      } finally {
        process.env.PATH = path;
        await pool.close();
      }
    },
  );

  it('never keeps the process alive while its workers are idle, even if it is never closed', () => {
    // A component that forgets close() must still exit: idle workers, their IPC channel and their
    // stderr pipe are all unreferenced.
    const script = [
      `import { MappingWorkerPool } from ${JSON.stringify(pathToFileURL(join(ROOT, 'dist/api/mapping/worker-pool.js')).href)};`,
      `const pool = new MappingWorkerPool({ size: 2, workerUrl: new URL(${JSON.stringify(workerUrl.href)}) });`,
      // While the first worker starts nothing of the pool holds the process (a server would): a timer does.
      'const hold = setInterval(() => {}, 1000);',
      `const r = await pool.run('{"n": n}', ${JSON.stringify(limits)}, new TextEncoder().encode('{"n":1}'));`,
      'clearInterval(hold);',
      'process.stdout.write(JSON.stringify(r.items));',
    ].join('\n');
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect({ stdout: run.stdout, stderr: run.stderr, signal: run.signal, status: run.status }).toEqual({
      stdout: '[{"n":1}]',
      stderr: '',
      signal: null,
      status: 0,
    });
  });

  const failed = (p: Promise<unknown>): Promise<unknown> =>
    p.then(
      () => undefined,
      (e: unknown) => e,
    );

  it('takes waiting evaluations tenant by tenant in turn, not first come first served', async () => {
    const pool = new MappingWorkerPool({ size: 1, workerUrl });
    try {
      const done: string[] = [];
      const run = (tenant: string, n: number) =>
        pool.run('{"n": n}', limits, bytes({ n }), { tenant }).then(() => done.push(`${tenant}${n}`));
      // All four wait for the worker to start: a's three came first.
      await Promise.all([run('a', 1), run('a', 2), run('a', 3), run('b', 1)]);
      expect(done).toEqual(['a1', 'b1', 'a2', 'a3']);
    } finally {
      await pool.close();
    }
  });

  (process.platform === 'linux' ? it : it.skip)(
    "holds a tenant to its share of the workers: another tenant's payload takes the idle worker at once, also while a worker killed at the first tenant's limit is replaced",
    async () => {
      const pool = new MappingWorkerPool({ size: 2, workerUrl });
      try {
        expect(pool.shares.maxRunningPerTenant).toBe(1);
        // Both workers started and ready.
        await Promise.all([
          pool.run('n', limits, bytes({ n: 1 }), { tenant: 'a' }),
          pool.run('n', limits, bytes({ n: 1 }), { tenant: 'b' }),
        ]);
        // Long enough that b is surely answered while it runs, even on a busy machine.
        const first = failed(pool.run(BURNER, { ...limits, timeoutMs: 1500 }, bytes({}), { tenant: 'a' }));
        const second = pool.run('{"n": n}', limits, bytes({ n: 2 }), { tenant: 'a' });
        expect(pool.loadOf('a')).toMatchObject({ running: 1, queued: 1 });
        const b = await pool.run('{"n": n}', limits, bytes({ n: 3 }), { tenant: 'b' });
        expect(b.items).toEqual([{ n: 3 }]);
        // b was answered while a's burner still ran and a's second payload waited.
        expect(pool.loadOf('a')).toMatchObject({ running: 1, queued: 1 });
        expect(((await first) as MappingError).code).toBe('D1012');
        // The killed worker's replacement counts against a until it is ready: a's payload waits
        // for it, and the idle worker stays b's.
        await waitFor('the replacement started', async () => pool.pids.length === 2, 10_000, 1);
        expect(pool.loadOf('a')).toMatchObject({ running: 0, queued: 1 });
        expect((await pool.run('{"n": n}', limits, bytes({ n: 4 }), { tenant: 'b' })).items).toEqual([{ n: 4 }]);
        expect((await second).items).toEqual([{ n: 2 }]);
      } finally {
        await pool.close();
      }
    },
  );

  (process.platform === 'linux' ? it : it.skip)(
    'holds evaluations without a tenant (the operator) to no share: they may take every worker',
    async () => {
      const pool = new MappingWorkerPool({ size: 2, workerUrl });
      try {
        const runs = [1, 2].map(() => failed(pool.run(BURNER, { ...limits, timeoutMs: 1500 }, bytes({}))));
        await waitFor('both workers busy', async () => pool.loadOf('').running === 2);
        await Promise.all(runs);
      } finally {
        await pool.close();
      }
    },
  );

  (process.platform === 'linux' ? it : it.skip)(
    "hands a tenant's waiting payloads to a worker in one batch, each answered with its own events; a batch whose worker is killed runs again one payload at a time, so only the payload past its limit fails",
    async () => {
      const pool = new MappingWorkerPool({ size: 1, workerUrl });
      try {
        // All wait for the worker to start, then go to it as one batch.
        const many = await Promise.all(
          Array.from({ length: 12 }, (_, n) => pool.run('{"n": n}', limits, bytes({ n }), { tenant: 'a' })),
        );
        expect(many.map((r) => r.items)).toEqual(Array.from({ length: 12 }, (_, n) => [{ n }]));
        expect(pool.restarts).toBe(0);
        // A batch of three with a burner in the middle: its worker is killed past the batch's
        // limits, then each payload runs alone.
        const results = await Promise.all([
          pool.run('{"n": n}', limits, bytes({ n: 1 }), { tenant: 'a' }),
          failed(pool.run(BURNER, limits, bytes({}), { tenant: 'a' })),
          pool.run('{"n": n}', limits, bytes({ n: 2 }), { tenant: 'a' }),
        ]);
        expect((results[0] as { items: unknown[] }).items).toEqual([{ n: 1 }]);
        expect((results[1] as MappingError).code).toBe('D1012');
        // Its own run to the limit, and a share of the batch's lost time.
        expect((results[1] as MappingError).cpuMs).toBeGreaterThanOrEqual(limits.timeoutMs);
        expect((results[2] as { items: unknown[] }).items).toEqual([{ n: 2 }]);
        // The batch's worker, then the burner's alone.
        expect(pool.restarts).toBe(2);
      } finally {
        await pool.close();
      }
    },
  );

  (process.platform === 'linux' ? it : it.skip)(
    "stops a tenant's batch after the payload it is evaluating when another tenant's payload waits: that payload waits behind one evaluation, not the batch",
    async () => {
      const pool = new MappingWorkerPool({ size: 1, workerUrl });
      try {
        await pool.run('n', limits, bytes({ n: 1 }), { tenant: 'a' });
        const slow = { ...limits, timeoutMs: 10_000 };
        const done: string[] = [];
        // Five of a's payloads, each some tens of ms of CPU time: the first goes to the idle worker
        // alone, the four that wait for it go next as one batch.
        const a = [1, 2, 3, 4, 5].map((n) =>
          pool.run('$count($distinct([1..20000]))', slow, bytes({}), { tenant: 'a' }).then(() => done.push(`a${n}`)),
        );
        await waitFor('the batch under way', async () => pool.load.running === 4, 20_000, 1);
        const b = pool.run('{"n": n}', limits, bytes({ n: 1 }), { tenant: 'b' }).then(() => done.push('b'));
        await Promise.all([...a, b]);
        // b went after the payload a's batch was evaluating (or the one after it, had the worker
        // already begun that one when the request to stop arrived), not after the whole batch.
        expect(done.indexOf('b')).toBeLessThanOrEqual(3);
        expect(done.filter((d) => d.startsWith('a'))).toEqual(['a1', 'a2', 'a3', 'a4', 'a5']);
      } finally {
        await pool.close();
      }
    },
  );

  (process.platform === 'linux' ? it : it.skip)(
    "runs a tenant whose evaluation ran long in idle workers only, another's short ones in the prompt worker; a prompt worker that runs long is demoted and replaced",
    async () => {
      const pool = new MappingWorkerPool({ size: 2, workerUrl });
      const burn = { ...limits, timeoutMs: 1500 };
      const classOf = (cls: string) => pool.workers.find((w) => w.cls === cls);
      try {
        // Warm-ups with a generous limit: a cold worker's first evaluation can pass a tenth of the
        // usual one on a loaded machine, which would (rightly) demote it and mark its tenant long.
        const warm = { ...limits, timeoutMs: 5000 };
        await Promise.all([
          pool.run('n', warm, bytes({ n: 1 }), { tenant: 'a' }),
          pool.run('n', warm, bytes({ n: 1 }), { tenant: 'b' }),
        ]);
        await waitFor('both workers ready and free', async () => pool.workers.every((w) => w.ready && !w.busy));
        const prompt = classOf('prompt')?.pid as number;
        const idle = classOf('idle')?.pid as number;
        expect(new Set(threadPolicies(prompt).map((t) => `${t.policy} ${t.nice}`))).toEqual(
          new Set([`${SCHED_BATCH} 19`]),
        );
        expect(new Set(threadPolicies(idle).map((t) => t.policy))).toEqual(new Set([SCHED_IDLE]));

        // a has run nothing long yet: its burner takes the prompt worker, which is moved to
        // SCHED_IDLE (every thread) once it passes a tenth of the limit, and a is marked long.
        expect(pool.laneOf('a')).toBe('any');
        const first = failed(pool.run(BURNER, burn, bytes({}), { tenant: 'a' }));
        expect(pool.workers.find((w) => w.busy)?.pid).toBe(prompt);
        await waitFor('the prompt worker demoted', async () =>
          threadPolicies(prompt).every((t) => t.policy === SCHED_IDLE),
        );
        expect(pool.laneOf('a')).toBe('idle');
        // A new prompt worker starts in its place at once: b's payload takes it while a's burner runs on.
        await waitFor('a new prompt worker ready', async () =>
          pool.workers.some((w) => w.cls === 'prompt' && w.pid !== prompt && w.ready),
        );
        expect((await pool.run('{"n": n}', limits, bytes({ n: 7 }), { tenant: 'b' })).items).toEqual([{ n: 7 }]);
        expect(pool.loadOf('a').running).toBe(1);
        expect((await first) instanceof MappingError && ((await first) as MappingError).code).toBe('D1012');
        // Its replacement is a prompt worker again.
        await waitFor(
          'a prompt worker in its place, ready',
          async () => (classOf('prompt')?.pid ?? prompt) !== prompt && pool.workers.every((w) => w.ready),
        );
        await pool.run('n', limits, bytes({ n: 1 }), { tenant: 'b' });

        // Marked long, a runs in the idle worker; b's short payloads take the prompt worker meanwhile.
        const second = failed(pool.run(BURNER, burn, bytes({}), { tenant: 'a' }));
        // (once the killed worker is gone: until then it counts against a's share)
        await waitFor("a's burner started", async () => pool.workers.some((w) => w.busy));
        expect(pool.workers.filter((w) => w.busy)).toEqual([{ pid: idle, cls: 'idle', ready: true, busy: true }]);
        for (let n = 0; n < 3; n++)
          expect((await pool.run('{"n": n}', limits, bytes({ n }), { tenant: 'b' })).items).toEqual([{ n }]);
        expect(pool.workers.filter((w) => w.busy)).toEqual([{ pid: idle, cls: 'idle', ready: true, busy: true }]);
        expect(((await second) as MappingError).code).toBe('D1012');
      } finally {
        await pool.close();
      }
    },
  );

  (process.platform === 'linux' ? it : it.skip)(
    'holds a tenant marked long to the idle workers even while a prompt worker is free',
    async () => {
      // A share of both workers, so that only the class keeps a's second payload waiting.
      const pool = new MappingWorkerPool({ size: 2, workerUrl, maxRunningPerTenant: 2, longCpuMs: 50 });
      try {
        await Promise.all([
          pool.run('n', limits, bytes({ n: 1 }), { tenant: 'a' }),
          pool.run('n', limits, bytes({ n: 1 }), { tenant: 'b' }),
        ]);
        const first = failed(pool.run(BURNER, limits, bytes({}), { tenant: 'a' }));
        await first;
        await waitFor(
          'both workers ready',
          async () => pool.workers.length === 2 && pool.workers.every((w) => w.ready && !w.busy),
        );
        expect(pool.laneOf('a')).toBe('idle');
        const second = failed(pool.run(BURNER, limits, bytes({}), { tenant: 'a' }));
        const short = pool.run('{"n": n}', limits, bytes({ n: 5 }), { tenant: 'a' });
        await waitFor('the burner running', async () => pool.load.running === 1);
        expect(pool.loadOf('a')).toMatchObject({ running: 1, queued: 1 });
        expect(pool.workers.filter((w) => w.busy).map((w) => w.cls)).toEqual(['idle']);
        expect(((await second) as MappingError).code).toBe('D1012');
        expect((await short).items).toEqual([{ n: 5 }]);
        // The mark runs out: a takes the prompt worker again.
        const brief = new MappingWorkerPool({ size: 2, workerUrl, longForMs: 1 });
        try {
          await failed(brief.run(BURNER, limits, bytes({}), { tenant: 'a' }));
          await new Promise((r) => setTimeout(r, 5));
          expect(brief.laneOf('a')).toBe('any');
        } finally {
          await brief.close();
        }
      } finally {
        await pool.close();
      }
    },
  );

  (process.platform === 'linux' ? it : it.skip)(
    'demotes a prompt worker whose batch runs long and lets the batch finish there; a tenant marked long gets its batches from the idle worker only',
    async () => {
      // Each payload some tens of ms of CPU time, past a long mark of 20 ms: a batch of four is long
      // once it used 80 ms (the sum of their tenths).
      const pool = new MappingWorkerPool({ size: 2, workerUrl, longCpuMs: 20 });
      const slow = { ...limits, timeoutMs: 10_000 };
      const DISTINCT = '$count($distinct([1..20000]))';
      try {
        await Promise.all([
          pool.run('n', limits, bytes({ n: 1 }), { tenant: 'a' }),
          pool.run('n', limits, bytes({ n: 1 }), { tenant: 'b' }),
        ]);
        // The pool at rest: the idle worker, still starting after the warm-up on a slow machine,
        // must not come ready in the middle of what follows and change where a's batch goes.
        await waitFor('both workers ready', async () => pool.workers.every((w) => w.ready), 20_000, 5);
        const prompt = pool.workers.find((w) => w.cls === 'prompt')?.pid as number;
        const idle = pool.workers.find((w) => w.cls === 'idle')?.pid as number;
        // a's short payload takes the prompt worker; its four others wait (a's share is one
        // worker) and then go to it as one batch.
        const short = pool.run('{"n": n}', limits, bytes({ n: 0 }), { tenant: 'a' });
        const batch = [1, 2, 3, 4].map((n) =>
          pool.run(`{"n": n, "c": ${DISTINCT}}`, slow, bytes({ n }), { tenant: 'a' }),
        );
        expect((await short).items).toEqual([{ n: 0 }]);
        expect(pool.laneOf('a')).toBe('any');
        expect(pool.workers.filter((w) => w.busy)).toEqual([{ pid: prompt, cls: 'prompt', ready: true, busy: true }]);
        expect(pool.load.running).toBe(4);
        // The batch goes on in the demoted worker and is answered in full, nothing killed.
        expect((await Promise.all(batch)).map((r) => r.items)).toEqual([1, 2, 3, 4].map((n) => [{ n, c: 20000 }]));
        expect(pool.restarts).toBe(0);
        expect(pool.laneOf('a')).toBe('idle');
        // The demoted worker is retired, a new prompt worker took its place.
        await waitFor('the demoted worker retired', async () => !alive(prompt));
        await waitFor(
          'a new prompt worker ready',
          async () => pool.workers.length === 2 && pool.workers.every((w) => w.ready),
        );
        expect(pool.workers.find((w) => w.cls === 'prompt')?.pid).not.toBe(prompt);

        // Marked long, a's payloads (one alone, then a batch of the others) run in the idle worker
        // only; b's short ones take the prompt worker meanwhile.
        const again = [0, 1, 2, 3].map((n) =>
          pool.run(`{"n": n, "c": ${DISTINCT}}`, slow, bytes({ n }), { tenant: 'a' }),
        );
        expect(pool.workers.filter((w) => w.busy)).toEqual([{ pid: idle, cls: 'idle', ready: true, busy: true }]);
        await waitFor('the batch in the idle worker', async () => pool.load.running === 3, 20_000, 1);
        expect(pool.workers.filter((w) => w.busy).map((w) => w.pid)).toEqual([idle]);
        expect((await pool.run('{"n": n}', limits, bytes({ n: 9 }), { tenant: 'b' })).items).toEqual([{ n: 9 }]);
        expect((await Promise.all(again)).map((r) => r.items)).toEqual([0, 1, 2, 3].map((n) => [{ n, c: 20000 }]));
        expect(pool.restarts).toBe(0);
      } finally {
        await pool.close();
      }
    },
  );

  (process.platform === 'linux' ? it : it.skip)(
    "still hands a tenant's waiting payloads over in one batch while a long tenant waits that could not take the worker",
    async () => {
      const pool = new MappingWorkerPool({ size: 2, workerUrl });
      // a: some hundreds of ms of CPU each, past a tenth of its limit (so a is marked long) and
      // within it (nothing killed). b: some ms each, far below a tenth of its limit.
      const aLimits = { ...limits, timeoutMs: 5000 };
      const A_LONG = '[1..3].$count($distinct([1..12000].$string($)))';
      const bLimits = { ...limits, timeoutMs: 10_000 };
      const B_SHORT = '{"n": n, "c": $count($distinct([1..5000]))}';
      try {
        await Promise.all([
          pool.run('n', bLimits, bytes({ n: 1 }), { tenant: 'a' }),
          pool.run('n', bLimits, bytes({ n: 1 }), { tenant: 'b' }),
        ]);
        // a runs long once: marked long, its payloads go to the idle worker only from now on.
        await pool.run(A_LONG, aLimits, bytes({}), { tenant: 'a' });
        expect(pool.laneOf('a')).toBe('idle');
        await waitFor(
          'both workers ready',
          async () => pool.workers.length === 2 && pool.workers.every((w) => w.ready),
          20_000,
        );
        // One of a's holds the idle worker (its share), two more wait for it throughout.
        const a = [1, 2, 3].map(() => pool.run(A_LONG, aLimits, bytes({}), { tenant: 'a' }));
        expect(pool.loadOf('a')).toMatchObject({ running: 1, queued: 2 });
        // b's eight at once: the first goes to the prompt worker alone, the seven that wait for it
        // go next, in one batch, although a waits: a could not take that worker.
        // Payloads being evaluated, a's one included (a tenant's `running` counts workers).
        let most = 0;
        const watch = setInterval(() => (most = Math.max(most, pool.load.running)), 1);
        try {
          const b = await Promise.all(
            Array.from({ length: 8 }, (_, n) => pool.run(B_SHORT, bLimits, bytes({ n }), { tenant: 'b' })),
          );
          expect(b.map((r) => r.items)).toEqual(Array.from({ length: 8 }, (_, n) => [{ n, c: 5000 }]));
          // a still waited while b's went (otherwise b's met an empty queue and proved nothing).
          expect(pool.loadOf('a').queued).toBeGreaterThan(0);
        } finally {
          clearInterval(watch);
        }
        expect(most).toBe(1 + 7);
        expect(pool.laneOf('b')).toBe('any');
        await Promise.all(a);
        expect(pool.restarts).toBe(0);
      } finally {
        await pool.close();
      }
    },
  );

  (process.platform === 'linux' ? it : it.skip)(
    "gives another tenant's evaluation the core before a long tenant's burner beside it on one core (the prompt worker preempts the idle one)",
    async () => {
      // Every worker on one core, as the benchmark pins the ingester: this thread's affinity is
      // what the pool's workers inherit.
      const mask = spawnSync('taskset', ['--pid', String(process.pid)], { encoding: 'utf8' })
        .stdout.trim()
        .split(' ')
        .pop();
      expect(spawnSync('taskset', ['--cpu-list', '--pid', '0', String(process.pid)]).status).toBe(0);
      const pool = new MappingWorkerPool({ size: 2, workerUrl });
      const cpuMsOf = (pid: number): number => {
        const stat = readProcStat(`/proc/${pid}/stat`);
        return stat ? (stat(14) + stat(15)) * 10 : NaN;
      };
      try {
        await Promise.all([
          pool.run('n', limits, bytes({ n: 1 }), { tenant: 'a' }),
          pool.run('n', limits, bytes({ n: 1 }), { tenant: 'b' }),
        ]);
        // A burner marks a long (a tenth of its 300 ms limit), then one that runs for seconds.
        expect(((await failed(pool.run(BURNER, limits, bytes({}), { tenant: 'a' }))) as MappingError).code).toBe(
          'D1012',
        );
        await waitFor('two workers ready', async () => pool.workers.length === 2 && pool.workers.every((w) => w.ready));
        const burner = failed(pool.run(BURNER, { ...limits, timeoutMs: 20_000 }, bytes({}), { tenant: 'a' }));
        await waitFor("a's burner running", async () => pool.workers.some((w) => w.busy));
        const burnerPid = pool.workers.find((w) => w.busy)?.pid as number;
        await new Promise((r) => setTimeout(r, 200));
        // b's evaluation, about 300 ms of CPU (short against its 5 s limit), beside it on the same core.
        const before = cpuMsOf(burnerPid);
        const b = await pool.run('$sum([1..100000].($ * 2))', { ...limits, timeoutMs: 5_000 }, bytes({}), {
          tenant: 'b',
        });
        const burnerMs = cpuMsOf(burnerPid) - before;
        console.log(
          `one core: b's evaluation used ${b.cpuMs.toFixed(0)} ms of CPU while a's burner used ${burnerMs} ms`,
        );
        // Weights 15 : 3, and b's worker preempts the burner whenever it wakes: b gets five sixths
        // or more. Two workers of one class share the core evenly (about 1 : 1).
        expect({ b: b.cpuMs, burner: burnerMs, ok: b.cpuMs >= 2.5 * burnerMs }).toEqual({
          b: b.cpuMs,
          burner: burnerMs,
          ok: true,
        });
        await pool.close();
        await burner;
      } finally {
        if (mask) spawnSync('taskset', ['--pid', mask, String(process.pid)]);
        await pool.close();
      }
    },
  );

  it('refuses a tenant past its share of the queue at once (MappingBusy naming the setting), not another tenant', async () => {
    const pool = new MappingWorkerPool({ size: 1, workerUrl, maxQueuedPerTenant: 2, maxQueuedBytesPerTenant: 64 });
    try {
      // The worker starts with the first payload: until it is ready, both wait.
      const held = [1, 2].map(() => failed(pool.run(BURNER, limits, bytes({}), { tenant: 'a' })));
      const refused = await failed(pool.run('n', limits, bytes({ n: 1 }), { tenant: 'a' }));
      expect(refused).toBeInstanceOf(MappingBusy);
      expect((refused as Error).message).toMatch(/namespace a .*mapping\.maxQueuedPerNamespace 2/);
      const b = pool.run('{"n": n}', limits, bytes({ n: 1 }), { tenant: 'b' });
      // Bytes: b holds 7 of its 64; 60 more is past its share.
      const tooMuch = await failed(pool.run('n', limits, bytes({ n: 'x'.repeat(60) }), { tenant: 'b' }));
      expect((tooMuch as Error).message).toMatch(/mapping\.maxQueuedBytesPerNamespace 64/);
      expect((await b).items).toEqual([{ n: 1 }]);
      await Promise.all(held);
    } finally {
      await pool.close();
    }
  });
});

/** A process's parent, from /proc. */
const parentOf = (pid: number): number | undefined => readProcStat(`/proc/${pid}/stat`)?.(4);

describe("the mapping workers' spawner (api/mapping/worker-spawner.ts)", () => {
  (process.platform === 'linux' ? it : it.skip)(
    'starts every worker, and the replacement of one killed at its limit, from the spawner: the pool never forks',
    async () => {
      const pool = new MappingWorkerPool({ size: 1, workerUrl });
      try {
        await pool.run('n', limits, bytes({ n: 1 }));
        const { spawnerPid } = pool.launcherInfo;
        expect(spawnerPid).toBeDefined();
        expect(parentOf(spawnerPid as number)).toBe(process.pid);
        const [first] = pool.pids;
        // Before: the worker was this process's child, and so was each replacement (a fork of
        // this process each time, its page tables copied on the calling thread).
        expect(parentOf(first as number)).toBe(spawnerPid);
        const err = (await pool.run(BURNER, limits, bytes({})).catch((e: unknown) => e)) as MappingError;
        expect(err.code).toBe('D1012');
        await pool.run('n', limits, bytes({ n: 2 }));
        const [replacement] = pool.pids;
        expect(replacement).not.toBe(first);
        expect(parentOf(replacement as number)).toBe(spawnerPid);
        expect(pool.launcherInfo.spawnerPid).toBe(spawnerPid);
      } finally {
        await pool.close();
      }
    },
  );

  (process.platform === 'linux' ? it : it.skip)(
    "closes a connection to the workers' socket that does not give a worker's token; the workers go on",
    async () => {
      const pool = new MappingWorkerPool({ size: 1, workerUrl });
      try {
        await pool.run('n', limits, bytes({ n: 1 }));
        const [worker] = pool.pids;
        // A wrong token, one that is not hex, a worker that does not exist, and bytes that are no
        // JSON (never handed to V8's deserializer, which is not meant for a stranger's bytes).
        const notJson = connect({ path: pool.launcherInfo.socketAddress });
        notJson.end(Buffer.from([0, 0, 0, 3, 0xff, 0x0d, 0x01]));
        await new Promise<void>((resolve) => notJson.once('close', () => resolve()));
        for (const hello of [
          { id: 1, token: '00'.repeat(32), pid: process.pid },
          { id: 1, token: 'not hex', pid: process.pid },
          { id: 999, token: '00'.repeat(32), pid: process.pid },
        ]) {
          const stranger = connect({ path: pool.launcherInfo.socketAddress });
          await new Promise<void>((resolve, reject) => {
            stranger.once('connect', resolve);
            stranger.once('error', reject);
          });
          writeFrame(stranger, hello, 'json');
          await new Promise<void>((resolve) => stranger.once('close', () => resolve()));
        }
        expect((await pool.run('{"n": n}', limits, bytes({ n: 3 }))).items).toEqual([{ n: 3 }]);
        expect(pool.pids).toEqual([worker]);
      } finally {
        await pool.close();
      }
    },
  );

  (process.platform === 'linux' ? it : it.skip)(
    'a spawner killed (kill -9) takes its workers with it, and the next evaluation starts a new spawner',
    async () => {
      const pool = new MappingWorkerPool({ size: 2, workerUrl });
      try {
        await pool.run('n', limits, bytes({ n: 1 }));
        await waitFor(
          'both workers ready',
          async () => pool.workers.length === 2 && pool.workers.every((w) => w.ready),
        );
        const workers = pool.pids;
        const { spawnerPid } = pool.launcherInfo;
        process.kill(spawnerPid as number, 'SIGKILL');
        await waitFor('the workers gone', async () => workers.every((pid) => !alive(pid)), 10_000);
        expect((await pool.run('{"n": n}', limits, bytes({ n: 4 }))).items).toEqual([{ n: 4 }]);
        expect(pool.launcherInfo.spawnerPid).not.toBe(spawnerPid);
        expect(pool.pids.every((pid) => parentOf(pid) === pool.launcherInfo.spawnerPid)).toBe(true);
      } finally {
        await pool.close();
      }
    },
  );
});
