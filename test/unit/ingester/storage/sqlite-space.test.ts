import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { isStorageRefusal } from '../../../../ingester/sinks/bus-storage.js';
import {
  configureSpace,
  diskNeedFor,
  isDiskFull,
  OUTBOX_WAL_SIZE_LIMIT_BYTES,
  reclaimStep,
  walLimitFor,
} from '../../../../ingester/storage/sqlite-space.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'intake-space-'));
  dirs.push(d);
  return d;
};

describe('sqlite space', () => {
  it('gives a drained database back to a few pages in bounded steps, and truncates the WAL', () => {
    const dir = tempDir();
    const db = new DatabaseSync(join(dir, 'db.sqlite'));
    configureSpace(db);
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('CREATE TABLE t (v TEXT)');
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    db.exec('BEGIN');
    for (let i = 0; i < 5000; i++) insert.run('x'.repeat(4000));
    db.exec('COMMIT');
    db.exec('DELETE FROM t');
    const full = statSync(join(dir, 'db.sqlite')).size;
    expect(full).toBeGreaterThan(16 * 1024 * 1024);
    let steps = 1;
    while (reclaimStep(db, true)) steps++;
    expect(steps).toBeGreaterThan(1);
    expect(statSync(join(dir, 'db.sqlite')).size).toBeLessThan(64 * 1024);
    expect(statSync(join(dir, 'db.sqlite-wal')).size).toBe(0);
    db.close();
  });

  it('gives a small store a small WAL, and says what disk a store needs', () => {
    const MiB = 1024 * 1024;
    expect(walLimitFor(1024 * MiB)).toBe(4 * MiB);
    expect(walLimitFor(8 * MiB)).toBe(MiB);
    expect(walLimitFor(MiB)).toBe(256 * 1024);
    expect(walLimitFor(65536)).toBe(256 * 1024);
    // maxBytes + 10% + the WAL + 1 MiB.
    expect(diskNeedFor(MiB)).toBe(MiB + Math.ceil(MiB / 10) + 256 * 1024 + MiB);
    expect(diskNeedFor(1024 * MiB)).toBe(1024 * MiB + Math.ceil((1024 * MiB) / 10) + 4 * MiB + MiB);
    // The outbox's WAL (checkpointed by a worker) may grow to 16 MiB; a small outbox keeps a small one.
    expect(walLimitFor(1024 * MiB, OUTBOX_WAL_SIZE_LIMIT_BYTES)).toBe(16 * MiB);
    expect(walLimitFor(8 * MiB, OUTBOX_WAL_SIZE_LIMIT_BYTES)).toBe(MiB);
    expect(diskNeedFor(1024 * MiB, OUTBOX_WAL_SIZE_LIMIT_BYTES) - diskNeedFor(1024 * MiB)).toBe(12 * MiB);
  });

  it("checkpoints a small store's WAL at its limit", () => {
    const dir = tempDir();
    const db = new DatabaseSync(join(dir, 'db.sqlite'));
    configureSpace(db, 256 * 1024);
    db.exec('PRAGMA journal_mode = WAL');
    expect(Object.values(db.prepare('PRAGMA wal_autocheckpoint').get() ?? {})[0]).toBe(64);
    db.exec('CREATE TABLE t (v TEXT)');
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    for (let i = 0; i < 500; i++) insert.run('x'.repeat(4000));
    expect(statSync(join(dir, 'db.sqlite-wal')).size).toBeLessThan(512 * 1024);
    db.close();
  });

  it('recognises a full disk and the bus refusing for storage', () => {
    expect(isDiskFull(Object.assign(new Error('database or disk is full'), { errcode: 13 }))).toBe(true);
    expect(isDiskFull(new Error('UNIQUE constraint failed'))).toBe(false);
    expect(isStorageRefusal('insufficient resources')).toBe(true);
    expect(isStorageRefusal('maximum bytes exceeded')).toBe(true);
    expect(isStorageRefusal('maximum messages exceeded')).toBe(true);
    expect(isStorageRefusal('resource limits exceeded for account')).toBe(true);
    expect(isStorageRefusal('no stream listens on the subject (no responders)')).toBe(false);
    expect(isStorageRefusal('message size exceeds maximum allowed')).toBe(false);
  });
});
