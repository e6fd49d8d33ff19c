/**
 * The event inspector with the bus: two ingester processes on one nats-server. A request captured
 * by one is read, newest first in one list, from the other, with the delivery attempts recorded
 * by whichever replica delivered its events; and after both replicas are restarted, a new one
 * still lists it (the captures live in the bus's stream, not in a replica).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CapturedRequest, CapturedRequestSummary } from '../../../api/inspector.js';
import { ROOT } from '../../support/paths.js';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, startNats, type RunningNats } from '../support/nats-server.js';

const fixture = JSON.parse(readFileSync(join(ROOT, 'test/unit/api/mapping/fixtures/alertmanager.json'), 'utf8')) as {
  cases: Array<{ input: unknown }>;
};
const PAYLOAD = JSON.stringify(fixture.cases[0]?.input);
const SHARE = 64 * 1024;

let nats: RunningNats;
let receiver: EventReceiver;
let ingesters: RunningIngester[] = [];

const start = async (): Promise<RunningIngester> => {
  const ing = await startIngester((c) => {
    handoffConfig(nats)(c);
    (c.routes as unknown[]).push(
      tenantRoute('am', 'team-a', { mapping: { preset: 'alertmanager' }, inspect: { enabled: true } }),
      tenantRoute('small', 'team-a', { inspect: { enabled: true, requests: 4 } }),
      tenantRoute('flood', 'team-c', { inspect: { enabled: true, requests: 200 } }),
      tenantRoute('victim', 'team-d', { inspect: { enabled: true } }),
    );
    c.inspector = { maxBytesPerNamespace: SHARE, maxBytes: 8 * SHARE };
    c.destinations = [{ name: 'tickets', default: true, http: { url: receiver.url } }];
  });
  // The inspector's stream is set up just after the bus connects: wait until this replica reads it.
  await waitFor('the inspector answering', async () => (await fetch(listUrl(ing))).ok, 30_000, 100);
  return ing;
};
const listUrl = (ing: RunningIngester) => `${ing.adminUrl}/inspector/team-a/am`;
const list = async (ing: RunningIngester) =>
  ((await (await fetch(listUrl(ing))).json()) as { requests: CapturedRequestSummary[] }).requests;
const read = async (ing: RunningIngester, id: string) =>
  (await (await fetch(`${listUrl(ing)}/${id}`)).json()) as CapturedRequest;

beforeAll(async () => {
  // The receiver (port 0) first: beside nats-server it could be given the port just picked for it.
  receiver = await startEventReceiver();
  nats = await startNats();
  ingesters = [await start(), await start()];
}, 90_000);

afterAll(async () => {
  for (const i of ingesters) await i.stop('SIGKILL');
  await Promise.all([receiver?.close(), nats?.stop()]);
});

it('lists on one replica what the other received, with the attempts of whichever delivered', async () => {
  const [a, b] = ingesters as [RunningIngester, RunningIngester];
  expect((await post(`${a.url}/events/webhook_am`, PAYLOAD, tenantAuth('am'))).status).toBe(200);
  expect((await post(`${b.url}/events/webhook_am`, PAYLOAD, tenantAuth('am'))).status).toBe(200);
  await waitFor('both captures on the bus', async () => (await list(b)).length === 2, 15_000, 100);
  const fromA = await list(a);
  const fromB = await list(b);
  expect(fromA.map((r) => r.id)).toEqual(fromB.map((r) => r.id));
  expect((fromB[0]?.receivedAt ?? '') >= (fromB[1]?.receivedAt ?? '')).toBe(true);
  const id = fromB[1]?.id as string;
  await waitFor(
    'both events delivered and recorded',
    async () => ((await read(b, id)).attempts ?? []).filter((x) => x.outcome === 'delivered').length === 2,
    20_000,
    100,
  );
  const captured = await read(a, id);
  expect(captured.body).toBe(PAYLOAD);
  expect(captured.events).toHaveLength(2);
  expect(captured.attempts?.map((x) => [x.event, x.destination, x.status])).toEqual(
    expect.arrayContaining([
      [0, 'tickets', 200],
      [1, 'tickets', 200],
    ]),
  );
}, 60_000);

it('still lists them after both replicas restart', async () => {
  const before = await list(ingesters[0] as RunningIngester);
  for (const i of ingesters) await i.stop();
  ingesters = [await start()];
  const after = await list(ingesters[0] as RunningIngester);
  expect(after.map((r) => r.id)).toEqual(before.map((r) => r.id));
  expect((await read(ingesters[0] as RunningIngester, after[0]?.id as string)).events).toHaveLength(2);
}, 90_000);

it('keeps an integration to its own number of requests on the bus, newest first', async () => {
  const ing = ingesters[0] as RunningIngester;
  for (let i = 0; i < 9; i++)
    expect(
      (await post(`${ing.url}/events/webhook_small`, { source: `s-${i}`, severity: 2 }, tenantAuth('small'))).status,
    ).toBe(200);
  const url = `${ing.adminUrl}/inspector/team-a/small`;
  const read = async () => ((await (await fetch(url)).json()) as { requests: CapturedRequestSummary[] }).requests;
  await waitFor('the last capture on the bus', async () => (await read()).length === 4, 15_000, 100);
  const kept = await read();
  const bodies = await Promise.all(
    kept.map(async (r) => ((await (await fetch(`${url}/${r.id}`)).json()) as CapturedRequest).body),
  );
  expect(bodies.map((b) => (JSON.parse(b) as { source: string }).source)).toEqual(['s-8', 's-7', 's-6', 's-5']);
}, 60_000);

it("a namespace past its share on the bus gives up its own oldest captures, never another's", async () => {
  const ing = ingesters[0] as RunningIngester;
  expect(
    (await post(`${ing.url}/events/webhook_victim`, { source: 'v', severity: 2 }, tenantAuth('victim'))).status,
  ).toBe(200);
  for (let i = 0; i < 40; i++)
    expect(
      (
        await post(
          `${ing.url}/events/webhook_flood`,
          { source: `f-${i}`, severity: 2, pad: 'x'.repeat(8 * 1024) },
          tenantAuth('flood'),
        )
      ).status,
    ).toBe(200);
  const read = async (ns: string, name: string) =>
    ((await (await fetch(`${ing.adminUrl}/inspector/${ns}/${name}`)).json()) as { requests: CapturedRequestSummary[] })
      .requests;
  await waitFor(
    'the flood trimmed to its share',
    async () => (await read('team-c', 'flood')).length * 8 * 1024 <= SHARE,
    15_000,
    100,
  );
  expect((await read('team-c', 'flood')).length).toBeGreaterThan(0);
  expect(await read('team-d', 'victim')).toHaveLength(1);
}, 60_000);
