/** The bus store's per-replica ledger: a namespace's share and the whole, its own oldest given up first. */
import { WrittenLedger } from '../../../../ingester/inspector/written-ledger.js';

let now = 1_800_000_000_000;
const ledger = () => new WrittenLedger({ maxBytes: 10_000, maxBytesPerNamespace: 4_000, maxAgeMs: 60_000 }, () => now);

it("gives up the namespace's own oldest at its share, never another's", () => {
  const l = ledger();
  const b = l.reserve('b', 1000);
  b!.written.seq = 1;
  const seqs: number[] = [];
  for (let i = 0; i < 10; i++) {
    const r = l.reserve('a', 1000)!;
    r.written.seq = 100 + i;
    seqs.push(...r.evicted.map((w) => w.seq as number));
  }
  expect(l.bytes('a')).toBe(4000);
  expect(l.bytes('b')).toBe(1000);
  expect(seqs).toEqual([100, 101, 102, 103, 104, 105]);
});

it('past the whole, the namespace holding the most gives up its oldest', () => {
  const l = ledger();
  for (const ns of ['a', 'b', 'c']) for (let i = 0; i < 3; i++) l.reserve(ns, 1000);
  l.reserve('a', 1000);
  const r = l.reserve('d', 1000)!;
  expect(r.evicted.map((w) => w.namespace)).toEqual(['a']);
  expect(l.bytes()).toBeLessThanOrEqual(10_000);
});

it('refuses what never fits, gives back a write the bus refused, forgets what aged out', () => {
  const l = ledger();
  expect(l.reserve('a', 5000)).toBeUndefined();
  const r = l.reserve('a', 1000)!;
  l.release(r.written);
  expect(l.bytes()).toBe(0);
  l.reserve('a', 1000);
  now += 61_000;
  l.reserve('b', 10);
  expect(l.bytes('a')).toBe(0);
});

it('marks a capture given up before its acknowledgement, to be deleted once it has a sequence', () => {
  const l = ledger();
  const first = l.reserve('a', 4000)!;
  const second = l.reserve('a', 1000)!;
  expect(second.evicted).toEqual([first.written]);
  expect(first.written.evicted).toBe(true);
  expect(first.written.seq).toBeUndefined();
});
