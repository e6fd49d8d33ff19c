import { jest } from '@jest/globals';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Spool, SpoolError } from '../../../../ingester/sinks/spool.js';
import { ReplayCursor } from '../../../../ingester/storage/replay-cursor.js';

/** The spool's deletes fail as on a full disk (SQLITE_FULL) until the returned function is called. */
function diskFullForDeletes(): () => void {
  const proto = Spool.prototype as unknown as { removeOnce: () => void };
  const spy = jest.spyOn(proto, 'removeOnce').mockImplementation(() => {
    throw Object.assign(new Error('database or disk is full'), { errcode: 13 });
  });
  return () => spy.mockRestore();
}

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

  it("keeps a row's trace context for its replay, counts its bytes, and gives them back as it leaves", async () => {
    const dir = tempDir();
    const trace = { traceparent: `00-${'ab'.repeat(16)}-${'cd'.repeat(8)}-01`, tracestate: 'sender=1' };
    const plain = new Spool(tempDir(), 1 << 20, { maxBytesPerTenant: 1 << 19 });
    await plain.append([{ ...rec('a'), tenant: 'team' }]);
    const spool = new Spool(dir, 1 << 20, { maxBytesPerTenant: 1 << 19 });
    await spool.append([
      { ...rec('a'), tenant: 'team', trace },
      { ...rec('b'), tenant: 'team' },
    ]);
    const [a, b] = spool.peek(10);
    expect(a?.trace).toEqual(trace);
    expect(b?.trace).toBeUndefined();
    // traceparent, a newline, the tracestate: what the trace column holds.
    const traceBytes = trace.traceparent.length + 1 + trace.tracestate.length;
    expect(spool.bytes).toBe(2 * plain.bytes + traceBytes);
    plain.close();
    spool.close();
    // After a restart: the same context, the same bytes; all of them given back on removal.
    const reopened = new Spool(dir, 1 << 20, { maxBytesPerTenant: 1 << 19 });
    expect(reopened.peek(1)[0]?.trace).toEqual(trace);
    expect(reopened.bytes).toBe(spool.bytes);
    reopened.remove(reopened.peek(10));
    expect(reopened.bytes).toBe(0);
    await reopened.append([{ ...rec('c', (1 << 19) - 200), tenant: 'team' }]);
    reopened.close();
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

  describe('on a full disk', () => {
    it('moves the replay cursor past acknowledged rows it cannot delete, and renews its files once all are handed on', async () => {
      const dir = tempDir();
      const spool = new Spool(dir, 1 << 20);
      await spool.append(['a', 'b', 'c', 'd'].map((id) => rec(id)));
      const restore = diskFullForDeletes();
      try {
        spool.remove(spool.peek(2));
        expect(spool.depth).toBe(2);
        expect(spool.peek(10).map((r) => r.id)).toEqual(['c', 'd']);
        // Past the cursor, still on disk: counted against maxBytes until deleted or renewed.
        expect(spool.bytes).toBeGreaterThan(0);
        spool.remove(spool.peek(10));
        expect(spool.depth).toBe(0);
      } finally {
        restore();
      }
      // Renewed: nothing on disk counted, and new rows continue after the cursor.
      expect(spool.bytes).toBe(0);
      await spool.append([rec('e')]);
      const [row] = spool.peek(10);
      expect(row?.id).toBe('e');
      expect(row?.seq).toBeGreaterThan(4);
      spool.close();
    });

    it('passes only over the oldest rows: an acknowledged row after an unacknowledged one is replayed again', async () => {
      const spool = new Spool(tempDir(), 1 << 20);
      await spool.append(['a', 'b', 'c'].map((id) => rec(id)));
      const [a, , c] = spool.peek(3);
      const restore = diskFullForDeletes();
      try {
        spool.remove([a!, c!]);
      } finally {
        restore();
      }
      expect(spool.peek(10).map((r) => r.id)).toEqual(['b', 'c']);
      expect(spool.depth).toBe(2);
      spool.close();
    });

    it('keeps the cursor across a restart, and deletes the passed rows once it can', async () => {
      const dir = tempDir();
      const spool = new Spool(dir, 1 << 20);
      await spool.append(['a', 'b', 'c'].map((id) => rec(id)));
      const restore = diskFullForDeletes();
      try {
        spool.remove(spool.peek(2));
      } finally {
        restore();
      }
      const held = spool.bytes;
      spool.close();
      const reopened = new Spool(dir, 1 << 20);
      expect(reopened.depth).toBe(1);
      expect(reopened.peek(10).map((r) => r.id)).toEqual(['c']);
      // The disk has room now: the passed rows were deleted at the open.
      expect(reopened.bytes).toBeLessThan(held);
      reopened.close();
    });

    it('finishes a renewal a crash interrupted: leftover files are removed, not opened as half a database', async () => {
      const dir = tempDir();
      const spool = new Spool(dir, 1 << 20);
      await spool.append([rec('a')]);
      spool.close();
      const cursor = new ReplayCursor(join(dir, 'spool.cursor'));
      expect(cursor.open()).toBe(true);
      cursor.advance(1);
      cursor.beginReset();
      // What a crash leaves: the WAL gone, the database still there (or the other way round).
      rmSync(join(dir, 'spool.sqlite-wal'), { force: true });
      const reopened = new Spool(dir, 1 << 20);
      expect(reopened.unavailableReason).toBeUndefined();
      expect(reopened.depth).toBe(0);
      await reopened.append([rec('b')]);
      expect(reopened.peek(1)[0]?.seq).toBe(2);
      reopened.close();
      const after = new ReplayCursor(join(dir, 'spool.cursor'));
      after.open();
      expect(after.resetPending).toBe(false);
    });
  });

  describe('shares', () => {
    const of = (tenant: string, id: string, size: number) => ({ ...rec(id, size), tenant });

    it('refuses a namespace past its share while others still get room, and gives the share back as rows leave', async () => {
      const spool = new Spool(tempDir(), 100_000, { maxBytesPerTenant: 25_000 });
      await spool.append([of('a', 'a1', 20_000)]);
      await expect(spool.append([of('a', 'a2', 20_000)])).rejects.toMatchObject({ reason: 'tenant_full' });
      await spool.append([of('b', 'b1', 20_000)]);
      // A namespace's full share does not make the spool refuse (readiness).
      expect(spool.canAccept()).toBe(true);
      spool.remove(spool.peek(1));
      await spool.append([of('a', 'a3', 20_000)]);
      expect(spool.peek(10).map((r) => r.id)).toEqual(['b1', 'a3']);
      spool.close();
    });

    it("counts each namespace's share again after a reopen", async () => {
      const dir = tempDir();
      const spool = new Spool(dir, 100_000, { maxBytesPerTenant: 25_000 });
      await spool.append([of('a', 'a1', 20_000)]);
      spool.close();
      const reopened = new Spool(dir, 100_000, { maxBytesPerTenant: 25_000 });
      await expect(reopened.append([of('a', 'a2', 20_000)])).rejects.toMatchObject({ reason: 'tenant_full' });
      await reopened.append([of('b', 'b1', 20_000)]);
      reopened.close();
    });

    it('refuses within one commit group as well', async () => {
      const spool = new Spool(tempDir(), 100_000, { maxBytesPerTenant: 25_000 });
      const results = await Promise.allSettled([
        spool.append([of('a', 'a1', 15_000)]),
        spool.append([of('a', 'a2', 15_000)]),
        spool.append([of('b', 'b1', 15_000)]),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect(existsSync(spool.dir)).toBe(true);
      spool.close();
    });
  });
});
