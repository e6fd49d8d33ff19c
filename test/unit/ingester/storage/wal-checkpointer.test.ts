import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { WalCheckpointer } from '../../../../ingester/storage/wal-checkpointer.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const KiB = 1024;
const LIMIT = 256 * KiB;
/** One transaction of the tests below: 8 rows of 4 KiB, about 40 KiB of WAL. */
const TRANSACTION_BYTES = 48 * KiB;

function openDb(): { db: DatabaseSync; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'intake-wal-'));
  dirs.push(dir);
  const file = join(dir, 'db.sqlite');
  const db = new DatabaseSync(file);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = NORMAL');
  db.exec('CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)');
  return { db, file };
}

function writeOne(db: DatabaseSync, checkpointer: WalCheckpointer, i: number): void {
  const insert = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
  db.exec('BEGIN IMMEDIATE');
  for (let j = 0; j < 8; j++) insert.run(i * 8 + j, 'x'.repeat(4000));
  db.exec('COMMIT');
  checkpointer.afterCommit(db);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('WAL checkpointer', () => {
  it('keeps the WAL within its limit while the worker lags, by checkpointing on the loop', async () => {
    const { db, file } = openDb();
    // A worker slower than the writes (a slow disk): each of its checkpoints takes 100 ms more.
    const checkpointer = new WalCheckpointer(file, LIMIT, { workerDelayMs: 100 });
    checkpointer.attach(db);
    let largest = 0;
    for (let i = 0; i < 200; i++) {
      writeOne(db, checkpointer, i);
      largest = Math.max(largest, checkpointer.walBytes());
      if (i % 20 === 0) await sleep(1);
    }
    expect(largest).toBeLessThanOrEqual(LIMIT + TRANSACTION_BYTES);
    expect(checkpointer.loopCheckpoints).toBeGreaterThan(0);
    // Every row is in the database, read through a connection of its own.
    const reader = new DatabaseSync(file);
    expect(reader.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 1600 });
    reader.close();
    checkpointer.close();
    db.close();
  });

  it('copies the WAL off the loop and holds waiting writes until it is done, so the WAL restarts', async () => {
    const { db, file } = openDb();
    const checkpointer = new WalCheckpointer(file, LIMIT, { workerDelayMs: 50 });
    checkpointer.attach(db);
    expect(checkpointer.holdWrites(() => undefined)).toBe(false);
    let i = 0;
    // Past half the limit the worker is asked for a checkpoint.
    while (checkpointer.walBytes() <= LIMIT / 2) writeOne(db, checkpointer, i++);
    let resumed = false;
    expect(checkpointer.holdWrites(() => (resumed = true))).toBe(true);
    for (let t = 0; t < 200 && !resumed; t++) await sleep(25);
    expect(resumed).toBe(true);
    expect(checkpointer.loopCheckpoints).toBe(0);
    // Nothing overtook the checkpoint: the next commit restarts the WAL and cuts it to a quarter of the limit.
    writeOne(db, checkpointer, i++);
    expect(checkpointer.walBytes()).toBeLessThanOrEqual(LIMIT / 4);
    // Writing on for a while never needs the loop's checkpoint when the writes wait for the worker.
    for (let n = 0; n < 60; n++) {
      await new Promise<void>((resume) => {
        if (!checkpointer.holdWrites(resume)) resume();
      });
      writeOne(db, checkpointer, i++);
    }
    expect(checkpointer.loopCheckpoints).toBe(0);
    checkpointer.close();
    db.close();
  });

  it('holds waiting writes at most 2 s behind a worker that does not finish (a hung disk), and not again while it hangs', async () => {
    const { db, file } = openDb();
    const checkpointer = new WalCheckpointer(file, LIMIT, { workerDelayMs: 8_000 });
    checkpointer.attach(db);
    let i = 0;
    while (checkpointer.walBytes() <= LIMIT / 2) writeOne(db, checkpointer, i++);
    const started = Date.now();
    let resumedAfter: number | undefined;
    expect(checkpointer.holdWrites(() => (resumedAfter = Date.now() - started))).toBe(true);
    for (let t = 0; t < 160 && resumedAfter === undefined; t++) await sleep(25);
    expect(resumedAfter).toBeGreaterThanOrEqual(1_900);
    expect(resumedAfter).toBeLessThan(3_500);
    // Still running: the next writes are not held, and the loop does not wait for it again.
    expect(checkpointer.holdWrites(() => undefined)).toBe(false);
    const loopStarted = Date.now();
    while (checkpointer.walBytes() <= LIMIT) writeOne(db, checkpointer, i++);
    writeOne(db, checkpointer, i++);
    expect(Date.now() - loopStarted).toBeLessThan(1_500);
    expect(checkpointer.loopCheckpoints).toBeGreaterThan(0);
    db.close();
  }, 20_000);
});
