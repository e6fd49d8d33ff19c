import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { DiskReserve } from '../../../../ingester/storage/disk-reserve.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'intake-reserve-'));
  dirs.push(d);
  return d;
};
const diskFull = (): Error => Object.assign(new Error('database or disk is full'), { errcode: 13 });

describe('disk reserve', () => {
  it('is created at full size (written, not sparse) when there is room', () => {
    const path = join(tempDir(), 'store.reserve');
    const reserve = new DiskReserve(path, 128 * 1024);
    expect(reserve.held).toBe(true);
    const s = statSync(path);
    expect(s.size).toBe(128 * 1024);
    expect(s.blocks * 512).toBeGreaterThanOrEqual(128 * 1024);
  });

  it('runs a write once when it succeeds, and leaves the reserve in place', () => {
    const reserve = new DiskReserve(join(tempDir(), 'store.reserve'), 4096);
    let runs = 0;
    expect(reserve.withRoom(undefined, () => ++runs)).toBe(1);
    expect(reserve.held).toBe(true);
  });

  it('gives the reserve up and runs the write once more when it failed for lack of disk', () => {
    const path = join(tempDir(), 'store.reserve');
    const released: number[] = [];
    const reserve = new DiskReserve(path, 4096, () => released.push(1));
    let runs = 0;
    const result = reserve.withRoom(undefined, () => {
      if (++runs === 1) throw diskFull();
      return 'written';
    });
    expect(result).toBe('written');
    expect(runs).toBe(2);
    expect(existsSync(path)).toBe(false);
    expect(released).toHaveLength(1);
    // Not tried again within the second: the room it gave is for draining.
    expect(reserve.held).toBe(false);
    // Once there is room (and a refill is due), it is back.
    expect(reserve.refill(true)).toBe(true);
    expect(reserve.held).toBe(true);
  });

  it('throws what the second attempt threw, and other errors at once', () => {
    const reserve = new DiskReserve(join(tempDir(), 'store.reserve'), 4096);
    let runs = 0;
    expect(() =>
      reserve.withRoom(undefined, () => {
        runs++;
        throw diskFull();
      }),
    ).toThrow(/disk is full/);
    expect(runs).toBe(2);
    runs = 0;
    const other = new DiskReserve(join(tempDir(), 'store.reserve'), 4096);
    expect(() =>
      other.withRoom(undefined, () => {
        runs++;
        throw new Error('constraint failed');
      }),
    ).toThrow(/constraint/);
    expect(runs).toBe(1);
    expect(other.held).toBe(true);
  });

  it('restarts the WAL before the second attempt, so it is rewritten in place', () => {
    const dir = tempDir();
    const db = new DatabaseSync(join(dir, 'db.sqlite'));
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('CREATE TABLE t (v TEXT)');
    for (let i = 0; i < 50; i++) db.prepare('INSERT INTO t VALUES (?)').run('x'.repeat(2000));
    const walBefore = statSync(join(dir, 'db.sqlite-wal')).size;
    const reserve = new DiskReserve(join(dir, 'db.reserve'), 4096);
    let runs = 0;
    reserve.withRoom(db, () => {
      if (++runs === 1) throw diskFull();
      db.exec('DELETE FROM t');
    });
    // The delete's frames went to the start of the WAL: it did not grow.
    expect(statSync(join(dir, 'db.sqlite-wal')).size).toBeLessThanOrEqual(walBefore);
    expect((db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n).toBe(0);
    db.close();
  });

  it('is not created when the filesystem has no room for it (and as much again)', () => {
    const reserve = new DiskReserve(join(tempDir(), 'store.reserve'), Number.MAX_SAFE_INTEGER);
    expect(reserve.held).toBe(false);
  });
});
