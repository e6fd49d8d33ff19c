import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LetterTooLarge, type DroppedLetter, type NewDeadLetter } from '../../../../ingester/dead-letters/model.js';
import { SqliteDeadLetters } from '../../../../ingester/dead-letters/sqlite-store.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const file = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'intake-dl-unit-'));
  dirs.push(d);
  return join(d, 'deadletters.sqlite');
};
const mapping = (namespace: string, n: number, pad = 1000): NewDeadLetter => ({
  kind: 'mapping',
  namespace,
  integration: 'am',
  reason: `bad ${n}`,
  payload: { n, pad: 'x'.repeat(pad) },
});
const ns = (letters: Array<{ namespace: string; payload?: unknown; kind: string }>): string[] =>
  letters.map((l) => `${l.namespace}:${(l as { payload: { n: number } }).payload.n}`);

describe('SqliteDeadLetters', () => {
  it('keeps letters across a restart, with their ids', async () => {
    const path = file();
    const first = new SqliteDeadLetters(path, { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });
    const id = await first.put(mapping('a', 1));
    await first.close();
    const second = new SqliteDeadLetters(path, { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });
    expect(await second.list({ limit: 10 })).toEqual([
      expect.objectContaining({ id, kind: 'mapping', namespace: 'a', payload: { n: 1, pad: 'x'.repeat(1000) } }),
    ]);
    expect(second.usage().namespaces.get('a')).toBeGreaterThan(1000);
    await second.close();
  });

  it('answers a put once its WAL is flushed off the loop: a close right after waits for the flush, and the letter is there after a restart', async () => {
    const path = file();
    const first = new SqliteDeadLetters(path, { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });
    const put = first.put(mapping('a', 1));
    await first.close();
    const id = await put;
    const second = new SqliteDeadLetters(path, { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });
    expect((await second.list({ limit: 10 })).map((l) => l.id)).toEqual([id]);
    await second.close();
  });

  it('refuses a put whose WAL cannot be flushed (its file is gone), saying so', async () => {
    const path = file();
    const store = new SqliteDeadLetters(path, { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });
    rmSync(`${path}-wal`, { force: true });
    await expect(store.put(mapping('a', 1))).rejects.toThrow(/writing the dead letter failed: .*ENOENT/);
    await store.close();
  });

  it("drops a flooding namespace's own oldest letters, never another namespace's", async () => {
    const dropped: DroppedLetter[] = [];
    const store = new SqliteDeadLetters(file(), { maxBytes: 20_000, maxBytesPerNamespace: 6000 }, (d) =>
      dropped.push(...d),
    );
    await store.put(mapping('quiet', 0));
    for (let n = 0; n < 30; n++) await store.put(mapping('noisy', n));
    const kept = await store.list({ limit: 100 });
    expect(ns(kept.filter((l) => l.namespace === 'quiet'))).toEqual(['quiet:0']);
    const noisy = ns(kept.filter((l) => l.namespace === 'noisy'));
    expect(noisy.at(-1)).toBe('noisy:29');
    expect(store.usage().namespaces.get('noisy')).toBeLessThanOrEqual(6000);
    expect(dropped.length).toBe(30 - noisy.length);
    expect(new Set(dropped.map((d) => `${d.namespace}/${d.reason}`))).toEqual(new Set(['noisy/namespace_share']));
    await store.close();
  });

  it('makes room in the largest namespace when the whole store is full', async () => {
    const dropped: DroppedLetter[] = [];
    const store = new SqliteDeadLetters(file(), { maxBytes: 8000, maxBytesPerNamespace: 6000 }, (d) =>
      dropped.push(...d),
    );
    for (let n = 0; n < 5; n++) await store.put(mapping('big', n));
    await store.put(mapping('small', 0));
    await store.put(mapping('small', 1));
    const kept = await store.list({ limit: 100 });
    expect(ns(kept.filter((l) => l.namespace === 'small'))).toEqual(['small:0', 'small:1']);
    expect(store.usage().bytes).toBeLessThanOrEqual(8000);
    expect(dropped.every((d) => d.namespace === 'big' && d.reason === 'store_full')).toBe(true);
    await store.close();
  });

  it('refuses a letter larger than a share, and counts it', async () => {
    const dropped: DroppedLetter[] = [];
    const store = new SqliteDeadLetters(file(), { maxBytes: 100_000, maxBytesPerNamespace: 5000 }, (d) =>
      dropped.push(...d),
    );
    await expect(store.put(mapping('a', 1, 6000))).rejects.toBeInstanceOf(LetterTooLarge);
    expect(dropped).toEqual([{ kind: 'mapping', namespace: 'a', reason: 'too_large' }]);
    await store.close();
  });

  it('lets one replay claim a letter at a time, until released or the lease ends', async () => {
    const store = new SqliteDeadLetters(file(), { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });
    await store.put(mapping('a', 1));
    const [letter] = await store.list({ limit: 1 });
    if (!letter) throw new Error('not kept');
    expect(await store.claim(letter, 60_000)).toMatchObject({ id: letter.id });
    expect(await store.claim(letter, 60_000)).toBeUndefined();
    await store.release(letter);
    expect(await store.claim(letter, 1)).toMatchObject({ id: letter.id });
    await new Promise((r) => setTimeout(r, 5));
    expect(await store.claim(letter, 60_000)).toMatchObject({ id: letter.id });
    await store.remove(letter);
    expect(await store.claim(letter, 60_000)).toBeUndefined();
    expect(store.usage().bytes).toBe(0);
    await store.close();
  });

  it('selects by kind, namespace, integration, destination and id', async () => {
    const store = new SqliteDeadLetters(file(), { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });
    const m = await store.put(mapping('a', 1));
    const event = { id: 'e1', namespace: 'b', integration: 'x' } as never;
    const d = await store.put({
      kind: 'delivery',
      namespace: 'b',
      integration: 'x',
      destination: 'tickets',
      reason: 'http_400',
      error: 'no',
      attempts: 1,
      event,
    });
    expect((await store.list({ limit: 10, kind: 'mapping' })).map((l) => l.id)).toEqual([m]);
    expect((await store.list({ limit: 10, destination: 'tickets' })).map((l) => l.id)).toEqual([d]);
    expect((await store.list({ limit: 10, namespace: 'b', integration: 'x' })).map((l) => l.id)).toEqual([d]);
    expect((await store.list({ limit: 10, ids: [m, d] })).map((l) => l.id)).toEqual([m, d]);
    await store.close();
  });

  it("keeps one letter per id: a newer one with the same id takes the older one's place (and a new seq)", async () => {
    const path = file();
    const store = new SqliteDeadLetters(path, { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });
    await store.put({ ...mapping('a', 1), id: 'same' });
    const [first] = await store.list({ limit: 10 });
    await store.put({ ...mapping('a', 2), id: 'same' });
    const listed = await store.list({ limit: 10 });
    expect(ns(listed)).toEqual(['a:2']);
    expect(listed[0]?.seq).toBeGreaterThan(first!.seq);
    // A replay holding the older one removes nothing.
    await store.remove(first!);
    expect(ns(await store.list({ limit: 10 }))).toEqual(['a:2']);
    expect(store.usage().namespaces.get('a')).toBe(listed[0]?.bytes);
    await store.close();
    const reopened = new SqliteDeadLetters(path, { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });
    expect(ns(await reopened.list({ limit: 10 }))).toEqual(['a:2']);
    await reopened.close();
  });
});
