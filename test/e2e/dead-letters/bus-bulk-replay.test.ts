/**
 * Bulk replay of dead letters with the bus (letters in the INTAKE_DEADLETTER stream, claims in its
 * key-value bucket, hand-off to the events stream), through the built ingester and a real
 * nats-server: the filters select through the real process, a second bulk replay is refused while
 * one runs, and a cancel half-way, or kill -9 half-way, leaves every event either a dead letter or
 * received, never both, never neither; a second bulk replay takes the rest.
 */
import { jest } from '@jest/globals';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { startIngester, type RunningIngester } from '../support/ingester.js';
import { waitFor } from '../../support/waiting.js';
import { handoffConfig, startNats, untilDeadLettersOpen, type RunningNats } from '../support/nats-server.js';
import { cancelHalfWay, checkFilters, fates, makeLetters, progressOf, startBulk } from './bulk-replay-support.js';

jest.setTimeout(240_000);

let nats: RunningNats;
let receiver: EventReceiver;
let ing: RunningIngester | undefined;

beforeAll(async () => {
  nats = await startNats();
  receiver = await startEventReceiver();
  ing = await start();
}, 60_000);

const start = async (): Promise<RunningIngester> => {
  const started = await startIngester((c) => {
    handoffConfig(nats)(c);
    c.destinations = [{ name: 'tickets', default: true, http: { url: receiver.url, timeout: '1s' } }];
  });
  await untilDeadLettersOpen(started.adminUrl);
  return started;
};

afterAll(async () => {
  await ing?.stop('SIGKILL');
  await receiver?.close();
  await nats?.stop();
});

it('filters, refuses a second bulk replay, and a cancel half-way leaves each event a dead letter or received', async () => {
  const ids = await makeLetters(ing!, receiver, 40, 'bus-cancel');
  expect(ids.size).toBe(40);
  await checkFilters(ing!, ids.size);
  await cancelHalfWay(ing!, receiver, ids);
});

it('kill -9 half-way: after the restart each event is a dead letter or received, never both, never neither', async () => {
  const ids = await makeLetters(ing!, receiver, 40, 'bus-killed');
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
  // The letter the killed process had in hand is finished from its claim by the new one.
  const after = await fates(ing, receiver, ids, 5);
  expect(after.both).toEqual([]);
  expect(after.neither).toEqual([]);
  expect(after.twice).toEqual([]);
  expect(after.listed.length).toBeGreaterThan(0);
  expect(receiver.accepted.size - before + after.listed.length).toBe(ids.size);
  // A new bulk replay takes the rest.
  const rest = await startBulk(ing, { destination: 'tickets' });
  expect(rest.body.matched).toBe(after.listed.length);
  const all = await fates(ing, receiver, ids, ids.size);
  expect(all).toEqual({ listed: [], both: [], neither: [], twice: [] });
});
