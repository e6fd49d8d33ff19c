/**
 * A request's events travel the bus as one message, cut under the server's max_payload: through a
 * real nats-server with a small max_payload, a 100-event request becomes several messages that
 * read back as the same 100 events in order, a retry of the request stores nothing new, and a
 * destination gets every event once.
 */
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, readStream, startNats, type RunningNats } from '../support/nats-server.js';

const MAX_PAYLOAD = 16 * 1024;
let nats: RunningNats;
let receiver: EventReceiver;
let ing: RunningIngester;

beforeAll(async () => {
  [nats, receiver] = await Promise.all([startNats({ config: `max_payload: ${MAX_PAYLOAD}` }), startEventReceiver()]);
  ing = await startIngester((c) => {
    handoffConfig(nats)(c);
    c.destinations = [{ name: 'tickets', default: true, http: { url: receiver.url, batchSize: 7, timeout: '2s' } }];
  });
});

afterAll(async () => {
  await ing?.stop();
  await Promise.all([receiver?.close(), nats?.stop()]);
});

it('cuts a request into messages under max_payload, stores a retry once and delivers every event once', async () => {
  const events = Array.from({ length: 100 }, (_, i) => ({
    source: `host-${i}`,
    severity: 1 + (i % 5),
    description: `event ${i} ${'x'.repeat(400)}`,
  }));
  const send = () =>
    post(`${ing.url}/events/webhook_demo`, events, {
      authorization: basic(DEMO.user, DEMO.password),
      'idempotency-key': 'the-one-request',
    });
  const first = await send();
  expect(first.status).toBe(200);
  expect(first.json()).toMatchObject({ response: { processed: 100, cached: 0, received: 100 } });

  const stored = await readStream(nats.url, 'INTAKE_EVENTS');
  expect(stored.map((s) => s.event.source)).toEqual(events.map((e) => e.source));
  const messages = new Map(stored.map((s) => [s.seq, s.msgId]));
  // About 60 KB of events under a 16 KiB max_payload: at least four messages, each named from its events.
  expect(messages.size).toBeGreaterThanOrEqual(4);
  for (const id of messages.values()) expect(id).toMatch(/^m-[A-Za-z0-9_-]{43}$/);

  // The sender's retry makes the same messages: the stream's duplicate window keeps one copy.
  expect((await send()).status).toBe(200);
  expect(await readStream(nats.url, 'INTAKE_EVENTS')).toHaveLength(100);

  await waitFor('all 100 delivered', async () => receiver.accepted.size === 100, 20_000, 50);
  expect([...receiver.accepted.values()].every((n) => n === 1)).toBe(true);
  expect(receiver.requests.every((r) => r.events.length <= 7)).toBe(true);
  expect(await metricValue(ing.adminUrl, 'intake_destination_delivered_total{destination="tickets"}')).toBe(100);
}, 60_000);
