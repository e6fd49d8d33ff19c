import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { Destination } from '../../../../ingester/destinations/destination.js';
import { Dispatcher } from '../../../../ingester/destinations/dispatcher.js';
import type { Outcome } from '../../../../ingester/outbound/outcome.js';
import { DestinationMetrics } from '../../../../ingester/destinations/metrics.js';
import { Outbox } from '../../../../ingester/destinations/outbox.js';
import { SqliteAlertStores } from '../../../../ingester/destinations/sqlite-alert-store.js';
import type { NormalisedEvent } from '../../../../ingester/events.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'intake-outbox-unit-'));
  dirs.push(d);
  return d;
};
const routing = { destinationsOf: (e: NormalisedEvent) => (e.integration === 'none' ? [] : ['a', 'b']) };
const ev = (id: string, integration = 'demo'): NormalisedEvent => ({ id, integration, namespace: 'default', received_at: new Date().toISOString() }) as NormalisedEvent;

class Recording implements Destination {
  readonly kind = 'http';
  readonly maxBatch = 10;
  seen: string[] = [];
  constructor(
    readonly name: string,
    public answer: Outcome = { kind: 'delivered' },
  ) {}
  async send(events: readonly NormalisedEvent[]): Promise<Outcome> {
    this.seen.push(...events.map((e) => e.id));
    return this.answer;
  }
  async close(): Promise<void> {}
}

const dispatcher = (dest: Destination, maxAttempts = 3): Dispatcher =>
  new Dispatcher(dest, { maxAttempts, backoffMinMs: 1, backoffMaxMs: 2, maxInFlight: 16 }, new DestinationMetrics(new Registry()), pino({ level: 'silent' }));

const until = async (what: () => boolean, ms = 5000): Promise<void> => {
  const end = Date.now() + ms;
  while (!what()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('outbox', () => {
  it('holds each event once per destination and delivers it to each', async () => {
    const outbox = new Outbox(tempDir(), 1 << 20, routing);
    const a = new Recording('a');
    const b = new Recording('b');
    const da = dispatcher(a);
    const db = dispatcher(b);
    expect(await outbox.deliver([ev('1'), ev('2'), ev('3', 'none')])).toEqual({ delivered: 3, cached: 0 });
    expect([outbox.depth('a'), outbox.depth('b')]).toEqual([2, 2]);
    outbox.start([
      { name: 'a', dispatcher: da, leaseMs: 1000 },
      { name: 'b', dispatcher: db, leaseMs: 1000 },
    ]);
    await until(() => outbox.depth('a') === 0 && outbox.depth('b') === 0);
    expect([a.seen.sort(), b.seen.sort()]).toEqual([['1', '2'], ['1', '2']]);
    outbox.stop();
    await Promise.all([da.idle(), db.idle()]);
    await outbox.close();
  });

  it('hands out again, after the lease, what a crashed process held', async () => {
    const dir = tempDir();
    const first = new Outbox(dir, 1 << 20, { destinationsOf: () => ['a'] });
    await first.deliver([ev('1')]);
    const stuck = new Recording('a');
    stuck.send = () => new Promise(() => {}); // never answers: the process "dies" mid-delivery
    first.start([{ name: 'a', dispatcher: dispatcher(stuck), leaseMs: 200 }]);
    await new Promise((r) => setTimeout(r, 50));
    first.stop();
    // Reopened as after kill -9: the row is still there, leased.
    const second = new Outbox(dir, 1 << 20, { destinationsOf: () => ['a'] });
    const a = new Recording('a');
    const d = dispatcher(a);
    second.start([{ name: 'a', dispatcher: d, leaseMs: 200 }]);
    await until(() => a.seen.length === 1);
    await until(() => second.depth('a') === 0);
    second.stop();
    await d.idle();
    await second.close();
  });

  it('keeps refused events as dead letters with the reason, and replays them', async () => {
    const outbox = new Outbox(tempDir(), 1 << 20, { destinationsOf: () => ['a'] });
    const a = new Recording('a', { kind: 'reject', reason: 'http_400', error: 'HTTP 400: no' });
    const d = dispatcher(a);
    await outbox.deliver([ev('1'), ev('2')]);
    outbox.start([{ name: 'a', dispatcher: d, leaseMs: 1000 }]);
    await until(() => outbox.depth('a') === 0);
    await d.idle();
    const dead = await outbox.list({ limit: 10 });
    expect(dead.map((x) => [x.destination, x.reason, x.error, x.attempts, x.event.id])).toEqual([
      ['a', 'http_400', 'HTTP 400: no', 1, '1'],
      ['a', 'http_400', 'HTTP 400: no', 1, '2'],
    ]);
    a.answer = { kind: 'delivered' };
    expect(await outbox.replay({ limit: 10, seqs: [dead[1]?.seq as number] })).toBe(1);
    await until(() => a.seen.filter((id) => id === '2').length === 2 && outbox.depth('a') === 0);
    expect((await outbox.list({ limit: 10 })).map((x) => x.event.id)).toEqual(['1']);
    outbox.stop();
    await d.idle();
    await outbox.close();
  });

  it('refuses a whole request when full (the request gets 503)', async () => {
    const outbox = new Outbox(tempDir(), 2000, { destinationsOf: () => ['a'] });
    await expect(outbox.deliver(Array.from({ length: 50 }, (_, i) => ev(`e${i}`)))).rejects.toThrow(/outbox is full/);
    expect(outbox.depth('a')).toBe(0);
    await outbox.close();
  });

  it('stores alert states with compare-and-set versions', async () => {
    const dir = tempDir();
    const outbox = new Outbox(dir, 1 << 20, routing);
    const stores = new SqliteAlertStores(dir);
    const store = stores.store('am');
    const state = { key: 'k', labels: {}, annotations: {}, startsAt: '', lastEventAtMs: 1, lastEventId: 'x' };
    expect(await store.put(state, 0)).toBe(true);
    expect(await store.put(state, 0)).toBe(false);
    const got = await store.get('k');
    expect(got?.version).toBe(1);
    expect(await store.put({ ...state, lastEventId: 'y' }, 1)).toBe(true);
    expect(await store.put({ ...state, lastEventId: 'z' }, 1)).toBe(false);
    const keys: string[] = [];
    for await (const k of store.keys()) keys.push(k);
    expect(keys).toEqual(['k']);
    expect((await store.get('k'))?.state.lastEventId).toBe('y');
    stores.close();
    await outbox.close();
  });
});

describe('outbox after a destination was removed from the config', () => {
  it('names the destinations it still holds events for', async () => {
    const outbox = new Outbox(tempDir(), 1 << 20, { destinationsOf: () => ['a', 'gone'] });
    await outbox.deliver([ev('1'), ev('2')]);
    expect(outbox.orphans(['a'])).toEqual({ gone: 2 });
    expect(outbox.orphans(['a', 'gone'])).toEqual({});
    await outbox.close();
  });
});
