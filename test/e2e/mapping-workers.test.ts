/**
 * The mapping worker pool on its own (api/mapping/worker-pool.ts), with the built worker script:
 * worker processes stopped at their CPU limit by SIGKILL and replaced, killed on close, and
 * started without chrt when chrt is there but refuses.
 */
import { jest } from '@jest/globals';
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_MAPPING_LIMITS, MappingError, type MappingLimits } from '../../api/mapping/engine.js';
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
});
