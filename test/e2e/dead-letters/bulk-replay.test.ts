/**
 * Bulk replay of dead letters standalone (letters in deadletters.sqlite, hand-off to the outbox),
 * through the built ingester: the filters select through the real process, a bulk replay runs in
 * the background with progress, a second one is refused while it runs, a cancel half-way leaves
 * every event either a dead letter or received (never both, never neither), and so does kill -9
 * of the process half-way (the next start settles the letter it had in hand).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { startIngester, type RunningIngester } from '../support/ingester.js';
import { cancelHalfWay, checkFilters, fates, makeLetters, progressOf, startBulk } from './bulk-replay-support.js';
import { cli, listLetters } from './support.js';

jest.setTimeout(240_000);

let receiver: EventReceiver;
let ing: RunningIngester | undefined;
const spool = mkdtempSync(join(tmpdir(), 'intake-e2e-bulk-replay-'));

const start = (): Promise<RunningIngester> =>
  startIngester((c) => {
    c.destinations = [{ name: 'tickets', default: true, http: { url: receiver.url, batchSize: 10 } }];
    c.spool = { path: spool };
  });

beforeAll(async () => {
  receiver = await startEventReceiver();
  ing = await start();
}, 60_000);

afterAll(async () => {
  await ing?.stop('SIGKILL');
  await receiver?.close();
  rmSync(spool, { recursive: true, force: true });
});

it('filters, refuses a second bulk replay, and a cancel half-way leaves each event a dead letter or received', async () => {
  const ids = await makeLetters(ing!, receiver, 40, 'cancel');
  expect(ids.size).toBe(40);
  await checkFilters(ing!, ids.size);
  await cancelHalfWay(ing!, receiver, ids);
});

it('kill -9 half-way: after the restart each event is a dead letter or received, never both, never neither', async () => {
  const ids = await makeLetters(ing!, receiver, 40, 'killed');
  receiver.refuse = () => false;
  const before = receiver.accepted.size;
  const started = await startBulk(ing!, { destination: 'tickets', rate: 10 });
  expect(started.status).toBe(202);
  const running = ing!;
  await waitFor(
    'a few replayed',
    async () => (await progressOf(running, String(started.body.id))).replayed >= 5,
    30_000,
    20,
  );
  await ing!.stop('SIGKILL');
  ing = await start();
  const after = await fates(ing, receiver, ids, 5);
  expect(after.both).toEqual([]);
  expect(after.neither).toEqual([]);
  expect(after.twice).toEqual([]);
  expect(after.listed.length).toBeGreaterThan(0);
  expect(receiver.accepted.size - before + after.listed.length).toBe(ids.size);
  // The bulk replays were this process's: the new one has none.
  expect(
    ((await (await fetch(`${ing.adminUrl}/deadletter/replays`)).json()) as { replays: unknown[] }).replays,
  ).toEqual([]);

  // From the CLI: start, follow to its end, see it listed.
  const { stdout } = await cli([
    'deadletter',
    'bulk-replay',
    '--admin-url',
    ing.adminUrl,
    '--destination',
    'tickets',
    '--since',
    '1h',
    '--wait',
    '-o',
    'json',
  ]);
  const ended = JSON.parse(stdout) as { state: string; replayed: number; remaining: number };
  expect(ended).toMatchObject({ state: 'done', replayed: after.listed.length, remaining: 0 });
  expect((await fates(ing, receiver, ids, ids.size)).listed).toEqual([]);
  const table = (await cli(['deadletter', 'replays', '--admin-url', ing.adminUrl])).stdout;
  expect(table).toMatch(/^ID +STATE +MATCHED/);
  const n = after.listed.length;
  expect(table).toMatch(new RegExp(` {2}done +${n} +${n} +0 +0 +0 {2}`));
  expect((await listLetters(ing, 'destination=tickets')).count).toBe(0);
});
