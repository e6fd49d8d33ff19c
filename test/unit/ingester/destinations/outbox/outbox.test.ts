import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '../../../../support/waiting.js';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { Destination, QueuedEvent } from '../../../../../ingester/destinations/destination.js';
import { Dispatcher } from '../../../../../ingester/destinations/dispatcher.js';
import type { Outcome } from '../../../../../ingester/outbound/outcome.js';
import { DestinationMetrics } from '../../../../../ingester/destinations/metrics.js';
import { Outbox } from '../../../../../ingester/destinations/outbox/outbox.js';
import { SqliteAlertStores } from '../../../../../ingester/destinations/alertmanager/sqlite-alert-store.js';
import type { NormalisedEvent } from '../../../../../ingester/core/event.js';
import {
  deliveryLetterId,
  type DeliveryDeadLetter,
  type NewDeadLetter,
} from '../../../../../ingester/dead-letters/model.js';
import { SqliteDeadLetters } from '../../../../../ingester/dead-letters/sqlite-store.js';

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
const ev = (id: string, integration = 'demo'): NormalisedEvent =>
  ({ id, integration, namespace: 'default', received_at: new Date().toISOString() }) as NormalisedEvent;

class Recording implements Destination {
  readonly kind = 'http';
  readonly maxBatch = 10;
  seen: string[] = [];
  constructor(
    readonly name: string,
    public answer: Outcome = { kind: 'accepted' },
  ) {}
  async send(events: readonly QueuedEvent[]): Promise<Outcome> {
    this.seen.push(...events.map((e) => e.event().id));
    return this.answer;
  }
  async close(): Promise<void> {}
}

const dispatcher = (dest: Destination, maxAttempts = 3): Dispatcher =>
  new Dispatcher(
    dest,
    { maxAttempts, backoffMinMs: 1, backoffMaxMs: 2, maxInFlight: 16, maxInFlightBytes: 1 << 20 },
    new DestinationMetrics(new Registry()),
    pino({ level: 'silent' }),
  );

/** Where buried events go; these tests never expect one unless they use a real store. */
const noBury = async (letter: NewDeadLetter): Promise<string> => {
  throw new Error(`unexpected dead letter ${JSON.stringify(letter)}`);
};
const store = () =>
  new SqliteDeadLetters(join(tempDir(), 'deadletters.sqlite'), { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });

