/**
 * Two ingester processes consume the same stream (one durable consumer per destination): while
 * both are healthy each event is delivered once; kill -9 one of them mid-delivery and the other
 * delivers what it held (after the claim timeout), so nothing is lost.
 */
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, startNats, type RunningNats } from '../support/nats-server.js';

let nats: RunningNats;
let receiver: EventReceiver;
const ingesters: RunningIngester[] = [];

beforeAll(async () => {
  // The receiver (port 0) first: beside nats-server it could be given the port just picked for it.
  receiver = await startEventReceiver();
  nats = await startNats();
  for (let i = 0; i < 2; i++) {
    ingesters.push(
      await startIngester((c) => {
        handoffConfig(nats)(c);
        // timeout 1s: an event a dead replica held is handed out again after 5 s.
        c.destinations = [
          {
            name: 'tickets',
            default: true,
            http: { url: receiver.url, timeout: '1s' },
            delivery: { backoffMin: '50ms', backoffMax: '200ms' },
          },
        ];
      }),
    );
  }
}, 60_000);

afterAll(async () => {
  for (const i of ingesters) await i.stop('SIGKILL');
  await Promise.all([receiver?.close(), nats?.stop()]);
});

const sendTo = async (ing: RunningIngester, from: number, count: number, phase: string): Promise<string[]> => {
  const events = Array.from({ length: count }, (_, i) => ({
    source: `host-${from + i}`,
    severity: 2,
    description: `${phase} ${from + i}`,
  }));
  const res = await post(`${ing.url}/events/webhook_demo`, events, { authorization: basic(DEMO.user, DEMO.password) });
  expect(res.status).toBe(200);
  return events.map((e) => e.description);
};
const acceptedDescriptions = (): Map<string, number> => {
  const seen = new Map<string, number>();
  for (const r of receiver.requests)
    if (r.answer !== 'reset' && r.answer.status === 200)
      for (const e of r.events) seen.set(e.description as string, (seen.get(e.description as string) ?? 0) + 1);
  return seen;
};

it('delivers each event once per destination while both are healthy', async () => {
  const [a, b] = ingesters as [RunningIngester, RunningIngester];
  const sent: string[] = [];
  for (let round = 0; round < 10; round++) sent.push(...(await sendTo(round % 2 ? b : a, round * 20, 20, 'healthy')));
  await waitFor('200 events delivered', async () => acceptedDescriptions().size === 200, 20_000, 50);
  await new Promise((r) => setTimeout(r, 500));
  const seen = acceptedDescriptions();
  expect(sent.filter((d) => seen.get(d) !== 1)).toEqual([]);
  expect(receiver.requests).toHaveLength(200);
  const byIngester = await Promise.all(
    ingesters.map((i) => metricValue(i.adminUrl, 'intake_destination_delivered_total{destination="tickets"}')),
  );
  expect((byIngester[0] ?? 0) + (byIngester[1] ?? 0)).toBe(200);
  // The work is shared: both replicas delivered some of it.
  expect(byIngester.every((n) => (n ?? 0) > 0)).toBe(true);
}, 40_000);

it('loses nothing when one of them is killed mid-delivery', async () => {
  const [a, b] = ingesters as [RunningIngester, RunningIngester];
  receiver.delayMs = 300;
  const before = receiver.requests.length;
  const sent = [...(await sendTo(a, 1000, 50, 'crash')), ...(await sendTo(b, 2000, 50, 'crash'))];
  // Both are mid-delivery (the receiver answers slowly): kill one of them.
  await waitFor('deliveries under way', async () => receiver.requests.length - before >= 10, 10_000, 20);
  a.child.kill('SIGKILL');
  await a.exited;
  receiver.delayMs = 0;
  await waitFor(
    'every event delivered by the survivor',
    async () => sent.every((d) => (acceptedDescriptions().get(d) ?? 0) >= 1),
    30_000,
    100,
  );
  const seen = acceptedDescriptions();
  expect(sent.filter((d) => !seen.has(d))).toEqual([]);
}, 60_000);
