/**
 * The bus's wait list for a namespace at its share of a destination's in-flight events: kept
 * messages are submitted in order once their namespace has room, told to be in progress meanwhile,
 * never handed back while they wait; other namespaces pass; bounded in bytes; stopping hands back.
 */
import type { Delivery } from '../../../../../ingester/destinations/dispatcher.js';
import {
  ShareWaitList,
  type ShareRoom,
  type WaitingMessage,
} from '../../../../../ingester/destinations/bus/share-wait-list.js';

class FakeRoom implements ShareRoom {
  readonly rooms = new Map<string, number>();
  readonly submitted: string[] = [];
  private settledWaiters: Array<() => void> = [];
  roomOf(namespace: string): number {
    return this.rooms.get(namespace) ?? Infinity;
  }
  /** Events the dispatcher takes now, per namespace (none set: room for all). */
  readonly free = new Map<string, number>();
  hasRoom(events: number, namespace: string): boolean {
    return (this.free.get(namespace) ?? Infinity) >= events;
  }
  submit(d: Delivery): void {
    this.submitted.push((d as unknown as { id: string }).id);
    const left = this.rooms.get(d.namespace ?? '');
    if (left !== undefined) this.rooms.set(d.namespace ?? '', left - 1);
  }
  untilSettled(): Promise<void> {
    return new Promise((resolve) => this.settledWaiters.push(resolve));
  }
  /** An event settled: `namespace` has `room` now. */
  settle(namespace: string, room: number): void {
    this.rooms.set(namespace, room);
    for (const w of this.settledWaiters.splice(0)) w();
  }
}

const held: Array<{ id: string; ms: number }> = [];
const delivery = (id: string, namespace: string): Delivery =>
  ({
    id,
    namespace,
    hold: async (ms: number) => void held.push({ id, ms }),
  }) as unknown as Delivery;

const message = (ids: string[], namespace: string, bytes = 10, working = (): void => undefined): WaitingMessage => ({
  deliveries: ids.map((id) => delivery(id, namespace)),
  bytes,
  working,
});

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

beforeEach(() => void held.splice(0));

it('submits at once what has room, and keeps what its namespace has none for, in order, until it has', async () => {
  const room = new FakeRoom();
  const list = new ShareWaitList(room, 1000, 60_000);
  room.rooms.set('a', 0);
  expect(list.keep(message(['b-1'], 'b'))).toBe(false);
  expect(list.keep(message(['a-1', 'a-2'], 'a'))).toBe(true);
  expect(list.keep(message(['a-3'], 'a'))).toBe(true);
  // B keeps passing while A's wait.
  expect(list.keep(message(['b-2'], 'b'))).toBe(false);
  expect(list.size).toBe(2);
  await tick();
  expect(room.submitted).toEqual([]);
  room.settle('a', 1);
  await tick();
  // A whole message while there is room for one of its events: then none is left for the next.
  expect(room.submitted).toEqual(['a-1', 'a-2']);
  room.settle('a', Infinity);
  await tick();
  expect(room.submitted).toEqual(['a-1', 'a-2', 'a-3']);
  expect(list.size).toBe(0);
  // A message of A that arrives with room and none kept is submitted at once.
  expect(list.keep(message(['a-4'], 'a'))).toBe(false);
  expect(held).toEqual([]);
});

it('keeps a message the dispatcher has no room for, though under its share, so that the consumer reads on', async () => {
  const room = new FakeRoom();
  const list = new ShareWaitList(room, 1000, 60_000);
  // A alone took every slot: under its share (alone: no share), but the dispatcher is full for it.
  room.free.set('a', 0);
  expect(list.keep(message(['a-1'], 'a'))).toBe(true);
  // B, behind it in the stream, has room (its share on top of the bound) and passes.
  room.free.set('b', 2);
  expect(list.keep(message(['b-1'], 'b'))).toBe(false);
  await tick();
  expect(room.submitted).toEqual([]);
  // A's slot settles: its kept message goes.
  room.free.set('a', 1);
  room.settle('a', Infinity);
  await tick();
  expect(room.submitted).toEqual(['a-1']);
  expect(list.size).toBe(0);
});

it('keeps a newer message of a namespace behind its kept ones even when it has room', async () => {
  const room = new FakeRoom();
  const list = new ShareWaitList(room, 1000, 60_000);
  room.rooms.set('a', 0);
  expect(list.keep(message(['a-1'], 'a'))).toBe(true);
  room.rooms.set('a', 5);
  expect(list.keep(message(['a-2'], 'a'))).toBe(true);
  room.settle('a', 5);
  await tick();
  expect(room.submitted).toEqual(['a-1', 'a-2']);
});

