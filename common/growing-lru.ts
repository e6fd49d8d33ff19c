import { LRUCache } from 'lru-cache';

/** lru-cache's options, less the bounds that `growingLru` sets itself. */
export type GrowingLruOptions<K extends NonNullable<unknown>, V extends NonNullable<unknown>> = Omit<
  LRUCache.Options<K, V, unknown>,
  'max' | 'maxSize' | 'sizeCalculation'
>;

/**
 * A least-recently-used cache of at most `count` entries whose memory grows with what it holds.
 * lru-cache's `max` allocates every array for `max` entries when the cache is made: an empty
 * 100,000-entry cache costs megabytes, and a 1,000-entry cache per integration tens of KiB for each
 * integration, held by every replica whether anybody ever fills them. Counting each entry as size 1
 * against `maxSize` keeps the same bound and the same eviction order with arrays that grow.
 */
export function growingLru<K extends NonNullable<unknown>, V extends NonNullable<unknown>>(
  count: number,
  options: GrowingLruOptions<K, V> = {},
): LRUCache<K, V> {
  return new LRUCache<K, V>({ ...options, maxSize: Math.max(1, count), sizeCalculation: () => 1 });
}
