/**
 * The filters of dead letters (reason, time range, cursor) on the index, and bulk replays on a
 * real SQLite store: progress, failures kept, cancel between letters, one at a time, and letters
 * kept after the start left for another time.
 */
import pino from 'pino';
import { Registry } from 'prom-client';
import type { NormalisedEvent } from '../../../../ingester/core/event.js';
import { IntakeError } from '../../../../ingester/core/errors.js';
import { DEFAULT_BULK_REPLAY_LIMITS } from '../../../../ingester/dead-letters/bulk-replay-slots.js';
import { BulkReplays } from '../../../../ingester/dead-letters/bulk-replay.js';
import type { DeadLetterReplayers } from '../../../../ingester/dead-letters/dead-letter-replay.js';
import { DeadLetterMetrics } from '../../../../ingester/dead-letters/metrics.js';
import {
  matches,
  metaOf,
  reasonMatches,
  type DeadLetter,
  type DeliveryDeadLetter,
  type LetterMeta,
} from '../../../../ingester/dead-letters/model.js';
import { ShareLedger } from '../../../../ingester/dead-letters/shares.js';
import { SqliteDeadLetters } from '../../../../ingester/dead-letters/sqlite-store.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const HOUR = 3_600_000;

const letter = (id: string, o: Partial<DeliveryDeadLetter> = {}) => ({
  kind: 'delivery' as const,
  id,
  namespace: 'default',
  integration: 'demo',
  destination: 'tickets',
  reason: 'http_400',
  error: 'no',
  attempts: 1,
  at: new Date(T0).toISOString(),
  event: { id: `event-${id}` } as NormalisedEvent,
  ...o,
});

const meta = (seq: number, o: Partial<LetterMeta> = {}): LetterMeta => ({
  id: `l${seq}`,
  seq,
  kind: 'delivery',
  namespace: 'default',
  integration: 'demo',
  destination: 'tickets',
  bytes: 10,
  atMs: T0,
  reason: 'http_400',
  ...o,
});

describe('filters', () => {
  it('reason: equal, or a prefix when it ends in *', () => {
    expect(reasonMatches('http_400', 'http_400')).toBe(true);
    expect(reasonMatches('http_400', 'http_40')).toBe(false);
    expect(reasonMatches('http_400', 'http_4*')).toBe(true);
    expect(reasonMatches('http_503', 'http_4*')).toBe(false);
    expect(reasonMatches('anything', '*')).toBe(true);
  });

  it('time range: since inclusive, until exclusive', () => {
    const m = meta(1);
    expect(matches(m, { since: T0, limit: 1 })).toBe(true);
    expect(matches(m, { since: T0 + 1, limit: 1 })).toBe(false);
    expect(matches(m, { until: T0, limit: 1 })).toBe(false);
    expect(matches(m, { until: T0 + 1, limit: 1 })).toBe(true);
    expect(matches(m, { since: T0 - HOUR, until: T0 + HOUR, limit: 1 })).toBe(true);
  });

  it('integration, destination, kind and the cursor combine', () => {
    const m = meta(5);
    expect(matches(m, { integration: 'demo', destination: 'tickets', kind: 'delivery', limit: 1 })).toBe(true);
    expect(matches(m, { integration: 'other', limit: 1 })).toBe(false);
    expect(matches(m, { destination: 'other', limit: 1 })).toBe(false);
    expect(matches(m, { kind: 'mapping', limit: 1 })).toBe(false);
    expect(matches(m, { afterSeq: 5, limit: 1 })).toBe(false);
    expect(matches(m, { afterSeq: 4, maxSeq: 5, limit: 1 })).toBe(true);
    expect(matches(m, { maxSeq: 4, limit: 1 })).toBe(false);
  });

  it('the index keeps a long reason cut one past the longest filter, so a cut one never equals a filter', () => {
    const long = 'x'.repeat(300);
    const m = metaOf({ ...letter('a', { reason: long }), seq: 1, bytes: 1 } as DeadLetter);
    expect(m.reason.length).toBe(257);
    expect(matches(m, { reason: long.slice(0, 256), limit: 1 })).toBe(false);
    expect(matches(m, { reason: `${long.slice(0, 256)}*`, limit: 1 })).toBe(true);
  });

  it('a letter without a readable time is older than any range', () => {
    const m = metaOf({ ...letter('a', { at: 'not a time' }), seq: 1, bytes: 1 } as DeadLetter);
    expect(m.atMs).toBe(0);
    expect(matches(m, { since: T0, limit: 1 })).toBe(false);
  });
});

