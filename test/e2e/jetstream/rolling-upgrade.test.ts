/**
 * A rolling update from the release that published one bus message per event (its consumers read
 * every message as one event's JSON and drop one that is not) to this one, through a real
 * nats-server. The old release is simulated: its stream (subjects `intake.events.>` only), its
 * durable consumer per destination (`intake-<destination>`, filter `intake.events.>`) and an "old
 * pod" pulling from that consumer and doing what that release did with each message. A new
 * ingester shares the consumer with it; the old pod must never be handed a message of several
 * events, and every event must be delivered once, by one of them.
 */
import { AckPolicy, DeliverPolicy, DiscardPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, startNats, type RunningNats } from '../support/nats-server.js';

const running: Array<{ stop: () => Promise<unknown> }> = [];

afterAll(async () => {
  for (const r of running.reverse()) await r.stop();
});

/** The stream and the destination's consumer as the per-event release created them. */
async function oldRelease(nc: NatsConnection): Promise<void> {
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({
    name: 'INTAKE_EVENTS',
    subjects: ['intake.events.>'],
    discard: DiscardPolicy.New,
    duplicate_window: nanos(900_000),
    max_age: nanos(72 * 3600 * 1000),
  });
  await jsm.consumers.add('INTAKE_EVENTS', {
    durable_name: 'intake-tickets',
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.StartTime,
    opt_start_time: new Date().toISOString(),
    filter_subject: 'intake.events.>',
    ack_wait: nanos(9000),
    max_deliver: -1,
    max_ack_pending: 1000,
  });
}

interface OldPod {
  /** Events it took and delivered. */
  delivered: Array<Record<string, unknown>>;
  /** Messages it could not read as one event (the old release dead-lettered them as unreadable and terminated them): subject and lines. */
  unreadable: string[];
  stop(): Promise<void>;
}

/** An ingester of the per-event release on the destination's shared consumer: every message is one event's JSON. */
async function startOldPod(url: string): Promise<OldPod> {
  const nc = await connect({ servers: url });
  const consumer = await jetstream(nc).consumers.get('INTAKE_EVENTS', 'intake-tickets');
  const messages = await consumer.consume({ max_messages: 64 });
  const pod: OldPod = {
    delivered: [],
    unreadable: [],
    stop: async () => {
      await messages.close();
      await nc.close();
    },
  };
  void (async () => {
    for await (const m of messages) {
      let event: unknown;
      try {
        event = m.json();
      } catch {
        event = undefined;
      }
      if (typeof event !== 'object' || event === null || typeof (event as { id?: unknown }).id !== 'string') {
        pod.unreadable.push(`${m.subject}: ${m.string().split('\n').length} lines`);
        m.term('unreadable');
        continue;
      }
      pod.delivered.push(event as Record<string, unknown>);
      m.ack();
    }
  })();
  return pod;
}

async function startNew(nats: RunningNats, receiver: EventReceiver): Promise<RunningIngester> {
  const ing = await startIngester((c) => {
    handoffConfig(nats)(c);
    c.destinations = [{ name: 'tickets', default: true, http: { url: receiver.url, batchSize: 5, timeout: '2s' } }];
  });
  running.push(ing);
  return ing;
}

const send = async (ing: RunningIngester, events: unknown[]): Promise<void> => {
  const res = await post(`${ing.url}/events/webhook_demo`, events, { authorization: basic(DEMO.user, DEMO.password) });
  expect(res.status).toBe(200);
};

/** The `source` of every event the receiver took (2xx), with how often. */
const receivedSources = (receiver: EventReceiver): string[] =>
  receiver.requests
    .filter((r) => r.answer !== 'reset' && r.answer.status >= 200 && r.answer.status < 300)
    .flatMap((r) => r.events.map((e) => String(e.source)));

async function setUp(): Promise<{ nats: RunningNats; receiver: EventReceiver; nc: NatsConnection }> {
  const [nats, receiver] = await Promise.all([startNats(), startEventReceiver()]);
  running.push(nats, { stop: () => receiver.close() });
  const nc = await connect({ servers: nats.url });
  running.push({ stop: () => nc.close() });
  return { nats, receiver, nc };
}

