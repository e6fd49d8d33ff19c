import { mkdtempSync, readlinkSync, rmSync, readdirSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WalFlush } from '../../../../ingester/storage/wal-flush.js';

/** The paths this process has open (Linux), to see which descriptors the flusher holds (SQLite holds one more). */
const openFiles = (): string[] =>
  readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      return [readlinkSync(`/proc/self/fd/${fd}`)];
    } catch {
      return [];
    }
  });

describe('WalFlush', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'intake-wal-flush-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const database = (file: string): DatabaseSync => {
    const db = new DatabaseSync(file);
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = NORMAL');
    db.exec('CREATE TABLE IF NOT EXISTS t (v TEXT)');
    return db;
  };

  it('flushes the WAL of what was committed, through one descriptor kept open', async () => {
    const file = join(dir, 'a.sqlite');
    const db = database(file);
    const wal = new WalFlush(file);
    db.prepare('INSERT INTO t VALUES (?)').run('x');
    const sqlites = openFiles().filter((f) => f === `${file}-wal`).length;
    await wal.flush();
    await wal.flush();
    expect(openFiles().filter((f) => f === `${file}-wal`)).toHaveLength(sqlites + 1);
    wal.release();
    expect(openFiles().filter((f) => f === `${file}-wal`)).toHaveLength(sqlites);
    db.close();
  });

  it('rejects when there is no WAL to flush (nothing was ever written)', async () => {
    await expect(new WalFlush(join(dir, 'none.sqlite')).flush()).rejects.toThrow(/ENOENT/);
  });

  it('closes a released descriptor only after the flushes using it end', async () => {
    const file = join(dir, 'b.sqlite');
    const db = database(file);
    db.prepare('INSERT INTO t VALUES (?)').run('x');
    const wal = new WalFlush(file);
    const sqlites = openFiles().filter((f) => f === `${file}-wal`).length;
    const under = wal.flush();
    wal.release();
    // Still open: the flush in the pool uses it.
    expect(openFiles().filter((f) => f === `${file}-wal`)).toHaveLength(sqlites + 1);
    await under;
    await wal.settled();
    expect(openFiles().filter((f) => f === `${file}-wal`)).toHaveLength(sqlites);
    db.close();
  });

  it('opens the new WAL after a release: files removed and made anew are flushed, not the old inode', async () => {
    const file = join(dir, 'c.sqlite');
    let db = database(file);
    db.prepare('INSERT INTO t VALUES (?)').run('x');
    const wal = new WalFlush(file);
    await wal.flush();
    wal.release();
    db.close();
    for (const f of ['c.sqlite', 'c.sqlite-wal', 'c.sqlite-shm']) rmSync(join(dir, f), { force: true });
    db = database(file);
    db.prepare('INSERT INTO t VALUES (?)').run('y');
    await wal.flush();
    // Ours and SQLite's, both on the file that exists (a deleted one reads "... (deleted)").
    expect(openFiles().filter((f) => f.startsWith(`${file}-wal`))).toEqual([`${file}-wal`, `${file}-wal`]);
    wal.release();
    db.close();
  });

  it('has nothing to flush for an in-memory database', async () => {
    await expect(new WalFlush(':memory:').flush()).resolves.toBeUndefined();
  });
});
