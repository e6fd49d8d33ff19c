import type { KvEntry, KvWatchEntry } from '@nats-io/kv';
import pino from 'pino';
import { KvPauseStore, type PauseBucket } from '../../../../../ingester/destinations/protection/pause-kv-store.js';
import type { RuntimePause } from '../../../../../ingester/destinations/protection/pause.js';

/** A bucket whose writes and watch entries the test releases one at a time. */
function fakeBucket() {
  let revision = 0;
  const values = new Map<string, { revision: number; data: string }>();
  const pushed: KvWatchEntry[] = [];
  let wake: () => void = () => undefined;
  const entry = (key: string, v: { revision: number; data: string }): KvWatchEntry =>
    ({
      key,
      revision: v.revision,
      operation: 'PUT',
      json: () => JSON.parse(v.data) as unknown,
      isUpdate: true,
    }) as unknown as KvWatchEntry;
  const heldPuts: Array<() => void> = [];
  let holdPuts = false;
  /** Stored, and its echo on the watch at once (possibly before the put's answer). */
  const record = (key: string, data: string): { revision: number; data: string } => {
    const v = { revision: ++revision, data };
    values.set(key, v);
    pushed.push(entry(key, v));
    wake();
    return v;
  };
  const bucket = {
    put: async (key: string, data: string) => {
      const v = record(key, data);
      if (holdPuts) await new Promise<void>((r) => heldPuts.push(r));
      return v.revision;
    },
    get: async (key: string) => {
      const v = values.get(key);
      return v ? (entry(key, v) as unknown as KvEntry) : null;
    },
    watch: async () => {
      let stopped = false;
      const iterator = {
        stop: () => {
          stopped = true;
          wake();
        },
        async *[Symbol.asyncIterator]() {
          for (const [key, v] of values) yield entry(key, v);
          while (!stopped) {
            const e = pushed.shift();
            if (e) yield e;
            else await new Promise<void>((r) => (wake = r));
          }
        },
      };
      return iterator;
    },
  };
  return {
    bucket: bucket as unknown as PauseBucket,
    /** Another replica's write. */
    other: (key: string, pause: RuntimePause | null) => void record(key, JSON.stringify(pause)),
    holdPuts: (on: boolean) => {
      holdPuts = on;
      if (!on) for (const r of heldPuts.splice(0)) r();
    },
  };
}

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 5));

describe('destination pauses on the bus', () => {
  it("applies another replica's changes, and not the echo of its own earlier write after a later one", async () => {
    const applied: Array<[string, string | undefined]> = [];
    const b = fakeBucket();
    const store = new KvPauseStore('x_pauses', (d, p) => applied.push([d, p?.by]), pino({ level: 'silent' }));
    await store.use(b.bucket, ['tickets']);
    await tick();
    expect(applied).toEqual([['tickets', undefined]]);
    applied.length = 0;

    // This replica pauses, then resumes at once: the echoes of both come back, neither applied.
    await store.save('tickets', { by: 'admin', since: 1 });
    await store.save('tickets', undefined);
    await tick();
    expect(applied).toEqual([]);

    // Another replica's pause is applied.
    b.other('tickets', { by: 'auto', since: 2 });
    await tick();
    expect(applied).toEqual([['tickets', 'auto']]);
  });

  it("tells of a destination's pause that was not among those at hand when attached (a team's, added later)", async () => {
    const applied: Array<[string, string | undefined]> = [];
    const b = fakeBucket();
    const store = new KvPauseStore('x_pauses', (d, p) => applied.push([d, p?.by]), pino({ level: 'silent' }));
    await store.use(b.bucket, ['tickets']);
    await tick();
    applied.length = 0;
    b.other('team-a/pager', { by: 'auto', since: 3 });
    await tick();
    expect(applied).toEqual([['team-a/pager', 'auto']]);
  });

  it("a change by another replica while this one's write is under way is applied after it, when newer", async () => {
    const applied: Array<string | undefined> = [];
    const b = fakeBucket();
    const store = new KvPauseStore('x_pauses', (_d, p) => applied.push(p?.by), pino({ level: 'silent' }));
    await store.use(b.bucket, ['tickets']);
    await tick();
    applied.length = 0;
    b.holdPuts(true);
    const saving = store.save('tickets', { by: 'admin', since: 1 });
    await tick();
    b.other('tickets', { by: 'auto', since: 2 });
    await tick();
    // Both entries arrived during the write: nothing applied yet.
    expect(applied).toEqual([]);
    b.holdPuts(false);
    await saving;
    await tick();
    expect(applied).toEqual(['auto']);
  });

  it('keeps what is saved without a bucket and writes it at the next attach', async () => {
    const b = fakeBucket();
    const applied: Array<string | undefined> = [];
    const store = new KvPauseStore('x_pauses', (_d, p) => applied.push(p?.by), pino({ level: 'silent' }));
    await store.save('tickets', { by: 'admin', since: 1 });
    await store.use(b.bucket, ['tickets']);
    await tick();
    expect(applied[0]).toBe('admin');
    expect((await b.bucket.get('tickets'))?.json()).toEqual({ by: 'admin', since: 1 });
    store.close();
  });
});