describe('outbox', () => {
  it('holds each event once per destination and delivers it to each', async () => {
    const outbox = new Outbox(tempDir(), 1 << 20, routing, noBury);
    const a = new Recording('a');
    const b = new Recording('b');
    const da = dispatcher(a);
    const db = dispatcher(b);
    expect(await outbox.handOff([ev('1'), ev('2'), ev('3', 'none')])).toEqual({ processed: 3, cached: 0 });
    // One row per request and destination, holding the request's events for it.
    expect([outbox.depth('a'), outbox.depth('b')]).toEqual([1, 1]);
    outbox.start([
      { name: 'a', dispatcher: da, leaseMs: 1000 },
      { name: 'b', dispatcher: db, leaseMs: 1000 },
    ]);
    await until(() => outbox.depth('a') === 0 && outbox.depth('b') === 0);
    expect([a.seen.sort(), b.seen.sort()]).toEqual([
      ['1', '2'],
      ['1', '2'],
    ]);
    outbox.stop();
    await Promise.all([da.idle(), db.idle()]);
    await outbox.close();
  });

  it('holds each event for the destinations its rules chose at acceptance, asking routing nothing', async () => {
    const asked: string[] = [];
    const outbox = new Outbox(
      tempDir(),
      1 << 20,
      {
        destinationsOf: (e: NormalisedEvent) => {
          asked.push(e.id);
          return ['a', 'b'];
        },
      },
      noBury,
    );
    const result = await outbox.handOff([ev('1'), ev('2'), ev('3')], [['b'], [], ['a', 'b']]);
    expect(result).toEqual({ processed: 3, cached: 0 });
    expect(asked).toEqual([]);
    expect([outbox.depth('a'), outbox.depth('b')]).toEqual([1, 1]);
    const a = new Recording('a');
    const b = new Recording('b');
    const [da, db] = [dispatcher(a), dispatcher(b)];
    outbox.start([
      { name: 'a', dispatcher: da, leaseMs: 1000 },
      { name: 'b', dispatcher: db, leaseMs: 1000 },
    ]);
    await until(() => outbox.depth('a') === 0 && outbox.depth('b') === 0);
    expect([a.seen.sort(), b.seen.sort()]).toEqual([['3'], ['1', '3']]);
    outbox.stop();
    await Promise.all([da.idle(), db.idle()]);
    await outbox.close();
  });

  it("retries only a row's events that failed; those delivered are not sent again", async () => {
    const outbox = new Outbox(tempDir(), 1 << 20, { destinationsOf: () => ['a'] }, noBury);
    const sent: string[] = [];
    let failuresLeft = 2;
    const one: Destination = {
      name: 'a',
      kind: 'http',
      maxBatch: 1,
      send: async (events) => {
        const id = (events[0] as QueuedEvent).event().id;
        sent.push(id);
        if (id === 'flaky' && failuresLeft-- > 0) return { kind: 'retry', reason: 'http_500', error: 'HTTP 500' };
        return { kind: 'accepted' };
      },
      close: async () => {},
    };
    const d = dispatcher(one, 5);
    await outbox.handOff([ev('1'), ev('flaky'), ev('3')]);
    outbox.start([{ name: 'a', dispatcher: d, leaseMs: 1000 }]);
    await until(() => outbox.depth('a') === 0);
    expect(sent.sort()).toEqual(['1', '3', 'flaky', 'flaky', 'flaky']);
    outbox.stop();
    await d.idle();
    await outbox.close();
  });

  it('hands out rows only while their bytes fit maxInFlightBytes, the rest once those are delivered', async () => {
    const outbox = new Outbox(tempDir(), 1 << 20, { destinationsOf: () => ['a'] }, noBury);
    for (const id of ['1', '2', '3', '4', '5']) await outbox.handOff([ev(id)]);
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const held = new Recording('a');
    const send = held.send.bind(held);
    const taken: string[] = [];
    held.send = async (events) => {
      taken.push(...events.map((e) => e.event().id));
      await gate;
      return send(events);
    };
    const eventBytes = JSON.stringify(ev('1')).length;
    // Room for 16 events, but for the bytes of only two and a half.
    const d = new Dispatcher(
      held,
      {
        maxAttempts: 3,
        backoffMinMs: 1,
        backoffMaxMs: 2,
        maxInFlight: 16,
        maxInFlightBytes: Math.floor(eventBytes * 2.5),
      },
      new DestinationMetrics(new Registry()),
      pino({ level: 'silent' }),
    );
    outbox.start([{ name: 'a', dispatcher: d, leaseMs: 10_000 }]);
    await until(() => d.free() === 0);
    await new Promise((r) => setTimeout(r, 50));
    // Three rows taken (the third passes the bytes left), two still waiting unleased.
    expect(d.freeBytes()).toBe(0);
    expect(taken.sort()).toEqual(['1', '2', '3']);
    release();
    await until(() => outbox.depth('a') === 0);
    expect(held.seen.sort()).toEqual(['1', '2', '3', '4', '5']);
    outbox.stop();
    await d.idle();
    await outbox.close();
  });

  it('hands out again, after the lease, what a crashed process held', async () => {
    const dir = tempDir();
    const first = new Outbox(dir, 1 << 20, { destinationsOf: () => ['a'] }, noBury);
    await first.handOff([ev('1')]);
    const stuck = new Recording('a');
    stuck.send = () => new Promise(() => {}); // never answers: the process "dies" mid-delivery
    first.start([{ name: 'a', dispatcher: dispatcher(stuck), leaseMs: 200 }]);
    await new Promise((r) => setTimeout(r, 50));
    first.stop();
    // Reopened as after kill -9: the row is still there, leased.
    const second = new Outbox(dir, 1 << 20, { destinationsOf: () => ['a'] }, noBury);
    const a = new Recording('a');
    const d = dispatcher(a);
    second.start([{ name: 'a', dispatcher: d, leaseMs: 200 }]);
    await until(() => a.seen.length === 1);
    await until(() => second.depth('a') === 0);
    expect(a.seen).toEqual(['1']);
    expect(second.depth('a')).toBe(0);
    second.stop();
    await d.idle();
    await second.close();
  });

  it('keeps refused events in the dead-letter store with the reason, and requeues them', async () => {
    const letters = store();
    const outbox = new Outbox(tempDir(), 1 << 20, { destinationsOf: () => ['a'] }, (l) => letters.put(l));
    const a = new Recording('a', { kind: 'reject', reason: 'http_400', error: 'HTTP 400: no' });
    const d = dispatcher(a);
    await outbox.handOff([ev('1'), ev('2')]);
    outbox.start([{ name: 'a', dispatcher: d, leaseMs: 1000 }]);
    await until(() => outbox.depth('a') === 0);
    await d.idle();
    const dead = (await letters.list({ limit: 10 })) as DeliveryDeadLetter[];
    expect(dead.map((x) => [x.kind, x.destination, x.reason, x.error, x.attempts, x.event.id])).toEqual([
      ['delivery', 'a', 'http_400', 'HTTP 400: no', 1, '1'],
      ['delivery', 'a', 'http_400', 'HTTP 400: no', 1, '2'],
    ]);
    a.answer = { kind: 'accepted' };
    outbox.requeue(dead[1] as DeliveryDeadLetter);
    await until(() => a.seen.filter((id) => id === '2').length === 2 && outbox.depth('a') === 0);
    outbox.stop();
    await d.idle();
    await outbox.close();
    await letters.close();
  });

  it('counts a requeued event once, however many dead letters it had (was counted once per letter)', async () => {
    const e = ev('same');
    const rowBytes = 'a'.length + e.id.length + Buffer.byteLength(JSON.stringify(e)) + 96;
    // Room for the requeued row and four more rows, not for four phantom copies on top.
    const outbox = new Outbox(tempDir(), rowBytes * 5 + 10, { destinationsOf: () => ['a'] }, noBury);
    const letter = {
      kind: 'delivery',
      id: 'x',
      seq: 1,
      namespace: 'default',
      integration: 'demo',
      reason: 'http_500',
      at: '',
      bytes: 0,
      destination: 'a',
      error: '',
      attempts: 3,
      event: e,
    } as DeliveryDeadLetter;
    for (let i = 0; i < 5; i++) outbox.requeue({ ...letter, id: `x${i}`, seq: i + 1 });
    expect(outbox.depth('a')).toBe(1);
    expect(outbox.unavailable()).toBeUndefined();
    await expect(
      outbox.handOff([ev('b1'), ev('b2'), ev('b3'), ev('b4')].map((x) => ({ ...x, received_at: e.received_at }))),
    ).resolves.toEqual({ processed: 4, cached: 0 });
    await outbox.close();
  });

  it("keys a refused event's letter by destination and event id: refused again, it replaces its letter", async () => {
    const letters = store();
    const outbox = new Outbox(tempDir(), 1 << 20, { destinationsOf: () => ['a'] }, (l) => letters.put(l));
    const a = new Recording('a', { kind: 'reject', reason: 'http_400', error: 'HTTP 400: no' });
    const d = dispatcher(a);
    outbox.start([{ name: 'a', dispatcher: d, leaseMs: 1000 }]);
    for (let n = 1; n <= 3; n++) {
      // A sender's re-send: the same event id, once the previous row is gone.
      await outbox.handOff([ev('again')]);
      await until(() => a.seen.length === n && outbox.depth('a') === 0);
      await d.idle();
    }
    const dead = (await letters.list({ limit: 10 })) as DeliveryDeadLetter[];
    expect(dead.map((x) => [x.destination, x.event.id])).toEqual([['a', 'again']]);
    expect(dead[0]?.id).toBe(deliveryLetterId('a', 'again'));
    outbox.stop();
    await d.idle();
    await outbox.close();
    await letters.close();
  });

  it('records a replayed letter with its row: replayed again it hands nothing on, and the record lists it until forgotten', async () => {
    const dir = tempDir();
    const outbox = new Outbox(dir, 1 << 20, { destinationsOf: () => ['a'] }, noBury);
    const letter = {
      kind: 'delivery',
      id: 'd-1',
      seq: 7,
      namespace: 'default',
      integration: 'demo',
      reason: 'http_400',
      at: '',
      bytes: 0,
      destination: 'a',
      error: '',
      attempts: 1,
      event: ev('replayed'),
    } as DeliveryDeadLetter;
    outbox.requeue(letter);
    expect(outbox.depth('a')).toBe(1);
    // Survives a restart (kill -9 before the letter was removed).
    await outbox.close();
    const again = new Outbox(dir, 1 << 20, { destinationsOf: () => ['a'] }, noBury);
    expect(again.replayedLetters()).toEqual([{ seq: 7, id: 'd-1' }]);
    // Delivered meanwhile (its row gone), then replayed again: not handed on a second time.
    const [row] = (again as unknown as { table: { due: (d: string, n: number, l: number) => unknown[] } }).table.due(
      'a',
      Date.now(),
      10,
    );
    (again as unknown as { table: { remove: (r: unknown) => void } }).table.remove(row);
    again.requeue(letter);
    expect(again.depth('a')).toBe(0);
    again.forgetReplayed(7);
    expect(again.replayedLetters()).toEqual([]);
    // A newer letter (another seq) is a new failure: handed on.
    again.requeue({ ...letter, seq: 8 });
    expect(again.depth('a')).toBe(1);
    await again.close();
  });

  it('refuses a whole request when full (the request gets 503)', async () => {
    const outbox = new Outbox(tempDir(), 2000, { destinationsOf: () => ['a'] }, noBury);
    await expect(outbox.handOff(Array.from({ length: 50 }, (_, i) => ev(`e${i}`)))).rejects.toThrow(/outbox is full/);
    expect(outbox.depth('a')).toBe(0);
    await outbox.close();
  });

  it('stores alert states with compare-and-set versions', async () => {
    const dir = tempDir();
    const outbox = new Outbox(dir, 1 << 20, routing, noBury);
    const stores = new SqliteAlertStores(dir);
    const store = stores.store('am');
    const state = { key: 'k', labels: {}, annotations: {}, startsAt: '', lastEventAtMs: 1, lastEventId: 'x' };
    expect(await store.put(state, 0)).toBe(1);
    expect(await store.put(state, 0)).toBe(false);
    const got = await store.get('k');
    expect(got?.version).toBe(1);
    expect(await store.put({ ...state, lastEventId: 'y' }, 1)).toBe(2);
    expect(await store.put({ ...state, lastEventId: 'z' }, 1)).toBe(false);
    const keys: string[] = [];
    for await (const k of store.keys()) keys.push(k);
    expect(keys).toEqual(['k']);
    expect((await store.get('k'))?.state.lastEventId).toBe('y');
    stores.close();
    await outbox.close();
  });

  it('writes several alert states in one putAll, each compare-and-set answered on its own', async () => {
    const dir = tempDir();
    const outbox = new Outbox(dir, 1 << 20, routing, noBury);
    const stores = new SqliteAlertStores(dir);
    const store = stores.store('am');
    const state = (key: string, id: string) => ({
      key,
      labels: {},
      annotations: {},
      startsAt: '',
      lastEventAtMs: 1,
      lastEventId: id,
    });
    expect(await store.put(state('old', '1'), 0)).toBe(1);
    const answers = await store.putAll?.([
      { state: state('new', '2'), version: 0 },
      { state: state('old', '3'), version: 1 },
      { state: state('old', '4'), version: 1 },
      { state: state('new', '5'), version: 0 },
    ]);
    // In order, as put() one after another: the second write of each key lost its compare-and-set.
    expect(answers).toEqual([1, 2, false, false]);
    expect((await store.get('new'))?.state.lastEventId).toBe('2');
    expect((await store.get('old'))?.state.lastEventId).toBe('3');
    stores.close();
    await outbox.close();
  });
});

