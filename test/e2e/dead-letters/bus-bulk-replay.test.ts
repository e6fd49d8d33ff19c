/**
 * Bulk replay of dead letters with the bus (letters in the INTAKE_DEADLETTER stream, claims in its
 * key-value bucket, hand-off to the events stream), through the built ingester and a real
 * nats-server: the filters select through the real process, a second bulk replay is refused while
 * one runs, and a cancel half-way leaves every event either a dead letter or received, never both,
 * never neither; a second bulk replay takes the rest.
 */
import { jest } from '@jest/globals';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, startNats, untilDeadLettersOpen, type RunningNats } from '../support/nats-server.js';
import { cancelHalfWay, checkFilters, makeLetters } from './bulk-replay-support.js';

jest.setTimeout(240_000);

let nats: RunningNats;
let receiver: EventReceiver;
let ing: RunningIngester | undefined;

beforeAll(async () => {
  nats = await startNats();
  receiver = await startEventReceiver();
  ing = await startIngester((c) => {
    handoffConfig(nats)(c);
    c.destinations = [{ name: 'tickets', default: true, http: { url: receiver.url, timeout: '1s' } }];
  });
  await untilDeadLettersOpen(ing.adminUrl);
}, 60_000);

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
