/** The bus store's ledger of what the stream holds: every replica's messages, one share per namespace for all. */
import { StreamLedger } from '../../../../ingester/inspector/stream-ledger.js';

let now = 1_800_000_000_000;
const ledger = () => new StreamLedger({ maxBytes: 10_000, maxBytesPerNamespace: 4_000, maxAgeMs: 60_000 }, () => now);
const subject = (ns: string, kind = 'req', integration = 'i') => `intake.inspect.${kind}.${ns}.${integration}`;
/** A message another replica wrote, as the follower reads it. */
const seen = (ns: string, seq: number, bytes = 1000, kind = 'req') => ({
  namespace: ns,
  subject: subject(ns, kind),
  bytes,
  atMs: now,
  seq,
});

it("counts other replicas' messages in the namespace's one share, and gives up its own oldest, never another's", () => {
  const l = ledger();
  l.add(seen('b', 1));
  // Another replica wrote three of a's; this replica's own writes share the same 4000 bytes.
  for (const seq of [2, 3, 4]) l.add(seen('a', seq));
  const evicted: number[] = [];
  for (let i = 0; i < 3; i++) {
    const r = l.reserve('a', subject('a'), 1000)!;
    l.settle(r.held, 10 + i);
    evicted.push(...r.evicted.map((h) => h.seq as number));
  }
  // 3000 held by the other replica, 3000 more written here: the oldest two go.
  expect(evicted).toEqual([2, 3]);
  expect(l.bytes('a')).toBe(4000);
  expect(l.bytes('b')).toBe(1000);
});

it('counts a message once whether the follower or the acknowledgement comes first', () => {
  const l = ledger();
  const first = l.reserve('a', subject('a'), 1000)!;
  l.add(seen('a', 7));
  l.settle(first.held, 7);
  const second = l.reserve('a', subject('a'), 1000)!;
  l.settle(second.held, 8);
  l.add(seen('a', 8));
  expect(l.bytes('a')).toBe(2000);
  expect(l.size).toBe(2);
});

it('counts attempts too, in their namespace', () => {
  const l = ledger();
  l.add(seen('a', 1, 3500, 'att'));
  const r = l.reserve('a', subject('a'), 1000)!;
  expect(r.evicted.map((h) => h.seq)).toEqual([1]);
});

it('past the whole, the namespace holding the most gives up its oldest', () => {
  const l = ledger();
  let seq = 0;
  for (const ns of ['a', 'b', 'c']) for (let i = 0; i < 3; i++) l.add(seen(ns, ++seq));
  l.add(seen('a', ++seq));
  const r = l.reserve('d', subject('d'), 1000)!;
  expect(r.evicted.map((h) => h.namespace)).toEqual(['a']);
  expect(l.bytes()).toBeLessThanOrEqual(10_000);
});

it('refuses what never fits, gives back a write the bus refused, forgets what aged out', () => {
  const l = ledger();
  expect(l.reserve('a', subject('a'), 5000)).toBeUndefined();
  const r = l.reserve('a', subject('a'), 1000)!;
  l.release(r.held);
  expect(l.bytes()).toBe(0);
  l.add(seen('a', 1));
  now += 61_000;
  l.reserve('b', subject('b'), 10);
  expect(l.bytes('a')).toBe(0);
  expect(l.has(1)).toBe(false);
});

it('marks a message given up before its acknowledgement, to be deleted once it has a sequence', () => {
  const l = ledger();
  const first = l.reserve('a', subject('a'), 4000)!;
  const second = l.reserve('a', subject('a'), 1000)!;
  expect(second.evicted).toEqual([first.held]);
  expect(first.held.evicted).toBe(true);
  l.settle(first.held, 5);
  expect(first.held.seq).toBe(5);
  expect(l.has(5)).toBe(false);
  expect(l.bytes('a')).toBe(1000);
});

it("reconciles with the stream: forgets what is before its first sequence and each subject's oldest beyond its count", () => {
  const l = ledger();
  for (const seq of [1, 2, 3, 4]) l.add(seen('a', seq, 500));
  l.add({ ...seen('a', 5, 500), subject: subject('a', 'req', 'other') });
  // Written after the stream's answer was taken: not covered by its counts, so kept.
  l.add(seen('a', 9, 500));
  // Seq 1 aged out; another replica trimmed the subject to its newest two (3, 4).
  l.reconcile(2, 8, { [subject('a')]: 2, [subject('a', 'req', 'other')]: 1 });
  expect([1, 2, 3, 4, 5, 9].filter((s) => l.has(s))).toEqual([3, 4, 5, 9]);
  expect(l.bytes('a')).toBe(2000);
});

it("gives up the namespace's oldest stored when the follower brings another replica's write past the share", () => {
  const l = ledger();
  for (const seq of [1, 2, 3]) l.add(seen('a', seq));
  l.add(seen('b', 4));
  // Both replicas reserved the last room at once: this one wrote seq 5, the other seq 6.
  const mine = l.reserve('a', subject('a'), 1000)!;
  expect(mine.evicted).toEqual([]);
  l.settle(mine.held, 5);
  expect(l.add(seen('a', 6)).map((h) => h.seq)).toEqual([1]);
  expect(l.bytes('a')).toBe(4000);
  expect(l.bytes('b')).toBe(1000);
  // The follower reading a message this replica gave up does not count it again.
  const next = l.reserve('a', subject('a'), 1000)!;
  expect(next.evicted.map((h) => h.seq)).toEqual([2]);
  l.settle(next.held, 7);
  expect(l.add(seen('a', 2))).toEqual([]);
  expect(l.bytes('a')).toBe(4000);
});

it('does not count its own write twice when the follower brings it before the acknowledgement', () => {
  const l = ledger();
  for (const seq of [1, 2, 3]) l.add(seen('a', seq));
  const mine = l.reserve('a', subject('a'), 1000)!;
  // The reservation and the follower's copy are one message: no room needs to be made.
  expect(l.add(seen('a', 4))).toEqual([]);
  l.settle(mine.held, 4);
  expect(l.bytes('a')).toBe(4000);
  expect([1, 2, 3, 4].every((s) => l.has(s))).toBe(true);
});