describe('outbox after a destination was removed from the config', () => {
  it('names the destinations it still holds events for', async () => {
    const outbox = new Outbox(tempDir(), 1 << 20, { destinationsOf: () => ['a', 'gone'] }, noBury);
    await outbox.handOff([ev('1'), ev('2')]);
    expect(outbox.orphans(['a'])).toEqual({ gone: 2 });
    expect(outbox.orphans(['a', 'gone'])).toEqual({});
    await outbox.close();
  });
});

describe("the outbox's shares", () => {
  const inNamespace = (id: string, namespace: string): NormalisedEvent => ({ ...ev(id), namespace }) as NormalisedEvent;
  const big = (id: string, namespace: string): NormalisedEvent =>
    ({ ...inNamespace(id, namespace), description: 'x'.repeat(2000) }) as NormalisedEvent;

  it('refuses a namespace at its share (OUTBOX_SHARE_FULL, 503 with Retry-After) and not the others; the outbox stays available', async () => {
    const outbox = new Outbox(
      tempDir(),
      64 * 1024,
      { destinationsOf: () => ['a'] },
      noBury,
      undefined,
      undefined,
      8 * 1024,
    );
    let accepted = 0;
    let refusal: unknown;
    for (let i = 0; i < 10 && !refusal; i++)
      await outbox.handOff([big(`a-${i}`, 'team-a')]).then(
        () => accepted++,
        (err: unknown) => (refusal = err),
      );
    expect(accepted).toBe(3);
    expect(refusal).toMatchObject({ code: 'OUTBOX_SHARE_FULL', statusCode: 503, headers: { 'retry-after': '5' } });
    expect(String((refusal as Error).message)).toMatch(
      /namespace team-a holds its share .*spool\.maxBytesPerNamespace, 8192 bytes/,
    );
    await expect(outbox.handOff([big('b-0', 'team-b')])).resolves.toEqual({ processed: 1, cached: 0 });
    expect(outbox.unavailable()).toBeUndefined();
    await outbox.close();
  });

  it("gives a row's bytes back to its namespace once it is delivered, and counts what a restart finds", async () => {
    const dir = tempDir();
    const first = new Outbox(dir, 64 * 1024, { destinationsOf: () => ['a'] }, noBury, undefined, undefined, 8 * 1024);
    for (let i = 0; i < 3; i++) await first.handOff([big(`a-${i}`, 'team-a')]);
    await expect(first.handOff([big('a-3', 'team-a')])).rejects.toMatchObject({ code: 'OUTBOX_SHARE_FULL' });
    await first.close();
    // Held after a restart: still counted.
    const second = new Outbox(dir, 64 * 1024, { destinationsOf: () => ['a'] }, noBury, undefined, undefined, 8 * 1024);
    await expect(second.handOff([big('a-3', 'team-a')])).rejects.toMatchObject({ code: 'OUTBOX_SHARE_FULL' });
    const dest = new Recording('a');
    const d = dispatcher(dest);
    second.start([{ name: 'a', dispatcher: d, leaseMs: 5000 }]);
    await until(() => second.depth('a') === 0, 5000);
    await expect(second.handOff([big('a-3', 'team-a')])).resolves.toEqual({ processed: 1, cached: 0 });
    second.stop();
    await d.idle();
    await second.close();
  });
});

