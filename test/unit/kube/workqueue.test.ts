import { WorkQueue } from '../../../kube/workqueue.js';

const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

describe('WorkQueue', () => {
  it('dedups a key queued twice', async () => {
    const q = new WorkQueue();
    const seen: string[] = [];
    q.add('a');
    q.add('a');
    q.add('b');
    const done = q.run(
      1,
      async (k) => void seen.push(k),
      () => {},
    );
    await tick();
    q.shutdown();
    await done;
    expect(seen).toEqual(['a', 'b']);
  });

  it('never runs one key twice at once, and reruns a key added while it ran', async () => {
    const q = new WorkQueue();
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const done = q.run(
      4,
      async () => {
        running++;
        runs++;
        maxRunning = Math.max(maxRunning, running);
        if (runs === 1) q.add('a');
        await tick(10);
        running--;
      },
      () => {},
    );
    q.add('a');
    await tick(60);
    q.shutdown();
    await done;
    expect(maxRunning).toBe(1);
    expect(runs).toBe(2);
  });

  it('backs a failing key off exponentially and forgets on success', async () => {
    const q = new WorkQueue({ baseDelayMs: 10, maxDelayMs: 1000 });
    expect(q.addRateLimited('k')).toBeLessThan(13);
    expect(q.addRateLimited('k')).toBeGreaterThan(15);
    const third = q.addRateLimited('k');
    expect(third).toBeGreaterThan(31);
    q.forget('k');
    expect(q.addRateLimited('k')).toBeLessThan(13);
    q.shutdown();
  });

  it('retries a key whose handler throws, and honours requeueAfter', async () => {
    const q = new WorkQueue({ baseDelayMs: 5 });
    const calls: number[] = [];
    const errors: unknown[] = [];
    const done = q.run(
      1,
      async () => {
        calls.push(Date.now());
        if (calls.length === 1) throw new Error('boom');
        if (calls.length === 2) return { requeueAfterMs: 20 };
        return undefined;
      },
      (_k, e) => errors.push(e),
    );
    q.add('x');
    await tick(100);
    q.shutdown();
    await done;
    expect(errors).toHaveLength(1);
    expect(calls).toHaveLength(3);
    expect((calls[2] as number) - (calls[1] as number)).toBeGreaterThanOrEqual(15);
  });
});