describe('ShareLedger.select and census', () => {
  const ledger = new ShareLedger({ maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });
  // Two namespaces interleaved: a page is in seq order across them.
  for (let seq = 1; seq <= 10; seq++)
    ledger.add(meta(seq, { namespace: seq % 2 ? 'a' : 'b', reason: seq <= 5 ? 'http_400' : 'http_503' }));

  it('pages from a cursor, oldest first, across namespaces', () => {
    expect(ledger.select({ limit: 3 }).map((m) => m.seq)).toEqual([1, 2, 3]);
    expect(ledger.select({ afterSeq: 3, limit: 3 }).map((m) => m.seq)).toEqual([4, 5, 6]);
    expect(ledger.select({ afterSeq: 8, maxSeq: 9, limit: 3 }).map((m) => m.seq)).toEqual([9]);
    expect(ledger.select({ namespace: 'b', afterSeq: 2, limit: 2 }).map((m) => m.seq)).toEqual([4, 6]);
    expect(ledger.select({ reason: 'http_5*', limit: 10 }).map((m) => m.seq)).toEqual([6, 7, 8, 9, 10]);
  });

  it('counts what a filter selects and its newest position', () => {
    expect(ledger.census({ limit: 1 })).toEqual({ matched: 10, lastSeq: 10 });
    expect(ledger.census({ reason: 'http_400', limit: 1 })).toEqual({ matched: 5, lastSeq: 5 });
    expect(ledger.census({ namespace: 'none', limit: 1 })).toEqual({ matched: 0, lastSeq: 0 });
  });
});