it('never hands an ingester of the per-event release a message of several events, and delivers every event once', async () => {
  const { nats, receiver, nc } = await setUp();
  await oldRelease(nc);
  const old = await startOldPod(nats.url);
  running.push(old);
  const ing = await startNew(nats, receiver);

  const sources: string[] = [];
  for (let r = 0; r < 40; r++) {
    // Every other request holds several events (one message of several), the rest one each.
    const n = r % 2 === 0 ? 4 : 1;
    const events = Array.from({ length: n }, (_, i) => ({ source: `r${r}-e${i}`, severity: 3 }));
    sources.push(...events.map((e) => e.source));
    await send(ing, events);
  }

  const deliveredOnce = (): boolean => {
    const all = [...old.delivered.map((e) => String(e.source)), ...receivedSources(receiver)];
    return sources.every((s) => all.includes(s));
  };
  await waitFor(
    'every event delivered, by the old pod or the new ingester (or an unreadable message at the old pod)',
    async () => old.unreadable.length > 0 || deliveredOnce(),
    30_000,
    50,
  );
  // Anything still in flight to the old pod would show up as unreadable.
  await new Promise((r) => setTimeout(r, 500));

  expect(old.unreadable).toEqual([]);
  const all = [...old.delivered.map((e) => String(e.source)), ...receivedSources(receiver)];
  expect(all.sort()).toEqual([...sources].sort());
  // The two really shared the destination's consumer: the old pod delivered single events of it.
  expect(old.delivered.length).toBeGreaterThan(0);
  expect(old.delivered.every((e) => /^r\d*[13579]-e0$/.test(String(e.source)))).toBe(true);

  // The new ingester added the second subject space to the stream and consumes it with a second consumer.
  const jsm = await jetstreamManager(nc);
  expect((await jsm.streams.info('INTAKE_EVENTS')).config.subjects).toEqual([
    'intake.events.>',
    'intake.events-multi.>',
  ]);
  const multi = await jsm.consumers.info('INTAKE_EVENTS', 'intake-tickets_multi');
  expect(multi.config.filter_subject).toBe('intake.events-multi.>');
  await waitFor(
    'the second consumer settled',
    async () => {
      const info = await jsm.consumers.info('INTAKE_EVENTS', 'intake-tickets_multi');
      return info.num_pending + info.num_ack_pending === 0;
    },
    10_000,
    100,
  );
  expect(await metricValue(ing.adminUrl, 'intake_destination_delivered_total{destination="tickets"}')).toBe(
    receivedSources(receiver).length,
  );
}, 90_000);

it('delivers what waited on the per-event release consumer, and messages of several events published before their consumer existed; the lag counts both consumers', async () => {
  const { nats, receiver, nc } = await setUp();
  await oldRelease(nc);
  const js = jetstream(nc);
  const event = (id: string) => ({
    id,
    integration: 'demo',
    namespace: 'default',
    received_at: new Date().toISOString(),
    source: id,
    severity: 3,
    custom_info: {},
  });
  // Published by the old release while no ingester delivered (one message per event).
  for (let i = 0; i < 5; i++)
    await js.publish('intake.events.default.demo', JSON.stringify(event(`old-${i}`)), { msgID: `old-${i}` });
  // A first new ingester added the second subject space and published a message of several events
  // before any ingester created the destination's second consumer.
  const jsm = await jetstreamManager(nc);
  const config = (await jsm.streams.info('INTAKE_EVENTS')).config;
  await jsm.streams.update('INTAKE_EVENTS', { ...config, subjects: ['intake.events.>', 'intake.events-multi.>'] });
  await js.publish(
    'intake.events-multi.default.demo',
    [event('early-0'), event('early-1')].map((e) => JSON.stringify(e)).join('\n'),
    { msgID: 'm-early' },
  );

  // Slow answers: what waited is still unacknowledged when the lag is first measured (at attach).
  receiver.delayMs = 1500;
  const ing = await startNew(nats, receiver);
  // Five messages on the first consumer and one on the second: the gauge sums both.
  await waitFor(
    'the lag of both consumers',
    async () => (await metricValue(ing.adminUrl, 'intake_destination_lag{destination="tickets"}')) !== undefined,
    5000,
    20,
  );
  expect(await metricValue(ing.adminUrl, 'intake_destination_lag{destination="tickets"}')).toBe(6);
  receiver.delayMs = 0;
  await send(ing, [
    { source: 'new-0', severity: 3 },
    { source: 'new-1', severity: 3 },
  ]);
  await send(ing, [{ source: 'new-2', severity: 3 }]);

  const expected = [
    'early-0',
    'early-1',
    'new-0',
    'new-1',
    'new-2',
    ...Array.from({ length: 5 }, (_, i) => `old-${i}`),
  ];
  await waitFor('all delivered', async () => expected.every((s) => receivedSources(receiver).includes(s)), 30_000, 50);
  await new Promise((r) => setTimeout(r, 300));
  expect(receivedSources(receiver).sort()).toEqual(expected.sort());
  // Acknowledged once the receiver answered (it records a request before its slow answer).
  await waitFor(
    'both consumers settled',
    async () => {
      for (const name of ['intake-tickets', 'intake-tickets_multi']) {
        const info = await jsm.consumers.info('INTAKE_EVENTS', name);
        if (info.num_pending + info.num_ack_pending !== 0) return false;
      }
      return true;
    },
    10_000,
    100,
  );
}, 60_000);
