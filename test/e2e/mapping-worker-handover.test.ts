/**
 * What crosses the channel to a mapping worker (api/mapping/worker-pool.ts, mapping-worker.ts),
 * with the built worker script: a batch sends each distinct expression (source and limits) once
 * and its payloads name theirs, the events come back as JSON text, and the worker reads its CPU
 * time once between payloads. Each payload must still be evaluated with its own expression and
 * limits, fail alone, and be charged its own CPU time.
 */
import { jest } from '@jest/globals';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_MAPPING_LIMITS, MappingError, type MappingLimits } from '../../api/mapping/engine.js';
import { MappingWorkerPool } from '../../api/mapping/worker-pool.js';
import { ROOT } from '../support/paths.js';
import { waitFor } from '../support/waiting.js';

jest.setTimeout(60_000);

const workerUrl = pathToFileURL(join(ROOT, 'dist/api/mapping/mapping-worker.js'));
const limits: MappingLimits = { ...DEFAULT_MAPPING_LIMITS, timeoutMs: 2000 };
const bytes = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));
const outcome = (
  p: Promise<{ items: unknown[]; cpuMs: number }>,
): Promise<{ items: unknown[]; cpuMs: number } | Error> => p.catch((err: Error) => err);

describe('the hand-over to a mapping worker', () => {
  it('evaluates each payload of one batch with its own expression and limits; one that fails fails alone', async () => {
    const pool = new MappingWorkerPool({ size: 1, workerUrl });
    try {
      const short: MappingLimits = { ...limits, maxStringLength: 8 };
      // Submitted before the worker is ready: all seven go to it as one batch, in this order.
      const runs = [
        pool.run('{"a": n}', limits, bytes({ n: 1 }), { tenant: 'a' }),
        pool.run('{"b": s}', limits, bytes({ s: 'a long string' }), { tenant: 'a' }),
        // The same source with other limits is another expression: its string limit holds.
        pool.run('{"b": s}', short, bytes({ s: 'a long string' }), { tenant: 'a' }),
        // A source that does not compile fails its own payload, not the batch.
        pool.run('{"a": ', limits, bytes({ n: 2 }), { tenant: 'a' }),
        pool.run('{"a": n}', limits, bytes({ n: 3 }), { tenant: 'a' }),
        // Events with text JSON must escape: quotes, a line break, a character outside ASCII.
        pool.run('[{"t": t}, {"t": t & "!"}]', limits, bytes({ t: 'say "hé"\n' }), { tenant: 'a' }),
        pool.run('$count($distinct([1..20000]))', limits, bytes({}), { tenant: 'a' }),
      ].map(outcome);
      await waitFor('one batch of all seven under way', async () => pool.load.running === 7, 20_000, 1);
      const results = await Promise.all(runs);
      const items = results.map((r) => (r instanceof Error ? undefined : r.items));
      expect(items[0]).toEqual([{ a: 1 }]);
      expect(items[1]).toEqual([{ b: 'a long string' }]);
      expect((results[2] as MappingError).code).toBe('INTAKE_STRING_LIMIT');
      expect((results[3] as MappingError).code).toMatch(/^S0/);
      expect(items[4]).toEqual([{ a: 3 }]);
      expect(items[5]).toEqual([{ t: 'say "hé"\n' }, { t: 'say "hé"\n!' }]);
      expect(items[6]).toEqual([20000]);
      expect(pool.restarts).toBe(0);
    } finally {
      await pool.close();
    }
  });

  it("charges each payload of a batch its own CPU time: a costly one's is not spread over the others", async () => {
    const pool = new MappingWorkerPool({ size: 1, workerUrl });
    try {
      const costly = '$count($distinct([1..90000]))';
      const runs = [
        pool.run('{"a": n}', limits, bytes({ n: 1 }), { tenant: 'a' }),
        pool.run(costly, limits, bytes({}), { tenant: 'a' }),
        pool.run('{"a": n}', limits, bytes({ n: 2 }), { tenant: 'a' }),
        pool.run('{"a": n}', limits, bytes({ n: 3 }), { tenant: 'a' }),
      ];
      await waitFor('one batch of all four under way', async () => pool.load.running === 4, 20_000, 1);
      const [first, heavy, next, last] = await Promise.all(runs);
      // Tens of ms (more on a loaded machine) for the costly one; the cheap ones, the one after it
      // included, a small fraction of it.
      expect(heavy?.cpuMs).toBeGreaterThan(20);
      for (const cheap of [first, next, last]) expect(cheap?.cpuMs).toBeLessThan((heavy?.cpuMs ?? 0) / 4);
      expect(heavy?.items).toEqual([90000]);
      expect([first, next, last].map((r) => r?.items)).toEqual([[{ a: 1 }], [{ a: 2 }], [{ a: 3 }]]);
    } finally {
      await pool.close();
    }
  });
});
