import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileDeadLetter } from '../../../../ingester/mapping/dead-letter.js';

const path = () => join(mkdtempSync(join(tmpdir(), 'intake-dl-')), 'dead.jsonl');
const item = (n: number, integration = 'am') => ({ integration, namespace: 'ns', reason: `bad ${n}`, payload: { n, pad: 'x'.repeat(200) } });

describe('FileDeadLetter', () => {
  it('keeps payloads across a restart', async () => {
    const file = path();
    const store = new FileDeadLetter(file, 1 << 20);
    const id = await store.put(item(1));
    await store.close();
    const reopened = new FileDeadLetter(file, 1 << 20);
    expect(await reopened.list()).toEqual([expect.objectContaining({ id, integration: 'am', payload: item(1).payload })]);
  });

  it('drops the oldest past maxBytes and reports them', async () => {
    const dropped: string[] = [];
    const store = new FileDeadLetter(path(), 1500, { onDropped: (d) => dropped.push(...d.map((e) => e.integration)) });
    for (let n = 0; n < 10; n++) await store.put(item(n, `i${n}`));
    const kept = await store.list();
    expect(store.bytes).toBeLessThanOrEqual(1500);
    expect(kept.map((e) => (e.payload as { n: number }).n)).toEqual([...Array(10).keys()].slice(10 - kept.length));
    expect(dropped).toEqual([...Array(10 - kept.length).keys()].map((n) => `i${n}`));
  });

  it('refuses a payload larger than the bound', async () => {
    await expect(new FileDeadLetter(path(), 100).put(item(1))).rejects.toThrow(/larger than the dead letter bound/);
  });

  it('cuts a line torn by a crash before appending', async () => {
    const file = path();
    const first = new FileDeadLetter(file, 1 << 20);
    await first.put(item(1));
    await first.close();
    appendFileSync(file, '{"id":"torn","integr');
    const store = new FileDeadLetter(file, 1 << 20);
    await store.put(item(2));
    expect((await store.list()).map((e) => (e.payload as { n: number }).n)).toEqual([1, 2]);
    expect(readFileSync(file, 'utf8')).not.toContain('torn');
  });

  it('removes replayed entries and filters by integration', async () => {
    const store = new FileDeadLetter(path(), 1 << 20);
    const a = await store.put(item(1, 'a'));
    await store.put(item(2, 'b'));
    expect((await store.list({ integration: 'b' })).map((e) => e.integration)).toEqual(['b']);
    expect(await store.remove(new Set([a]))).toBe(1);
    expect((await store.list()).map((e) => e.integration)).toEqual(['b']);
  });
});
