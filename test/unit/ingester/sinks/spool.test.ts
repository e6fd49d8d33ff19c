import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Spool, SpoolError } from '../../../../ingester/sinks/spool.js';

const dirs: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'intake-spool-unit-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const rec = (id: string, size = 10) => ({
  id,
  subject: 'intake.events.default.demo',
  payload: JSON.stringify({ id, pad: 'x'.repeat(size) }),
});

describe('spool', () => {
  it('keeps committed events across a close and reopen, oldest first', async () => {
    const dir = tempDir();
    const spool = new Spool(dir, 1 << 20);
    await Promise.all([spool.append([rec('a'), rec('b')]), spool.append([rec('c')])]);
    spool.close();
    const reopened = new Spool(dir, 1 << 20);
    expect(reopened.depth).toBe(3);
    expect(reopened.peek(10).map((r) => r.id)).toEqual(['a', 'b', 'c']);
    reopened.close();
  });

  it('counts the events a row (a bus message) holds, also after a reopen and as rows leave', async () => {
    const dir = tempDir();
    const spool = new Spool(dir, 1 << 20);
    await spool.append([{ ...rec('m1'), events: 100 }, rec('single')]);
    expect(spool.depth).toBe(101);
    spool.close();
    const reopened = new Spool(dir, 1 << 20);
    expect(reopened.depth).toBe(101);
    expect(reopened.peek(10).map((r) => [r.id, r.events])).toEqual([
      ['m1', 100],
      ['single', 1],
    ]);
    reopened.remove(reopened.peek(1));
    expect(reopened.depth).toBe(1);
    // A row holds at least one event, so an empty spool is one whose count is 0.
    await reopened.append([{ ...rec('none'), events: 0 }]);
    expect(reopened.depth).toBe(2);
    reopened.close();
  });

  it('reads a spool an older version wrote (one event per row, no events column)', async () => {
    const dir = tempDir();
    const { DatabaseSync } = await import('node:sqlite');
    const db = new DatabaseSync(join(dir, 'spool.sqlite'));
    db.exec(`CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
      subject TEXT NOT NULL, payload TEXT NOT NULL, spooled_at INTEGER NOT NULL)`);
    db.prepare('INSERT INTO events (id, subject, payload, spooled_at) VALUES (?, ?, ?, ?)').run('old', 's', '{}', 1);
    db.close();
    const spool = new Spool(dir, 1 << 20);
    expect(spool.depth).toBe(1);
    await spool.append([{ ...rec('new'), events: 5 }]);
    expect(spool.peek(10).map((r) => [r.id, r.events])).toEqual([
      ['old', 1],
      ['new', 5],
    ]);
    expect(spool.depth).toBe(6);
    spool.close();
  });

  it('holds one row per event id, so a retried request spooled twice is replayed once', async () => {
    const spool = new Spool(tempDir(), 1 << 20);
    await spool.append([rec('a')]);
    await spool.append([rec('a'), rec('b')]);
    expect(spool.depth).toBe(2);
    spool.close();
  });

  it('refuses a whole request past maxBytes and accepts again after removal', async () => {
    const spool = new Spool(tempDir(), 65536);
    await spool.append([rec('a', 30_000)]);
    await expect(spool.append([rec('b', 20_000), rec('c', 20_000)])).rejects.toMatchObject({ reason: 'full' });
    expect(spool.depth).toBe(1);
    spool.remove(spool.peek(1));
    expect(spool.depth).toBe(0);
    expect(spool.bytes).toBe(0);
    await spool.append([rec('b', 20_000), rec('c', 20_000)]);
    expect(spool.depth).toBe(2);
    spool.close();
  });

  it('reports an unusable directory instead of throwing, and refuses appends', async () => {
    const file = join(tempDir(), 'file');
    writeFileSync(file, '');
    const spool = new Spool(join(file, 'spool'), 1 << 20);
    expect(spool.unavailableReason).toMatch(/cannot be opened/);
    expect(spool.canAccept()).toBe(false);
    const err = await spool.append([rec('a')]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SpoolError);
    expect((err as SpoolError).reason).toBe('unavailable');
  });

  it('reports the age of the oldest event', async () => {
    const spool = new Spool(tempDir(), 1 << 20);
    expect(spool.oldestAgeMs()).toBe(0);
    await spool.append([rec('a')]);
    expect(spool.oldestAgeMs(Date.now() + 5000)).toBeGreaterThanOrEqual(5000);
    spool.close();
  });
});
