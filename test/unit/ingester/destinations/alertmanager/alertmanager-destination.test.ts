import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { Registry } from 'prom-client';
import type {
  AlertCounts,
  AlertStore,
  StateWrite,
  Versioned,
} from '../../../../../ingester/destinations/alertmanager/alert-store.js';
import { AlertmanagerDestination } from '../../../../../ingester/destinations/alertmanager/alertmanager-destination.js';
import type { AlertState, PostableAlert } from '../../../../../ingester/destinations/alertmanager/alerts.js';
import { DestinationMetrics } from '../../../../../ingester/destinations/metrics.js';
import type { NormalisedEvent } from '../../../../../ingester/core/event.js';
import { queuedEvent } from '../../../../../ingester/destinations/destination.js';

const queued = (events: NormalisedEvent[]): ReturnType<typeof queuedEvent>[] => events.map(queuedEvent);

/** The store's contract in memory: versions, compare-and-set, a lease. */
class MemoryStore implements AlertStore {
  readonly rows = new Map<string, Versioned>();
  leaseHolder = '';
  reads = 0;
  writes = 0;
  async get(key: string): Promise<Versioned | undefined> {
    this.reads++;
    return this.rows.get(key);
  }
  async put(state: AlertState, version: number): Promise<number | false> {
    this.writes++;
    if ((this.rows.get(state.key)?.version ?? 0) !== version) return false;
    this.rows.set(state.key, { state, version: version + 1 });
    return version + 1;
  }
  async delete(key: string): Promise<void> {
    this.rows.delete(key);
  }
  counts?: AlertCounts;
  async *keys(): AsyncGenerator<string> {
    yield* [...this.rows.keys()].sort();
  }
  async loadCounts(): Promise<AlertCounts | undefined> {
    return this.counts;
  }
  async saveCounts(counts: AlertCounts): Promise<void> {
    this.counts = counts;
  }
  async holdResendLease(holder: string): Promise<boolean> {
    this.leaseHolder ||= holder;
    return this.leaseHolder === holder;
  }
}

/** A store whose writes wait until the test opens the gate (or fails them). */
class GatedStore extends MemoryStore {
  gated = true;
  waiting: Array<{ go: () => void; fail: (err: Error) => void }> = [];
  override async put(state: AlertState, version: number): Promise<number | false> {
    if (this.gated) await new Promise<void>((go, fail) => this.waiting.push({ go, fail }));
    return super.put(state, version);
  }
  open(): void {
    this.gated = false;
    for (const w of this.waiting.splice(0)) w.go();
  }
  fail(err: Error): void {
    for (const w of this.waiting.splice(0)) w.fail(err);
  }
}

/** A store that writes a batch's states together (as SQLite does), answering each as put() would, or failing them. */
class BatchStore extends MemoryStore {
  batches: number[] = [];
  failNext?: Error;
  async putAll(writes: readonly StateWrite[]): Promise<Array<number | false | Error>> {
    this.batches.push(writes.length);
    const failed = this.failNext;
    this.failNext = undefined;
    if (failed) return writes.map(() => failed);
    const answers: Array<number | false> = [];
    for (const w of writes) answers.push(await this.put(w.state, w.version));
    return answers;
  }
}

const waitUntil = async (ok: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(ok()).toBe(true);
};

let server: Server;
let url = '';
const posts: PostableAlert[][] = [];
let status = 200;
/** Milliseconds to hold the answer to the next requests, one entry each. */
const delays: number[] = [];
/** Requests whose body has arrived, answered or not. */
let arrived = 0;
beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      arrived++;
      const delay = delays.shift() ?? 0;
      setTimeout(() => {
        posts.push(JSON.parse(body) as PostableAlert[]);
        res.writeHead(status).end();
      }, delay);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  posts.length = 0;
  delays.length = 0;
  status = 200;
});

const event = (signature: string, severity: number, id: string, namespace = 'default'): NormalisedEvent =>
  ({
    id,
    integration: 'demo',
    namespace,
    received_at: new Date().toISOString(),
    agent_time: new Date().toISOString(),
    signature,
    source: 'h',
    severity,
    severity_name: severity === 0 ? 'clear' : 'major',
    custom_info: {},
  }) as NormalisedEvent;