describe("the outbox's WAL while delivering", () => {
  /** Writes an alert state for each event (a random key, as Alertmanager's destination does), then takes them. */
  class StateWriting implements Destination {
    readonly kind = 'alertmanager';
    readonly maxBatch = 100;
    delivered = 0;
    constructor(
      readonly name: string,
      private readonly stores: SqliteAlertStores,
    ) {}
    async send(events: readonly QueuedEvent[]): Promise<Outcome> {
      const store = this.stores.store(this.name);
      await Promise.all(
        events.map((q) => {
          const id = q.event().id;
          const key = `${(id.length * 2654435761 + Number(id.slice(1)) * 40503) % 1_000_003}-${id}`;
          const state = {
            key,
            labels: {},
            annotations: { d: 'x'.repeat(600) },
            startsAt: '',
            lastEventAtMs: 1,
            lastEventId: id,
          };
          return store.put(state, 0);
        }),
      );
      this.delivered += events.length;
      return { kind: 'accepted' };
    }
    async close(): Promise<void> {}
  }

  it('delivers a backlog without the loop checkpointing the WAL: settles and leases wait for the worker, as the states do', async () => {
    const dir = tempDir();
    // A 4 MiB WAL (an eighth of maxBytes): about a thousand new states fill it. As with the defaults
    // (a 16 MiB WAL, 2,048 alerts in flight), the states written at once after a checkpoint (up to
    // maxInFlight, a page each) fit in half of it: more than the whole WAL in one commit would make
    // the loop checkpoint whatever the worker does.
    const outbox = new Outbox(dir, 32 << 20, { destinationsOf: () => ['am'] }, noBury);
    const stores = new SqliteAlertStores(dir, outbox.diskReserve, outbox.walCheckpointer);
    const dest = new StateWriting('am', stores);
    const d = new Dispatcher(
      dest,
      { maxAttempts: 3, backoffMinMs: 1, backoffMaxMs: 2, maxInFlight: 400, maxInFlightBytes: 1 << 20 },
      new DestinationMetrics(new Registry()),
      pino({ level: 'silent' }),
    );
    const events = 6000;
    for (let r = 0; r < events / 100; r++)
      await outbox.handOff(Array.from({ length: 100 }, (_, i) => ev(`e${r * 100 + i}`)));
    try {
      const before = outbox.walCheckpointer.loopCheckpoints;
      outbox.start([{ name: 'am', dispatcher: d, leaseMs: 60_000 }]);
      await until(() => dest.delivered >= events && outbox.depth('am') === 0, 30_000);
      // The worker checkpointed many times (6,000 states are several times the WAL); the loop not.
      expect(outbox.walCheckpointer.loopCheckpoints - before).toBe(0);
    } finally {
      await d.idle();
      stores.close();
      await outbox.close();
    }
  }, 40_000);
});
