/**
 * The mapping worker pool on its own (api/mapping/worker-pool.ts), with the built worker script:
 * worker processes stopped at their CPU limit by SIGKILL and replaced, killed on close, and
 * started without chrt when chrt is there but refuses; each tenant's share of the workers and of
 * the queue, and waiting evaluations taken tenant by tenant in turn.
 */
import { jest } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_MAPPING_LIMITS, MappingBusy, MappingError, type MappingLimits } from '../../api/mapping/engine.js';
import { MappingWorkerPool } from '../../api/mapping/worker-pool.js';
import type { WorkerPriority } from '../../api/mapping/worker-priority.js';
import { ROOT } from '../support/paths.js';
import { waitFor } from '../support/waiting.js';

jest.setTimeout(60_000);

const workerUrl = pathToFileURL(join(ROOT, 'dist/api/mapping/mapping-worker.js'));
const limits: MappingLimits = { ...DEFAULT_MAPPING_LIMITS, timeoutMs: 300 };
const bytes = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));
const alive = (pid: number): boolean => existsSync(`/proc/${pid}`);

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
        const err = (await pool.run('$count($distinct([1..100000]))', limits, bytes({})).then(
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

  const BURNER = '$count($distinct([1..100000]))';
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