const destination = (
  store: AlertStore,
  o: { resolveAfterMs?: number; maxAlertsPerNamespace?: number; maxAlerts?: number; registry?: Registry } = {},
  holder = 'me',
): AlertmanagerDestination =>
  new AlertmanagerDestination(
    'am',
    {
      urls: [url],
      resendIntervalMs: 60_000,
      resolvedRetentionMs: 900_000,
      resolveAfterMs: o.resolveAfterMs ?? 0,
      timeoutMs: 1000,
      maxAlertsPerNamespace: o.maxAlertsPerNamespace ?? 10_000,
      maxAlerts: o.maxAlerts ?? 50_000,
    },
    () => store,
    new DestinationMetrics(o.registry ?? new Registry()),
    pino({ level: 'silent' }),
    holder,
  );

const refusedCount = async (registry: Registry, limit: string): Promise<number> =>
  ((await registry.getSingleMetric('intake_destination_alerts_refused_total')?.get())?.values ?? [])
    .filter((v) => v.labels.limit === limit)
    .reduce((sum, v) => sum + v.value, 0);

describe('Alertmanager destination', () => {
  it("has a post on each of its eight connections at once: every post in flight is in Alertmanager's hands", async () => {
    const am = destination(new MemoryStore());
    delays.push(...Array.from({ length: 8 }, () => 600));
    const before = arrived;
    const sends = Array.from({ length: 8 }, (_, i) => am.send(queued([event(`c${i}`, 5, `c${i}`)])));
    // With four connections the other four posts waited in the client for the first answers.
    await new Promise((r) => setTimeout(r, 300));
    const atOnce = arrived - before;
    const outcomes = await Promise.all(sends);
    expect(atOnce).toBe(8);
    expect(outcomes.every((o) => o.kind === 'accepted')).toBe(true);
    await am.close();
  });

  it('stores each alert state and posts the alerts of a batch once each', async () => {
    const store = new MemoryStore();
    const d = destination(store);
    expect(await d.send(queued([event('a', 4, '1'), event('b', 4, '2'), event('a', 4, '3')]))).toEqual({
      kind: 'accepted',
    });
    expect(posts).toHaveLength(1);
    expect(posts[0]?.map((a) => a.labels.signature).sort()).toEqual(['a', 'b']);
    expect(store.rows.size).toBe(2);
    await d.close();
  });

  it("writes a batch's states together (one putAll, not a put each) when the store can", async () => {
    const store = new BatchStore();
    const d = destination(store);
    const batch = Array.from({ length: 40 }, (_, i) => event(`s${i}`, 4, `e${i}`));
    expect(await d.send(queued(batch))).toEqual({ kind: 'accepted' });
    expect(store.batches).toEqual([40]);
    expect(store.rows.size).toBe(40);
    expect(posts.flat()).toHaveLength(40);
    await d.close();
  });

  it("prepares a batch after the turn's I/O, not in the turn that handed it out", async () => {
    const store = new BatchStore();
    const d = destination(store);
    // The first batch loads the counts; the next ones find them loaded.
    expect(await d.send(queued([event('w', 4, 'w')]))).toEqual({ kind: 'accepted' });
    const sending = [d.send(queued([event('x', 4, '1')])), d.send(queued([event('y', 4, '2')]))];
    for (let i = 0; i < 20; i++) await Promise.resolve();
    // Nothing parsed, applied or written yet: answers read in this turn go first.
    expect(store.batches).toEqual([1]);
    expect(await Promise.all(sending)).toEqual([{ kind: 'accepted' }, { kind: 'accepted' }]);
    expect(store.batches).toEqual([1, 1, 1]);
    await d.close();
  });

  it('retries a batch whose putAll failed, and gives back the places its new alerts took under the caps', async () => {
    const store = new BatchStore();
    const d = destination(store, { maxAlerts: 3 });
    const batch = [event('a', 4, '1'), event('b', 4, '2'), event('c', 4, '3')];
    store.failNext = new Error('disk I/O error');
    expect(await d.send(queued(batch))).toMatchObject({ kind: 'retry', reason: 'state_store' });
    expect(store.rows.size).toBe(0);
    // Redelivered: the three places are free again, so none is refused under maxAlerts 3.
    expect(await d.send(queued(batch))).toEqual({ kind: 'accepted' });
    expect(store.rows.size).toBe(3);
    expect(store.batches).toEqual([3, 3]);
    await d.close();
  });

  it("writes one alert's events of a batch once, and without a read when this replica wrote it last", async () => {
    const store = new MemoryStore();
    const d = destination(store);
    const base = Date.now() - 10_000;
    const at = (ms: number): string => new Date(base + ms).toISOString();
    const timed = (e: NormalisedEvent, ms: number): NormalisedEvent => ({ ...e, agent_time: at(ms) });
    await d.send(queued([timed(event('a', 4, '1'), 1), timed(event('a', 5, '2'), 2), timed(event('a', 0, '3'), 3)]));
    expect(store.writes).toBe(1);
    expect(store.reads).toBe(0);
    const stored = [...store.rows.values()][0];
    expect(stored?.state.lastEventId).toBe('3');
    expect(stored?.state.resolvedAt).toBeDefined();
    // Posted once, resolved: what the three events lead to.
    expect(posts).toHaveLength(1);
    expect(posts[0]).toHaveLength(1);
    expect(Date.parse(posts[0]?.[0]?.endsAt ?? '')).toBeLessThanOrEqual(Date.now());
    await d.send(queued([timed(event('a', 4, '4'), 4)]));
    expect(store.writes).toBe(2);
    expect(store.reads).toBe(0);
    expect([...store.rows.values()][0]?.state.resolvedAt).toBeUndefined();
    await d.close();
  });

  it("reads the store when its guess was stale: another replica's write wins the compare-and-set", async () => {
    const store = new MemoryStore();
    const [one, two] = [destination(store, {}, 'one'), destination(store, {}, 'two')];
    const base = Date.now() - 10_000;
    const at = (ms: number): string => new Date(base + ms).toISOString();
    await one.send(queued([{ ...event('a', 4, '1'), agent_time: at(1) }]));
    // Replica two knows nothing of the alert: its clear must still find and resolve it.
    await two.send(queued([{ ...event('a', 0, '2'), agent_time: at(2) }]));
    expect([...store.rows.values()][0]?.state).toMatchObject({ lastEventId: '2', resolvedAt: expect.any(String) });
    expect(posts.at(-1)?.[0]?.labels.signature).toBe('a');
    // Replica one's last write is stale now: its next event fails the write once, reads, and applies.
    const reads = store.reads;
    await one.send(queued([{ ...event('a', 4, '3'), agent_time: at(3) }]));
    expect(store.reads).toBe(reads + 1);
    expect([...store.rows.values()][0]?.state).toMatchObject({ lastEventId: '3' });
    expect([...store.rows.values()][0]?.state.resolvedAt).toBeUndefined();
    // An event older than the stored one changes nothing, however stale the guess.
    await two.send(queued([{ ...event('a', 0, '0'), agent_time: at(0) }]));
    expect([...store.rows.values()][0]?.state).toMatchObject({ lastEventId: '3' });
    await Promise.all([one.close(), two.close()]);
  });

  it('never lets an older state of an alert reach Alertmanager after a newer one, with batches in flight together', async () => {
    const store = new MemoryStore();
    const d = destination(store);
    const base = Date.now() - 10_000;
    const at = (ms: number): string => new Date(base + ms).toISOString();
    // The first batch's post is slow; the second batch carries a newer event of the same alert.
    await d.send(queued([{ ...event('warm', 4, 'w'), agent_time: at(0) }]));
    posts.length = 0;
    delays.push(300);
    const first = d.send(queued([{ ...event('a', 4, '1'), agent_time: at(1) }, event('b', 4, '3')]));
    await new Promise((r) => setTimeout(r, 50));
    const second = d.send(queued([{ ...event('a', 4, '2'), agent_time: at(2) }]));
    expect(await Promise.all([first, second])).toEqual([{ kind: 'accepted' }, { kind: 'accepted' }]);
    const ofA = posts.flat().filter((p) => p.labels.signature === 'a');
    expect(ofA.at(-1)?.annotations.event_id).toBe('2');
    // An alert the first batch did not share with the second is posted by the first.
    expect(posts.flat().some((p) => p.labels.signature === 'b')).toBe(true);
    await d.close();
  });

  it('leaves out of a batch not yet posted an alert a later batch holds a newer state of', async () => {
    const store = new MemoryStore();
    const d = destination(store);
    const base = Date.now() - 10_000;
    const at = (ms: number): string => new Date(base + ms).toISOString();
    const [first, second] = [
      d.send(queued([{ ...event('a', 4, '1'), agent_time: at(1) }])),
      d.send(queued([{ ...event('a', 4, '2'), agent_time: at(2) }])),
    ];
    expect(await Promise.all([first, second])).toEqual([{ kind: 'accepted' }, { kind: 'accepted' }]);
    const ofA = posts.flat().filter((p) => p.labels.signature === 'a');
    expect(ofA.at(-1)?.annotations.event_id).toBe('2');
    expect([...store.rows.values()][0]?.state.lastEventId).toBe('2');
    await d.close();
  });

  it('posts without waiting for the state write, and is delivered only once the state is written', async () => {
    const store = new GatedStore();
    const d = destination(store);
    const before = arrived;
    let done = false;
    const sent = d.send(queued([event('a', 4, '1'), event('b', 4, '2')])).then((o) => {
      done = true;
      return o;
    });
    // The post reaches Alertmanager while both writes wait (before, it waited for them).
    await waitUntil(() => arrived > before);
    await new Promise((r) => setTimeout(r, 50));
    expect(store.waiting).toHaveLength(2);
    expect(done).toBe(false);
    store.open();
    expect(await sent).toEqual({ kind: 'accepted' });
    expect(store.rows.size).toBe(2);
    await d.close();
  });

  it('does not deliver a batch whose state write fails after its post went out', async () => {
    const store = new GatedStore();
    const d = destination(store);
    const before = arrived;
    const sent = d.send(queued([event('a', 4, '1')]));
    await waitUntil(() => arrived > before);
    store.fail(new Error('disk I/O error'));
    expect(await sent).toMatchObject({
      kind: 'retry',
      reason: 'state_store',
      error: expect.stringMatching(/disk I\/O/),
    });
    expect(store.rows.size).toBe(0);
    // Delivered again: the state is written, the alert posted again.
    store.gated = false;
    expect(await d.send(queued([event('a', 4, '1')]))).toEqual({ kind: 'accepted' });
    expect(store.rows.size).toBe(1);
    expect(posts.at(-1)?.[0]?.labels.signature).toBe('a');
    await d.close();
  });

  it("posts again from the store's state when the guess it posted lost the compare-and-set", async () => {
    const store = new MemoryStore();
    const [one, two] = [destination(store, {}, 'one'), destination(store, {}, 'two')];
    const base = Date.now() - 10_000;
    const at = (ms: number): string => new Date(base + ms).toISOString();
    await one.send(queued([{ ...event('a', 4, '1'), agent_time: at(1) }]));
    // Another replica resolves it with a newer clear.
    await two.send(queued([{ ...event('a', 0, '3'), agent_time: at(3) }]));
    posts.length = 0;
    // Replica one's guess (firing) takes an event older than the clear: posted firing at once,
    // then the store's resolved state, which the older event does not change, posted after it.
    expect(await one.send(queued([{ ...event('a', 4, '2'), agent_time: at(2) }]))).toEqual({ kind: 'accepted' });
    expect(posts).toHaveLength(2);
    expect(Date.parse(posts[0]?.[0]?.endsAt ?? '')).toBeGreaterThan(Date.now());
    expect(Date.parse(posts[1]?.[0]?.endsAt ?? '')).toBeLessThanOrEqual(Date.now());
    expect([...store.rows.values()][0]?.state).toMatchObject({ lastEventId: '3', resolvedAt: expect.any(String) });
    await Promise.all([one.close(), two.close()]);
  });

  it('retries when no Alertmanager took the alerts, and keeps the state for the re-send', async () => {
    const store = new MemoryStore();
    const d = destination(store);
    status = 503;
    expect(await d.send(queued([event('a', 4, '1')]))).toMatchObject({ kind: 'retry', reason: 'http_503' });
    status = 200;
    // The redelivered event sends its state again.
    expect(await d.send(queued([event('a', 4, '1')]))).toEqual({ kind: 'accepted' });
    expect(posts.at(-1)?.[0]?.labels.signature).toBe('a');
    await d.close();
  });

  it('re-sends only while holding the lease, resolves alerts past resolveAfter, forgets spent ones', async () => {
    const store = new MemoryStore();
    const d = destination(store, { resolveAfterMs: 1 });
    await d.send(queued([event('a', 4, '1')]));
    await new Promise((r) => setTimeout(r, 5));
    await d.resend();
    const resent = posts.at(-1)?.[0];
    expect(Date.parse(resent?.endsAt ?? '')).toBeLessThanOrEqual(Date.now());
    expect(resent?.annotations.resolved_by).toMatch(/^resolveAfter/);
    expect((await store.get(resent ? ([...store.rows.keys()][0] as string) : ''))?.state.resolvedAt).toBeDefined();

    const other = destination(store, {}, 'someone-else');
    const before = posts.length;
    await other.resend();
    expect(posts.length).toBe(before);
    await Promise.all([d.close(), other.close()]);
  });

  it('refuses a new alert past the namespace cap and counts it; kept alerts still update and resolve; other namespaces go on', async () => {
    const store = new MemoryStore();
    const registry = new Registry();
    const d = destination(store, { maxAlertsPerNamespace: 2, registry });
    expect(await d.send(queued([event('a', 4, '1'), event('b', 4, '2'), event('c', 4, '3')]))).toEqual({
      kind: 'accepted',
    });
    expect(store.rows.size).toBe(2);
    expect(
      posts
        .flat()
        .map((a) => a.labels.signature)
        .sort(),
    ).toEqual(['a', 'b']);
    expect(await refusedCount(registry, 'namespace')).toBe(1);
    // Kept alerts update and resolve; a new namespace has its own cap.
    expect(await d.send(queued([event('a', 5, '4'), event('b', 0, '5'), event('x', 4, '6', 'other')]))).toEqual({
      kind: 'accepted',
    });
    expect(store.rows.size).toBe(3);
    expect(await refusedCount(registry, 'namespace')).toBe(1);
    await d.close();
  });

  it('refuses a new alert past the destination total', async () => {
    const store = new MemoryStore();
    const registry = new Registry();
    const d = destination(store, { maxAlerts: 3, registry });
    await d.send(
      queued([event('a', 4, '1', 'n1'), event('b', 4, '2', 'n2'), event('c', 4, '3', 'n3'), event('d', 4, '4', 'n4')]),
    );
    expect(store.rows.size).toBe(3);
    expect(await refusedCount(registry, 'total')).toBe(1);
    await d.close();
  });

  it('counts the kept states before the first re-send (a restart with a full store enforces the cap at once)', async () => {
    const store = new MemoryStore();
    const first = destination(store, { maxAlertsPerNamespace: 2 });
    await first.send(queued([event('a', 4, '1'), event('b', 4, '2')]));
    await first.close();
    const registry = new Registry();
    const restarted = destination(store, { maxAlertsPerNamespace: 2, registry });
    await restarted.send(queued([event('c', 4, '3')]));
    expect(store.rows.size).toBe(2);
    expect(await refusedCount(registry, 'namespace')).toBe(1);
    await restarted.close();
  });

  it('re-sends a page of at most 256 alerts at a time and stores the counts per namespace', async () => {
    const store = new MemoryStore();
    const d = destination(store);
    for (let i = 0; i < 600; i += 100)
      await d.send(
        queued(
          Array.from({ length: 100 }, (_, j) => event(`s${i + j}`, 4, `e${i + j}`, (i + j) % 3 === 0 ? 'x' : 'y')),
        ),
      );
    posts.length = 0;
    await d.resend();
    expect(posts.map((p) => p.length)).toEqual([256, 256, 88]);
    expect(store.counts).toEqual({ x: 200, y: 400 });
    await d.close();
  });
});

describe('a paused Alertmanager destination', () => {
  it('re-sends nothing while paused, and again once resumed', async () => {
    const store = new MemoryStore();
    let paused = false;
    const d = new AlertmanagerDestination(
      'am',
      {
        urls: [url],
        resendIntervalMs: 50,
        resolvedRetentionMs: 900_000,
        resolveAfterMs: 0,
        timeoutMs: 1000,
        maxAlertsPerNamespace: 10_000,
        maxAlerts: 50_000,
      },
      () => store,
      new DestinationMetrics(new Registry()),
      pino({ level: 'silent' }),
      'me',
      undefined,
      () => paused,
    );
    expect(await d.send(queued([event('a', 4, '1')]))).toEqual({ kind: 'accepted' });
    paused = true;
    posts.length = 0;
    d.start();
    await new Promise((r) => setTimeout(r, 300));
    expect(posts).toHaveLength(0);
    paused = false;
    await new Promise((r) => setTimeout(r, 300));
    expect(posts.length).toBeGreaterThan(0);
    await d.close();
  });
});