it('tells the server the kept messages are in progress while they wait', async () => {
  const room = new FakeRoom();
  let clock = 0;
  const list = new ShareWaitList(room, 1000, 100, () => clock);
  room.rooms.set('a', 0);
  let working = 0;
  list.keep(message(['a-1'], 'a', 10, () => working++));
  list.keep(message(['a-2'], 'a', 10, () => working++));
  await tick();
  expect(working).toBe(0);
  clock = 150;
  room.settle('a', 0);
  await tick();
  expect(working).toBe(2);
  // A connection gone: working() throws, and the list carries on.
  list.keep(
    message(['a-3'], 'a', 10, () => {
      throw new Error('closed');
    }),
  );
  clock = 300;
  room.settle('a', 0);
  await tick();
  expect(working).toBe(4);
  expect(held).toEqual([]);
  list.stop('test');
});

it('is bounded in bytes: a message that does not fit is submitted (and handed back for the share as before)', () => {
  const room = new FakeRoom();
  const list = new ShareWaitList(room, 100, 60_000);
  room.rooms.set('a', 0);
  expect(list.keep(message(['a-1'], 'a', 60))).toBe(true);
  expect(list.keep(message(['a-2'], 'a', 60))).toBe(false);
  expect(list.keep(message(['a-3'], 'a', 40))).toBe(true);
  expect(list.size).toBe(2);
  list.stop('test');
});

it("shares its bytes between the namespaces waiting: a full list gives another namespace room from the largest holder's newest", async () => {
  const room = new FakeRoom();
  const list = new ShareWaitList(room, 100, 60_000);
  room.rooms.set('a', 0);
  room.rooms.set('b', 0);
  expect(list.keep(message(['a-1'], 'a', 40))).toBe(true);
  expect(list.keep(message(['a-2'], 'a', 40))).toBe(true);
  // Full of A: B's message takes A's newest's room, which is submitted (and handed back as before).
  expect(list.keep(message(['b-1'], 'b', 30))).toBe(true);
  expect(room.submitted).toEqual(['a-2']);
  expect(list.size).toBe(2);
  // A holds no more than B would: neither takes from the other now.
  expect(list.keep(message(['a-3'], 'a', 40))).toBe(false);
  expect(list.keep(message(['b-2'], 'b', 40))).toBe(false);
  // In order still: B's kept message, then A's, as each gets room.
  room.settle('b', 1);
  await tick();
  expect(room.submitted).toEqual(['a-2', 'b-1']);
  room.settle('a', 1);
  await tick();
  expect(room.submitted).toEqual(['a-2', 'b-1', 'a-1']);
  expect(list.size).toBe(0);
  expect(held).toEqual([]);
});

it('keeps one message larger than the bound when it keeps nothing else', () => {
  const room = new FakeRoom();
  const list = new ShareWaitList(room, 100, 60_000);
  room.rooms.set('a', 0);
  expect(list.keep(message(['a-1'], 'a', 500))).toBe(true);
  list.stop('test');
});

it('hands every kept message back unsent when stopped, and keeps nothing after', async () => {
  const room = new FakeRoom();
  const list = new ShareWaitList(room, 1000, 60_000);
  room.rooms.set('a', 0);
  list.keep(message(['a-1', 'a-2'], 'a'));
  list.keep(message(['a-3'], 'a'));
  list.stop('stopped');
  expect(held).toEqual([
    { id: 'a-1', ms: 0 },
    { id: 'a-2', ms: 0 },
    { id: 'a-3', ms: 0 },
  ]);
  expect(list.size).toBe(0);
  expect(list.keep(message(['a-4'], 'a'))).toBe(false);
  room.settle('a', Infinity);
  await tick();
  expect(room.submitted).toEqual([]);
});

it('hands back what it can when stopped on a closed connection, without throwing', () => {
  const room = new FakeRoom();
  const list = new ShareWaitList(room, 1000, 60_000);
  room.rooms.set('a', 0);
  const closed = {
    id: 'a-1',
    namespace: 'a',
    hold: () => {
      throw new Error('closed');
    },
  } as unknown as Delivery;
  list.keep({ deliveries: [closed], bytes: 10, working: () => undefined });
  list.keep(message(['a-2'], 'a'));
  expect(() => list.stop('new connection')).not.toThrow();
  expect(held).toEqual([{ id: 'a-2', ms: 0 }]);
});

it('reports how many messages wait, as they are kept, submitted, given room to others and handed back', async () => {
  const room = new FakeRoom();
  const sizes: number[] = [];
  const list = new ShareWaitList(room, 100, 60_000, Date.now, (n) => sizes.push(n));
  expect(sizes).toEqual([0]);
  room.rooms.set('a', 0);
  room.rooms.set('b', 0);
  list.keep(message(['a-1'], 'a', 40));
  list.keep(message(['a-2'], 'a', 40));
  // Full: B takes A's newest (submitted, so it no longer waits here).
  list.keep(message(['b-1'], 'b', 40));
  expect(sizes).toEqual([0, 1, 2, 1, 2]);
  room.settle('a', 1);
  await tick();
  expect(sizes.at(-1)).toBe(1);
  list.stop('test');
  expect(sizes.at(-1)).toBe(0);
  expect(list.size).toBe(0);
});
