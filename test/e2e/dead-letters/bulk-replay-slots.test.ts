/**
 * The bulk replays' other limits through the built ingester (the per-namespace one is the
 * hostile-neighbour row's): with `deadLetter.bulkReplay.maxRunning: 1` a second namespace's start
 * is refused naming the replica's total (and not the running one), and with `allNamespaces:
 * exclusive` the platform's replay of all namespaces waits for the namespaces' (the admin cancels
 * them) and then runs alone; a rate above `maxRate` is refused 400.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminPost } from '../../support/admin.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { startIngester, type RunningIngester } from '../support/ingester.js';
import { makeLetters, startBulk } from './bulk-replay-support.js';

let receiver: EventReceiver | undefined;
let ing: RunningIngester | undefined;
const spool = mkdtempSync(join(tmpdir(), 'intake-e2e-bulk-slots-'));

afterAll(async () => {
  await ing?.stop('SIGKILL');
  await receiver?.close();
  rmSync(spool, { recursive: true, force: true });
});

it("refuses past the replica's total and beside an exclusive replay of all namespaces, naming each limit", async () => {
  receiver = await startEventReceiver();
  ing = await startIngester((c) => {
    c.destinations = [{ name: 'tickets', default: true, http: { url: receiver!.url, batchSize: 10 } }];
    c.spool = { path: spool };
    c.deadLetter = {
      bulkReplay: { maxRunning: 1, maxRate: 50, allNamespaces: 'exclusive' },
    };
  });
  // The demo integration's letters are namespace default's.
  await makeLetters(ing, receiver, 10, 'slots');

  const tooFast = await startBulk(ing, { namespace: 'default', rate: 51 });
  expect(tooFast.status).toBe(400);
  expect(String(tooFast.body.message)).toContain('deadLetter.bulkReplay.maxRate');

  const slow = await startBulk(ing, { namespace: 'default', rate: 0.5 });
  expect(slow.status).toBe(202);
  const other = await startBulk(ing, { namespace: 'team-b' });
  expect(other).toMatchObject({ status: 429, body: { code: 'BULK_REPLAY_REPLICA_FULL' } });
  expect(other.body.limit).toEqual({ scope: 'replica', setting: 'deadLetter.bulkReplay.maxRunning', max: 1 });
  expect(String(other.body.message)).not.toContain(String(slow.body.id));
  expect(Number(other.retryAfter)).toBeGreaterThan(0);

  const platform = await startBulk(ing, {});
  expect(platform).toMatchObject({
    status: 429,
    body: { code: 'BULK_REPLAY_EXCLUSIVE', limit: { scope: 'exclusive' } },
  });
  // The admin cancels the namespace's; the platform's then starts, and runs alone.
  const cancel = await fetch(`${ing.adminUrl}/deadletter/replays/${String(slow.body.id)}/cancel`, adminPost());
  expect(cancel.status).toBe(200);
  const alone = await startBulk(ing, { rate: 0.5 });
  expect(alone.status).toBe(202);
  expect(alone.body.rate).toBe(0.5);
  const beside = await startBulk(ing, { namespace: 'default' });
  expect(beside).toMatchObject({ status: 429, body: { code: 'BULK_REPLAY_EXCLUSIVE' } });
  expect(String(beside.body.message)).not.toContain(String(alone.body.id));
  await fetch(`${ing.adminUrl}/deadletter/replays/${String(alone.body.id)}/cancel`, adminPost());
}, 60_000);
