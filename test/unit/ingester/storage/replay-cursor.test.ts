import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReplayCursor } from '../../../../ingester/storage/replay-cursor.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const cursorFile = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'intake-cursor-'));
  dirs.push(d);
  return join(d, 'spool.cursor');
};

describe('replay cursor', () => {
  it('starts at 0, moves forward only, and keeps its place across a reopen', () => {
    const path = cursorFile();
    const cursor = new ReplayCursor(path);
    expect(cursor.open()).toBe(true);
    expect(cursor.position).toBe(0);
    cursor.advance(5);
    cursor.advance(3);
    expect(cursor.position).toBe(5);
    cursor.advance(9);
    const again = new ReplayCursor(path);
    again.open();
    expect(again.position).toBe(9);
  });

  it('writes in place: the file keeps its size', () => {
    const path = cursorFile();
    const cursor = new ReplayCursor(path);
    cursor.open();
    const size = readFileSync(path).length;
    for (let seq = 1; seq < 50; seq++) cursor.advance(seq * 1000);
    expect(readFileSync(path).length).toBe(size);
  });

  it('survives a torn write: the other slot, one step behind, is read', () => {
    const path = cursorFile();
    const cursor = new ReplayCursor(path);
    cursor.open();
    cursor.advance(10);
    cursor.advance(20);
    // The slot written last (20) is torn.
    const bytes = readFileSync(path);
    const torn = bytes.indexOf('seq=20');
    bytes.write('seq=2X', torn, 'latin1');
    writeFileSync(path, bytes);
    const reread = new ReplayCursor(path);
    reread.open();
    expect(reread.position).toBe(10);
    // And the next write goes over the broken slot.
    reread.advance(30);
    const third = new ReplayCursor(path);
    third.open();
    expect(third.position).toBe(30);
  });

  it('remembers a renewal in progress until it is ended', () => {
    const path = cursorFile();
    const cursor = new ReplayCursor(path);
    cursor.open();
    cursor.advance(7);
    cursor.beginReset();
    const during = new ReplayCursor(path);
    during.open();
    expect(during.resetPending).toBe(true);
    expect(during.position).toBe(7);
    during.endReset();
    const after = new ReplayCursor(path);
    after.open();
    expect(after.resetPending).toBe(false);
    expect(after.position).toBe(7);
  });

  it('is unavailable where it cannot be created, and then refuses to move', () => {
    const cursor = new ReplayCursor('/proc/intake-no-such-dir/spool.cursor');
    expect(cursor.open()).toBe(false);
    expect(cursor.available).toBe(false);
    expect(() => cursor.advance(1)).toThrow(/not available/);
  });
});
