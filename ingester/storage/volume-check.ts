/**
 * The start-up check of a store's volume: a volume whose size is below what the store may need
 * (maxBytes plus SQLite's overhead, sqlite-space.ts) is a configuration that can never work, and
 * the ingester refuses to start with a message naming the setting and the volume's size. A
 * volume that is large enough but has less free space (a node disk other pods filled) is only
 * warned about: refusing then would keep a spool that holds events from ever draining them, and
 * a spool drains on a full disk anyway (spool.ts).
 */
import { readdirSync, statfsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError } from '../../common/config-files.js';
import { diskNeedFor } from './sqlite-space.js';

export interface VolumeSize {
  /** Bytes of the filesystem. */
  total: number;
  /** Bytes an unprivileged process may still write. */
  free: number;
  /** Bytes the store's own files take already (theirs to reuse). */
  own: number;
}

/** The size of the filesystem `dir` is (or will be) on; undefined when it cannot be known. */
export function volumeOf(dir: string): VolumeSize | undefined {
  // The directory may not exist yet: its nearest existing parent is on the same filesystem.
  for (let d = dir; ; d = dirname(d)) {
    try {
      const s = statfsSync(d);
      return { total: s.blocks * s.bsize, free: s.bavail * s.bsize, own: d === dir ? filesSize(dir) : 0 };
    } catch {
      if (dirname(d) === d) return undefined;
    }
  }
}

function filesSize(dir: string): number {
  let sum = 0;
  for (const f of readdirSync(dir)) {
    try {
      sum += statSync(join(dir, f)).size;
    } catch {
      // removed meanwhile
    }
  }
  return sum;
}

/** The largest maxBytes whose store fits on `total` bytes (0 when none does). */
export function largestFitting(total: number, largestWal?: number): number {
  let lo = 0;
  let hi = Math.max(0, total);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (diskNeedFor(mid, largestWal) <= total) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

export interface StoreOnVolume {
  /** The setting that bounds the store, as the message names it (`spool.maxBytes`). */
  setting: string;
  maxBytes: number;
  /** Disk the store keeps aside besides (a disk reserve: disk-reserve.ts). */
  reserveBytes?: number;
  /** Its largest WAL, when not sqlite-space.ts's default (the outbox's). */
  largestWalBytes?: number;
}

const needOf = (s: StoreOnVolume): number => diskNeedFor(s.maxBytes, s.largestWalBytes) + (s.reserveBytes ?? 0);

/**
 * Throws a ConfigError when the volume of `dir` is too small for its stores (the first one is
 * the one the message proposes to lower); returns a warning (undefined when there is none) when
 * it is large enough but has less room left.
 */
export function checkStoreVolume(
  dir: string,
  stores: readonly [StoreOnVolume, ...StoreOnVolume[]],
): string | undefined {
  const volume = volumeOf(dir);
  if (!volume) return undefined;
  const [first, ...others] = stores;
  const othersNeed = others.reduce((sum, s) => sum + needOf(s), 0) + (first.reserveBytes ?? 0);
  const need = diskNeedFor(first.maxBytes, first.largestWalBytes) + othersNeed;
  const overhead = need - stores.reduce((sum, s) => sum + s.maxBytes, 0);
  const settings = stores.map((s) => `${s.setting} (${formatBytes(s.maxBytes)})`).join(' and ');
  const what = `${settings} plus ${stores.length > 1 ? 'their' : 'its'} overhead (${formatBytes(overhead)}: SQLite's pages, WAL and files)`;
  const where = `the volume of ${dir} (${formatBytes(volume.free)} free of ${formatBytes(volume.total)})`;
  if (volume.total < need) {
    const fits = largestFitting(volume.total - othersNeed, first.largestWalBytes);
    throw new ConfigError(
      `${what} ${stores.length > 1 ? 'do' : 'does'} not fit on ${where}: ` +
        (fits >= 65536
          ? `lower ${first.setting} to at most ${formatBytes(fits)} or give the volume more room`
          : 'give the volume more room'),
    );
  }
  if (volume.free + volume.own < need)
    return `${what} ${stores.length > 1 ? 'are' : 'is'} more than is left on ${where}: the stores may fill the disk before their limits, then refuse (503) until there is room; what they hold still drains`;
  return undefined;
}

/** 3 MiB, 1.5 GiB, 900 KiB: what an operator compares with the volume's size. */
export function formatBytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1).replace(/\.0$/, '')} ${units[unit]}`;
}
