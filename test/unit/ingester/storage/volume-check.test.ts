import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diskNeedFor } from '../../../../ingester/storage/sqlite-space.js';
import { checkStoreVolume, formatBytes, largestFitting, volumeOf } from '../../../../ingester/storage/volume-check.js';

const dir = mkdtempSync(join(tmpdir(), 'intake-volume-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const MiB = 1024 * 1024;

describe('store volume check', () => {
  it('measures the filesystem of a directory that does not exist yet', () => {
    const v = volumeOf(join(dir, 'not', 'yet'));
    const s = statfsSync(dir);
    expect(v?.total).toBe(s.blocks * s.bsize);
    expect(v?.own).toBe(0);
  });

  it('refuses a maxBytes the volume can never hold, naming the setting, the sizes and what fits', () => {
    const { blocks, bsize } = statfsSync(dir);
    const total = blocks * bsize;
    expect(() => checkStoreVolume(dir, [{ maxBytes: total, setting: 'spool.maxBytes' }])).toThrow(
      /^spool\.maxBytes \(.+\) plus its overhead \(.+\) does not fit on the volume of .+ \(.+ free of .+\): lower spool\.maxBytes to at most .+ or give the volume more room$/,
    );
  });

  it('accepts a maxBytes that fits', () => {
    expect(checkStoreVolume(dir, [{ maxBytes: MiB, setting: 'spool.maxBytes' }])).toBeUndefined();
  });

  it('counts every store on the volume, and proposes to lower the first', () => {
    const { blocks, bsize } = statfsSync(dir);
    const total = blocks * bsize;
    expect(() =>
      checkStoreVolume(dir, [
        { maxBytes: MiB, setting: 'spool.maxBytes' },
        { maxBytes: total, setting: 'deadLetter.maxBytes' },
      ]),
    ).toThrow(
      /^spool\.maxBytes \(1 MiB\) and deadLetter\.maxBytes \(.+\) plus their overhead .* do not fit on .*: give the volume more room$/,
    );
  });

  it("counts a store's disk reserve", () => {
    const { blocks, bsize } = statfsSync(dir);
    const total = blocks * bsize;
    const fits = largestFitting(total);
    // Fits without a reserve, not with one.
    expect(() => checkStoreVolume(dir, [{ maxBytes: fits, setting: 'spool.maxBytes' }])).not.toThrow();
    expect(() =>
      checkStoreVolume(dir, [
        { maxBytes: fits, setting: 'spool.maxBytes', reserveBytes: total - diskNeedFor(fits) + 1 },
      ]),
    ).toThrow(/^spool\.maxBytes .* does not fit/);
  });

  it("counts a store's larger WAL (the outbox's)", () => {
    const { blocks, bsize } = statfsSync(dir);
    const total = blocks * bsize;
    const fits = largestFitting(total);
    // Fits with the default WAL limit, not with the outbox's 16 MiB.
    expect(() => checkStoreVolume(dir, [{ maxBytes: fits, setting: 'spool.maxBytes' }])).not.toThrow();
    expect(() =>
      checkStoreVolume(dir, [{ maxBytes: fits, setting: 'spool.maxBytes', largestWalBytes: 16 * MiB }]),
    ).toThrow(/^spool\.maxBytes .* does not fit/);
    expect(diskNeedFor(largestFitting(total, 16 * MiB), 16 * MiB)).toBeLessThanOrEqual(total);
  });

  it('finds the largest maxBytes that fits a volume', () => {
    const total = 3 * MiB;
    const fits = largestFitting(total);
    expect(diskNeedFor(fits)).toBeLessThanOrEqual(total);
    expect(diskNeedFor(fits + 1)).toBeGreaterThan(total);
    expect(largestFitting(MiB)).toBe(0);
  });

  it('says sizes the way an operator reads them', () => {
    expect(formatBytes(3 * MiB)).toBe('3 MiB');
    expect(formatBytes(1536 * MiB)).toBe('1.5 GiB');
    expect(formatBytes(900 * 1024)).toBe('900 KiB');
    expect(formatBytes(12)).toBe('12 bytes');
  });
});
