/**
 * Hostile-neighbour matrix, bulk replays of dead letters (docs/design.md §4b): the replica's bulk
 * replays are shared by every namespace. Tenant A starts a very slow bulk replay of its own letters
 * (1 letter a second over 60 letters: about a minute), the way a team does from the console; B's
 * bulk replay then starts at once and completes, while a second replay of A's is refused 429
 * naming the per-namespace limit, with Retry-After. B's events meanwhile are answered within the
 * bound and the replica stays ready.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminPost } from '../../support/admin.js';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { listLetters } from '../dead-letters/support.js';
import { progressOf, startBulk, untilEnded } from '../dead-letters/bulk-replay-support.js';
import { expectUnharmed, steadyTenant } from './support.js';

const spool = mkdtempSync(join(tmpdir(), 'intake-hn-bulk-'));
let receiver: EventReceiver | undefined;
let ing: RunningIngester | undefined;

afterAll(async () => {
  await ing?.stop('SIGKILL');
  await receiver?.close();
  rmSync(spool, { recursive: true, force: true });
});

/** `count` events of `integration`, each refused by the receiver: one delivery letter each in `namespace`. */
async function lettersOf(integration: string, namespace: string, count: number): Promise<void> {
  const res = await post(
    `${ing!.url}/events/webhook_${integration}`,
    Array.from({ length: count }, (_, i) => ({ source: `${integration}-${i}`, severity: 3 })),
    tenantAuth(integration),
  );
  expect(res.status).toBe(200);
  await waitFor(
    `${count} letters of ${namespace}`,
    async () => (await listLetters(ing!, `kind=delivery&namespace=${namespace}&limit=10000`)).count === count,
    30_000,
    100,
  );
}

it("A's slow bulk replay holds only A's slot: B's starts at once and completes, A's second is refused", async () => {
  receiver = await startEventReceiver();
  receiver.refuse = () => true;
  ing = await startIngester((c) => {
    c.spool = { path: spool };
    c.destinations = [{ name: 'tickets', default: true, http: { url: receiver!.url, batchSize: 50 } }];
    (c.routes as unknown[]).push(tenantRoute('hn-bulk-a', 'team-a'), tenantRoute('hn-bulk-b', 'team-b'));
  });
  await lettersOf('hn-bulk-a', 'team-a', 60);
  await lettersOf('hn-bulk-b', 'team-b', 20);
  receiver.refuse = () => false;

  // A: the slowest pace a team may choose, over all its letters.
  const slow = await startBulk(ing, { namespace: 'team-a', rate: 1 });
  expect(slow.status).toBe(202);
  expect(slow.body).toMatchObject({ state: 'running', matched: 60, rate: 1 });

  const steady = steadyTenant({
    url: `${ing.url}/events/webhook_hn-bulk-b`,
    headers: { 'content-type': 'application/json', ...tenantAuth('hn-bulk-b') },
    body: (seq) => ({ body: JSON.stringify({ source: `b-steady-${seq}`, severity: 2 }) }),
    perSecond: 10,
    durationMs: 3_000,
    adminUrl: ing.adminUrl,
  });

  // B: starts at once beside A's, and completes long before A's could.
  const b = await startBulk(ing, { namespace: 'team-b' });
  expect({ status: b.status, body: b.body.code ?? b.body.message }).toEqual({
    status: 202,
    body: undefined,
  });
  const bEnded = await untilEnded(ing, String(b.body.id), 20_000);
  expect(bEnded).toMatchObject({ state: 'done', matched: 20, replayed: 20, failed: 0, remaining: 0 });

  // A's second: refused at once, naming the per-namespace limit, with Retry-After.
  const again = await startBulk(ing, { namespace: 'team-a', rate: 1 });
  expect(again.status).toBe(429);
  expect(Number(again.retryAfter)).toBeGreaterThan(0);
  expect(again.body.code).toBe('BULK_REPLAY_RUNNING');
  expect(again.body.limit).toEqual({ scope: 'namespace', max: 1 });
  expect(String(again.body.message)).toContain('one runs per namespace');
  expect(String(again.body.message)).toContain('team-a');

  expectUnharmed(await steady, { p99BoundMs: 1500 });
  // A's is still going at its pace: most of its letters still wait.
  const a = await progressOf(ing, String(slow.body.id));
  expect(a.state).toBe('running');
  expect(a.remaining).toBeGreaterThan(30);
  // The platform (no namespace in the filter) is not locked out by the teams' replays.
  const platform = await startBulk(ing, { destination: 'tickets', rate: 1 });
  expect(platform.status).toBe(202);
  for (const id of [String(slow.body.id), String(platform.body.id)]) {
    const res = await fetch(`${ing.adminUrl}/deadletter/replays/${id}/cancel`, adminPost());
    expect(res.status).toBe(200);
  }
}, 60_000);
