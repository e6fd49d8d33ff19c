/**
 * The inspector's shares on the bus hold for all replicas together: two ingester processes on one
 * nats-server, both capturing one namespace's flood, keep that namespace within its one share
 * (not a share per replica), so another namespace's capture is never aged out by the stream's own
 * bound; and a replica that restarts counts what is on the bus already (a capture made on A is
 * listed by B, newest first, and still there after A's restart).
 */
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { CapturedRequestSummary } from '../../../api/inspector.js';
import { waitFor } from '../../support/waiting.js';
import { post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, startNats, type RunningNats } from '../support/nats-server.js';

const SHARE = 64 * 1024;
/** Two shares in all: one namespace's flood from two replicas, each holding a share of its own, filled the stream. */
const WHOLE = 2 * SHARE;
const PAD = 6 * 1024;

let nats: RunningNats;
let a: RunningIngester;
let b: RunningIngester;

const start = async (): Promise<RunningIngester> => {
  const ing = await startIngester((c) => {
    handoffConfig(nats)(c);
    (c.routes as unknown[]).push(
      tenantRoute('flood', 'team-c', { inspect: { enabled: true, requests: 200 } }),
      tenantRoute('victim', 'team-d', { inspect: { enabled: true } }),
    );
    c.inspector = { maxBytesPerNamespace: SHARE, maxBytes: WHOLE };
  });
  await waitFor('the inspector answering', async () => (await fetch(listUrl(ing, 'team-d', 'victim'))).ok, 30_000, 100);
  return ing;
};
const listUrl = (ing: RunningIngester, ns: string, name: string) => `${ing.adminUrl}/inspector/${ns}/${name}`;
const list = async (ing: RunningIngester, ns: string, name: string) =>
  ((await (await fetch(listUrl(ing, ns, name))).json()) as { requests: CapturedRequestSummary[] }).requests;

/** Bytes the stream holds on a namespace's subjects (the captures of its integrations). */
const busBytes = async (namespace: string): Promise<number> => {
  const nc = await connect({ servers: nats.url });
  try {
    let total = 0;
    const consumer = await jetstream(nc).consumers.get('INTAKE_INSPECT', {
      filter_subjects: [`intake.inspect.*.${namespace}.*`],
      headers_only: true,
    });
    const pending = (await consumer.info()).num_pending;
    if (pending > 0) {
      let read = 0;
      for await (const m of await consumer.fetch({ max_messages: pending, expires: 5000 })) {
        total += Number(m.headers?.get('Nats-Msg-Size') ?? 0);
        if (++read >= pending) break;
      }
    }
    return total;
  } finally {
    await nc.close();
  }
};

/** `count` captures, four at a time, so both replicas reserve the namespace's last room at once. */
const flood = async (ing: RunningIngester, from: number, count: number): Promise<void> => {
  const send = async (i: number) =>
    expect(
      (
        await post(
          `${ing.url}/events/webhook_flood`,
          { source: `f-${i}`, severity: 2, pad: 'x'.repeat(PAD) },
          tenantAuth('flood'),
        )
      ).status,
    ).toBe(200);
  for (let i = from; i < from + count; i += 4)
    await Promise.all([i, i + 1, i + 2, i + 3].filter((n) => n < from + count).map(send));
};

beforeAll(async () => {
  nats = await startNats();
  a = await start();
  b = await start();
}, 90_000);

afterAll(async () => {
  for (const i of [a, b]) await i?.stop('SIGKILL');
  await nats?.stop();
});

it("keeps one namespace within one share across replicas and restarts, never aging out another's", async () => {
  // A capture made on A is listed by B.
  expect(
    (await post(`${a.url}/events/webhook_victim`, { source: 'v', severity: 2 }, tenantAuth('victim'))).status,
  ).toBe(200);
  await waitFor('the victim listed on B', async () => (await list(b, 'team-d', 'victim')).length === 1, 15_000, 100);

  // One namespace floods through both replicas: each alone could fill a share.
  await Promise.all([flood(a, 0, 14), flood(b, 100, 14)]);
  await waitFor('the flood on the bus', async () => (await list(b, 'team-c', 'flood')).length > 0, 15_000, 100);
  await new Promise((r) => setTimeout(r, 500));
  expect(await busBytes('team-c')).toBeLessThanOrEqual(SHARE);

  // A restarts: it counts what the bus holds already, and floods again.
  await a.stop();
  a = await start();
  await flood(a, 200, 14);
  await new Promise((r) => setTimeout(r, 500));
  expect(await busBytes('team-c')).toBeLessThanOrEqual(SHARE);

  // The other namespace's capture is still there, on both replicas; the flood's list is newest first.
  expect(await list(a, 'team-d', 'victim')).toHaveLength(1);
  expect(await list(b, 'team-d', 'victim')).toHaveLength(1);
  const floodList = await list(b, 'team-c', 'flood');
  expect(floodList.length).toBeGreaterThan(0);
  const times = floodList.map((r) => r.receivedAt);
  expect([...times].sort().reverse()).toEqual(times);
}, 120_000);