describe('BulkReplays', () => {
  const logger = pino({ level: 'silent' });
  let store: SqliteDeadLetters;
  beforeEach(() => {
    store = new SqliteDeadLetters(':memory:', { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });
  });
  afterEach(() => store.close());

  const bulkWith = (replayers: Partial<DeadLetterReplayers>) =>
    new BulkReplays({
      store,
      replayers: { mapping: async () => 0, delivery: async () => undefined, ...replayers },
      metrics: new DeadLetterMetrics(new Registry(), () => store),
      leaseMs: 60_000,
      logger,
      limits: DEFAULT_BULK_REPLAY_LIMITS,
    });

  const ended = async (bulk: BulkReplays, id: string) => {
    for (let i = 0; i < 500 && bulk.get(id)?.state === 'running'; i++) await new Promise((r) => setTimeout(r, 5));
    return bulk.get(id)!;
  };

  it('replays what the filter selects, counts failures (kept, with why), and leaves the rest', async () => {
    for (let i = 0; i < 250; i++) await store.put(letter(`t${i}`, { reason: i % 50 === 0 ? 'http_503' : 'http_400' }));
    await store.put(letter('other', { destination: 'elsewhere' }));
    const bulk = bulkWith({
      delivery: async (l) => {
        if (l.reason === 'http_503') throw new Error('still down');
      },
    });
    const started = bulk.start({ destination: 'tickets' });
    expect(started).toMatchObject({ state: 'running', matched: 250, filter: { destination: 'tickets' } });
    const p = await ended(bulk, started.id);
    expect(p).toMatchObject({ state: 'done', matched: 250, replayed: 245, failed: 5, skipped: 0, remaining: 0 });
    expect(p.failures).toHaveLength(5);
    expect(p.failures[0]).toEqual({ id: 't0', message: 'still down' });
    expect((await store.list({ limit: 1000 })).map((l) => l.id).sort()).toEqual(
      ['other', 't0', 't100', 't150', 't200', 't50'].sort(),
    );
  });

  it('takes only the letters kept when it began: one failing again is kept anew and not replayed twice', async () => {
    for (let i = 0; i < 3; i++) await store.put(letter(`t${i}`));
    let handed = 0;
    const bulk = bulkWith({
      // The destination refuses it again at once: the letter comes back with a new position.
      delivery: async (l) => {
        handed++;
        await store.put({ ...letter(l.id), reason: 'http_400' });
      },
    });
    const p = await ended(bulk, bulk.start({}).id);
    expect(p).toMatchObject({ state: 'done', matched: 3, replayed: 3 });
    expect(handed).toBe(3);
    expect(await store.list({ limit: 10 })).toHaveLength(3);
  });

  it('cancel stops before the next letter; one runs at a time (429 with Retry-After); the untaken stay', async () => {
    for (let i = 0; i < 20; i++) await store.put(letter(`t${i}`));
    let release: () => void = () => undefined;
    let handed = 0;
    const bulk = bulkWith({
      delivery: async () => {
        handed++;
        if (handed === 3) await new Promise<void>((r) => (release = r));
      },
    });
    const first = bulk.start({});
    for (let i = 0; i < 100 && handed < 3; i++) await new Promise((r) => setTimeout(r, 5));
    expect(() => bulk.start({})).toThrow(IntakeError);
    try {
      bulk.start({});
    } catch (err) {
      expect((err as IntakeError).statusCode).toBe(429);
      expect((err as IntakeError).headers?.['retry-after']).toBeDefined();
    }
    const cancelling = bulk.cancel(first.id);
    release(); // the letter in hand is finished first
    const p = await cancelling;
    expect(p).toMatchObject({ state: 'cancelled', matched: 20, replayed: 3, remaining: 17 });
    expect(await store.list({ limit: 100 })).toHaveLength(17);
    // Ended: another may start, and both are listed newest first.
    const second = bulk.start({});
    await ended(bulk, second.id);
    expect(bulk.list().map((r) => r.id)).toEqual([second.id, first.id]);
    expect(bulk.get(second.id)).toMatchObject({ state: 'done', replayed: 17 });
  });

  it('a letter gone before its turn is skipped; a paced one keeps its rate', async () => {
    for (let i = 0; i < 5; i++) await store.put(letter(`t${i}`));
    const bulk = bulkWith({});
    const started = Date.now();
    const id = bulk.start({}, 50).id;
    // Another replay takes the last one first.
    const last = (await store.list({ ids: ['t4'], limit: 1 }))[0]!;
    await store.remove(last);
    const p = await ended(bulk, id);
    expect(p).toMatchObject({ state: 'done', matched: 5, replayed: 4, skipped: 1, remaining: 0, rate: 50 });
    // Four letters at 50/s: at least three gaps of 20 ms.
    expect(Date.now() - started).toBeGreaterThanOrEqual(55);
  });

  it('a cancel ends the pause of a slow pace at once (a shutdown does not wait for it)', async () => {
    for (let i = 0; i < 3; i++) await store.put(letter(`t${i}`));
    const bulk = bulkWith({});
    // One letter every 100 s: the first goes at once, then it waits.
    const id = bulk.start({}, 0.01).id;
    for (let i = 0; i < 100 && bulk.get(id)?.replayed === 0; i++) await new Promise((r) => setTimeout(r, 5));
    const started = Date.now();
    await bulk.close();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(bulk.get(id)).toMatchObject({ state: 'cancelled', replayed: 1, remaining: 2 });
  });

  it("one per namespace: another namespace's starts beside a slow one; no rate means maxRate; the slot is given back", async () => {
    for (let i = 0; i < 5; i++) await store.put(letter(`a${i}`, { namespace: 'team-a' }));
    for (let i = 0; i < 5; i++) await store.put(letter(`b${i}`, { namespace: 'team-b' }));
    const bulk = bulkWith({});
    const slow = bulk.start({ namespace: 'team-a' }, 0.01);
    expect(() => bulk.start({ namespace: 'team-a' })).toThrow(/one runs per namespace/);
    const b = bulk.start({ namespace: 'team-b' });
    expect(b.rate).toBe(DEFAULT_BULK_REPLAY_LIMITS.maxRate);
    expect(await ended(bulk, b.id)).toMatchObject({ state: 'done', replayed: 5 });
    expect(bulk.get(slow.id)).toMatchObject({ state: 'running', rate: 0.01 });
    await bulk.cancel(slow.id);
    await new Promise((r) => setImmediate(r));
    expect(bulk.start({ namespace: 'team-a' }).matched).toBeGreaterThan(0);
    await bulk.close();
  });

  it("keeps each namespace's last finished replays: one namespace's many quick ones never push another's out", async () => {
    await store.put(letter('b0', { namespace: 'team-b' }));
    const bulk = bulkWith({});
    const b = bulk.start({ namespace: 'team-b' });
    await ended(bulk, b.id);
    const ofA: string[] = [];
    // More than the 20 in all that were once kept for the whole replica.
    for (let i = 0; i < 22; i++) {
      const a = bulk.start({ namespace: 'team-a' });
      ofA.push(a.id);
      await ended(bulk, a.id);
      await new Promise((r) => setImmediate(r));
    }
    expect(bulk.get(b.id)).toMatchObject({ state: 'done' });
    expect(ofA.filter((id) => bulk.get(id) !== undefined)).toEqual(ofA.slice(-5));
    await bulk.close();
  });

  it('a store that cannot be read ends the bulk replay as failed, saying why', async () => {
    await store.put(letter('t0'));
    const broken = Object.assign(Object.create(store) as SqliteDeadLetters, {
      select: () => {
        throw new Error('the bus is not connected');
      },
    });
    const failing = new BulkReplays({
      store: broken,
      replayers: { mapping: async () => 0 },
      metrics: new DeadLetterMetrics(new Registry(), () => store),
      leaseMs: 1000,
      logger,
      limits: DEFAULT_BULK_REPLAY_LIMITS,
    });
    const p = await ended(failing, failing.start({}).id);
    expect(p).toMatchObject({ state: 'failed', message: 'the bus is not connected', matched: 1, remaining: 1 });
  });
});
