/**
 * The bulk-replay flow both stores go through (bulk-replay.test.ts standalone with the outbox,
 * bus-bulk-replay.test.ts with a real nats-server): delivery letters made by a receiver that
 * refuses, filters that select none or all, a bulk replay cancelled half-way, and the check that
 * every event is either still a dead letter or received, never both, never neither.
 */
import { adminPost } from '../../support/admin.js';
import { waitFor } from '../../support/waiting.js';
import type { EventReceiver } from '../support/event-receiver.js';
import { basic, DEMO, post, type RunningIngester } from '../support/ingester.js';
import { listLetters } from './support.js';

export interface Progress {
  id: string;
  state: string;
  matched: number;
  replayed: number;
  failed: number;
  skipped: number;
  remaining: number;
  filter: Record<string, unknown>;
}

export async function startBulk(
  ing: RunningIngester,
  body: Record<string, unknown>,
): Promise<{ status: number; retryAfter: string | null; body: Record<string, unknown> }> {
  const res = await fetch(`${ing.adminUrl}/deadletter/replays`, adminPost(body));
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    body: (await res.json()) as Record<string, unknown>,
  };
}

export async function progressOf(ing: RunningIngester, id: string): Promise<Progress> {
  const res = await fetch(`${ing.adminUrl}/deadletter/replays/${id}`);
  if (!res.ok) throw new Error(`GET /deadletter/replays/${id}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Progress;
}

export const untilEnded = (ing: RunningIngester, id: string, timeoutMs = 60_000): Promise<Progress> =>
  waitFor(
    `bulk replay ${id} ended`,
    async () => {
      const p = await progressOf(ing, id);
      return p.state === 'running' ? undefined : p;
    },
    timeoutMs,
    100,
  ) as Promise<Progress>;

/** `count` events through the demo integration, each refused by the receiver: one letter each. Resolves with their ids. */
export async function makeLetters(
  ing: RunningIngester,
  receiver: EventReceiver,
  count: number,
  tag: string,
): Promise<Set<string>> {
  receiver.refuse = () => true;
  const res = await post(
    `${ing.url}/events/webhook_demo`,
    Array.from({ length: count }, (_, i) => ({ source: `${tag}-${i}`, severity: 3 })),
    { authorization: basic(DEMO.user, DEMO.password) },
  );
  if (res.status !== 200) throw new Error(`sending: ${res.status} ${res.text}`);
  let ids = new Set<string>();
  await waitFor(
    `${count} delivery letters kept`,
    async () => {
      const listed = await listLetters(ing, 'kind=delivery&limit=10000');
      ids = new Set(
        listed.entries.filter((e) => String(e.event?.source).startsWith(`${tag}-`)).map((e) => String(e.event?.id)),
      );
      return ids.size === count;
    },
    60_000,
    200,
  );
  return ids;
}

/**
 * Waits until what was handed on was received, each event is either listed or received, and
 * nothing moves any more (with the bus a replay cut by a crash is finished from its claim some
 * seconds later); then returns each event's fate: still listed, received (how often), or neither.
 */
export async function fates(
  ing: RunningIngester,
  receiver: EventReceiver,
  ids: Set<string>,
  expectReceived: number,
): Promise<{ listed: string[]; both: string[]; neither: string[]; twice: string[] }> {
  const fate = async () => {
    const listed = (await listLetters(ing, 'kind=delivery&limit=10000')).entries
      .map((e) => String(e.event?.id))
      .filter((id) => ids.has(id));
    const listedSet = new Set(listed);
    return {
      listed,
      both: [...ids].filter((id) => listedSet.has(id) && receiver.accepted.has(id)),
      neither: [...ids].filter((id) => !listedSet.has(id) && !receiver.accepted.has(id)),
      twice: [...ids].filter((id) => (receiver.accepted.get(id) ?? 0) > 1),
    };
  };
  await waitFor(
    `${expectReceived} events received, each event listed or received, and the receiver quiet`,
    async () => {
      const f = await fate();
      const received = [...ids].filter((id) => receiver.accepted.has(id)).length;
      const quiet = Date.now() - (receiver.requests.at(-1)?.atMs ?? 0) > 1000;
      return quiet && received >= expectReceived && f.both.length === 0 && f.neither.length === 0;
    },
    60_000,
    250,
  ).catch(() => undefined);
  return fate();
}

/** The filters select through the real process: none for another integration or time, all for theirs. */
export async function checkFilters(ing: RunningIngester, count: number): Promise<void> {
  const none = [
    { integration: 'not-this-one' },
    { destination: 'elsewhere' },
    { until: '1h' }, // kept before an hour ago
    { since: new Date(Date.now() + 60_000).toISOString() },
    { reason: 'http_5*' },
    { reason: 'http_40' }, // exact: not a prefix without *
  ];
  for (const filter of none) {
    const started = await startBulk(ing, filter);
    if (started.status !== 202) throw new Error(`${JSON.stringify(filter)}: ${started.status}`);
    const ended = await untilEnded(ing, String(started.body.id));
    expect({ filter, matched: ended.matched, replayed: ended.replayed, state: ended.state }).toEqual({
      filter,
      matched: 0,
      replayed: 0,
      state: 'done',
    });
  }
  // Refused: a field that is no filter, an unreadable time, a range the wrong way round.
  for (const bad of [{ limit: 5 }, { since: 'yesterday' }, { since: '1h', until: '2h' }, { rate: 0 }, { kinds: 'x' }]) {
    const refused = await startBulk(ing, bad);
    expect({ bad, status: refused.status }).toEqual({ bad, status: 400 });
  }
  // All of them, paced so it is still running when asked again: a second start is refused with Retry-After.
  const all = await startBulk(ing, {
    integration: 'demo',
    destination: 'tickets',
    reason: 'http_4*',
    since: '1h',
    kind: 'delivery',
    rate: 1,
  });
  expect(all.status).toBe(202);
  expect(all.body.matched).toBe(count);
  const second = await startBulk(ing, {});
  expect(second.status).toBe(429);
  expect(Number(second.retryAfter)).toBeGreaterThan(0);
  expect(second.body.code).toBe('BULK_REPLAY_RUNNING');
  const cancelled = (await (
    await fetch(`${ing.adminUrl}/deadletter/replays/${String(all.body.id)}/cancel`, adminPost())
  ).json()) as Progress;
  expect(cancelled.state).toBe('cancelled');
  expect(cancelled.replayed + cancelled.failed + cancelled.skipped + cancelled.remaining).toBe(count);
  // What it replayed meanwhile is refused again and kept again: wait for it, so the next step starts from `count`.
  await waitFor(
    'the letters replayed while the receiver refuses kept again',
    async () => (await listLetters(ing, 'kind=delivery&destination=tickets&limit=10000')).count === count,
    30_000,
    100,
  );
}

/**
 * A paced bulk replay cancelled once it replayed a few: the rest stay dead letters, those
 * replayed are received once, none both, none lost; a second bulk replay takes the rest.
 */
export async function cancelHalfWay(ing: RunningIngester, receiver: EventReceiver, ids: Set<string>): Promise<void> {
  const before = new Set(receiver.accepted.keys());
  receiver.refuse = () => false;
  const started = await startBulk(ing, { destination: 'tickets', reason: 'http_400', rate: 10 });
  expect(started.status).toBe(202);
  const id = String(started.body.id);
  const matched = Number(started.body.matched);
  expect(matched).toBeGreaterThanOrEqual(ids.size);
  await waitFor('a few replayed', async () => (await progressOf(ing, id)).replayed >= 5, 30_000, 50);
  const res = await fetch(`${ing.adminUrl}/deadletter/replays/${id}/cancel`, adminPost());
  expect(res.status).toBe(200);
  const cancelled = (await res.json()) as Progress;
  expect(cancelled.state).toBe('cancelled');
  expect(cancelled.failed).toBe(0);
  expect(cancelled.remaining).toBeGreaterThan(0);
  expect(cancelled.replayed + cancelled.skipped + cancelled.remaining).toBe(matched);
  // It stays cancelled: nothing more is replayed after the answer.
  await new Promise((r) => setTimeout(r, 1500));
  expect((await progressOf(ing, id)).replayed).toBe(cancelled.replayed);
  const half = await fates(ing, receiver, ids, before.size + cancelled.replayed);
  expect(half.both).toEqual([]);
  expect(half.neither).toEqual([]);
  expect(half.twice).toEqual([]);
  expect(half.listed.length).toBe(cancelled.remaining);

  // The rest, unpaced: every event received once, no letter left.
  const rest = await startBulk(ing, { destination: 'tickets' });
  expect(rest.status).toBe(202);
  expect(rest.body.matched).toBe(cancelled.remaining);
  const ended = await untilEnded(ing, String(rest.body.id));
  expect(ended).toMatchObject({ state: 'done', replayed: cancelled.remaining, failed: 0, remaining: 0 });
  const all = await fates(ing, receiver, ids, ids.size);
  expect(all).toEqual({ listed: [], both: [], neither: [], twice: [] });
  // Progress of both is listed, newest first.
  const listed = (await (await fetch(`${ing.adminUrl}/deadletter/replays`)).json()) as { replays: Progress[] };
  expect(listed.replays.slice(0, 2).map((p) => p.id)).toEqual([String(rest.body.id), id]);
}
