/**
 * The inspector's memory store: an integration keeps its newest `keep`; a namespace stays within
 * its share by giving up its own oldest captures, never another namespace's; the whole stays
 * within maxBytes by taking from the namespace holding the most; captures older than maxAge go;
 * attempts join the request whose event they were for.
 */
import type { CapturedRequest } from '../../../../api/inspector.js';
import { MemoryInspectorStore } from '../../../../ingester/inspector/memory-store.js';

let now = 1_800_000_000_000;
let seq = 0;
const capture = (
  namespace: string,
  integration: string,
  bodyChars = 100,
  eventIds: string[] = [],
): CapturedRequest => ({
  id: `c${++seq}`,
  namespace,
  integration,
  receivedAt: new Date(now + seq).toISOString(),
  remoteAddress: '127.0.0.1',
  status: 200,
  headers: {},
  body: 'x'.repeat(bodyChars),
  bodyTruncated: false,
  bodyBytes: bodyChars,
  events: eventIds.map((id) => ({ id })),
  routing: [],
});
const ids = async (s: MemoryInspectorStore, ns: string, name: string, keep = 50) =>
  (await s.list({ namespace: ns, integration: name }, keep)).map((c) => c.id);

const stores: MemoryInspectorStore[] = [];
const store = (maxBytes: number, maxBytesPerNamespace: number, maxAgeMs = 3_600_000) => {
  const s = new MemoryInspectorStore({ maxBytes, maxBytesPerNamespace, maxAgeMs }, () => now);
  stores.push(s);
  return s;
};
afterAll(async () => Promise.all(stores.map((s) => s.close())));

it('keeps the newest `keep` requests of an integration, newest first', async () => {
  const s = store(1 << 20, 1 << 20);
  for (let i = 0; i < 5; i++) s.put(capture('a', 'one'), 3);
  expect(await ids(s, 'a', 'one')).toEqual([`c${seq}`, `c${seq - 1}`, `c${seq - 2}`]);
});

it("makes room in a namespace's share from its own oldest captures, never another's", async () => {
  const s = store(1 << 20, 8 * 1024);
  s.put(capture('victim', 'alerts'), 50);
  const victim = await ids(s, 'victim', 'alerts');
  for (let i = 0; i < 100; i++) s.put(capture('noisy', `n${i % 7}`, 1000), 50);
  expect(s.bytes('noisy')).toBeLessThanOrEqual(8 * 1024);
  expect(await ids(s, 'victim', 'alerts')).toEqual(victim);
  // The noisy namespace still has its newest ones.
  expect((await ids(s, 'noisy', 'n1')).length).toBeGreaterThan(0);
});

it('stays within maxBytes by taking from the namespace holding the most', async () => {
  const s = store(16 * 1024, 12 * 1024);
  for (let i = 0; i < 30; i++) s.put(capture('big', 'x', 1000), 50);
  for (let i = 0; i < 6; i++) s.put(capture('small', 'y', 1000), 50);
  expect(s.bytes()).toBeLessThanOrEqual(16 * 1024);
  expect((await ids(s, 'small', 'y')).length).toBe(6);
  expect(s.bytes('big')).toBeGreaterThan(0);
});

it('never keeps a capture larger than a namespace share', async () => {
  const s = store(1 << 20, 70_000);
  s.put(capture('a', 'one', 100_000), 50);
  expect(await ids(s, 'a', 'one')).toEqual([]);
  expect(s.bytes()).toBe(0);
});

it('forgets captures older than maxAge', async () => {
  const s = store(1 << 20, 1 << 20, 60_000);
  s.put(capture('a', 'one'), 50);
  now += 61_000;
  expect(await ids(s, 'a', 'one')).toEqual([]);
  s.sweep();
  expect(s.bytes()).toBe(0);
});

it('joins delivery attempts to the request and event they were for', async () => {
  const s = store(1 << 20, 1 << 20);
  const c = capture('a', 'one', 10, ['e1', 'e2']);
  s.put(c, 50);
  const at = new Date(now).toISOString();
  const where = { namespace: 'a', integration: 'one' };
  s.attempt(where, { eventId: 'e2', destination: 'pager', at, latencyMs: 5, outcome: 'retry', status: 503 });
  s.attempt(where, { eventId: 'unknown', destination: 'pager', at, latencyMs: 5, outcome: 'delivered' });
  const [read] = await s.list(where, 50);
  expect(read?.attempts).toEqual([{ event: 1, destination: 'pager', at, latencyMs: 5, outcome: 'retry', status: 503 }]);
});
