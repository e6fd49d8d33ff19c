import { growingLru } from '../../../common/growing-lru.js';

it('holds at most its count, evicting the least recently used', () => {
  const cache = growingLru<string, number>(3);
  for (const key of ['a', 'b', 'c']) cache.set(key, 1);
  cache.get('a');
  cache.set('d', 1);
  expect([...cache.keys()].sort()).toEqual(['a', 'c', 'd']);
  expect(cache.size).toBe(3);
});

it('expires entries by ttl', () => {
  let now = 1_000;
  const cache = growingLru<string, true>(10, { ttl: 100, ttlResolution: 0, perf: { now: () => now } });
  cache.set('a', true);
  now += 101;
  expect(cache.has('a')).toBe(false);
});

it('costs little while empty, where a preallocated cache of the same bound costs its whole size', () => {
  const caches: unknown[] = [];
  global.gc?.();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < 200; i++) {
    const cache = growingLru<string, true>(100_000, { ttl: 60_000 });
    cache.set('one', true);
    caches.push(cache);
  }
  const perCache = (process.memoryUsage().heapUsed - before) / caches.length;
  // A cache made with lru-cache's `max: 100_000` and a ttl allocates about 4 MB of arrays at once.
  expect(perCache).toBeLessThan(64 * 1024);
});
