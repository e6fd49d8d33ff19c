/**
 * The bus dead-letter store against a real nats-server: a delivery letter given the id of one
 * kept already (the same event refused again for the same destination) replaces it instead of
 * being added, or being dropped as a duplicate while a replay holding the older one removes it.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { BusDeadLetters } from '../../../ingester/dead-letters/bus-store.js';
import { deliveryLetterId, type DeliveryDeadLetter, type NewDeadLetter } from '../../../ingester/dead-letters/model.js';
import type { NormalisedEvent } from '../../../ingester/core/event.js';
import { DEFAULT_JETSTREAM } from '../../../ingester/sinks/handoff-config.js';
import { waitFor } from '../../support/waiting.js';
import { startNats, type RunningNats } from '../support/nats-server.js';

let nats: RunningNats | undefined;
let nc: NatsConnection | undefined;
let store: BusDeadLetters | undefined;

afterAll(async () => {
  await store?.close();
  await nc?.close();
  await nats?.stop();
});

const refused = (attempts: number): NewDeadLetter => ({
  kind: 'delivery',
  id: deliveryLetterId('tickets', 'event-1'),
  namespace: 'team-a',
  integration: 'demo',
  destination: 'tickets',
  reason: 'http_400',
  error: `refused, attempt ${attempts}`,
  attempts,
  event: { id: 'event-1', namespace: 'team-a', integration: 'demo' } as NormalisedEvent,
});

it('keeps one letter per id, the newest, also while a replay holds the older one', async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  store = new BusDeadLetters(
    { ...DEFAULT_JETSTREAM, servers: [nats.url] },
    { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 },
    60_000,
    pino({ level: 'silent' }),
  );
  store.attach(nc);
  await waitFor('the store attached', async () => (await store!.put(refused(1))) !== undefined, 15_000, 100);
  const [first] = await store.list({ limit: 10 });
  expect(first).toMatchObject({ attempts: 1 });

  // A replay claims the letter; meanwhile the event is refused again.
  const claimed = (await store.claim(first!, 60_000)) as DeliveryDeadLetter;
  expect(claimed).toBeDefined();
  await store.put(refused(2));
  // The replay removes what it held: the newer letter stays.
  await store.remove(claimed);
  await store.release(claimed);
  const listed = (await store.list({ limit: 10 })) as DeliveryDeadLetter[];
  expect(listed.map((l) => [l.id, l.attempts])).toEqual([[deliveryLetterId('tickets', 'event-1'), 2]]);
  expect(listed[0]!.seq).toBeGreaterThan(first!.seq);

  // Refused a third time: still one letter.
  await store.put(refused(3));
  expect(((await store.list({ limit: 10 })) as DeliveryDeadLetter[]).map((l) => l.attempts)).toEqual([3]);
  expect(store.usage().namespaces.get('team-a')).toBe(listed[0]!.bytes);
}, 30_000);
