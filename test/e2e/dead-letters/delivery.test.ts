/**
 * Dead letters of destinations are bounded per namespace (unbounded, 20,000 of them
 * grew the outbox to 13 MB with spool.maxBytes 65536 while /readyz said ready). A receiver refuses
 * every event (400); each namespace keeps at most its share, the oldest of that namespace go and
 * are counted, the storage directory stays small, and the ingester keeps accepting and stays ready.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { metricValue } from '../support/nats-server.js';
import { listLetters } from './support.js';
import { adminPost } from '../../support/admin.js';

jest.setTimeout(180_000);

const SHARE = 64 * 1024;
let receiver: EventReceiver;
let ing: RunningIngester;
const spool = mkdtempSync(join(tmpdir(), 'intake-e2e-dl-delivery-'));

beforeAll(async () => {
  receiver = await startEventReceiver();
  receiver.refuse = () => true;
  ing = await startIngester((c) => {
    c.destinations = [{ name: 'tickets', default: true, http: { url: receiver.url, batchSize: 100 } }];
    // One namespace may fill the outbox here (by default it holds at most a quarter: its share).
    c.spool = { path: spool, maxBytes: 65536, maxBytesPerNamespace: 65536 };
    c.deadLetter = { maxBytes: 4 * SHARE, maxBytesPerNamespace: SHARE };
  });
}, 60_000);

afterAll(async () => {
  await ing?.stop();
  await receiver?.close();
  rmSync(spool, { recursive: true, force: true });
});

const dirBytes = (dir: string): number => readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);

it('keeps at most a namespace share of refused events, drops and counts the oldest, and stays ready', async () => {
  const sent = 3000;
  for (let n = 0; n < sent / 100; n++) {
    const events = Array.from({ length: 100 }, (_, i) => ({
      source: `refused-${n * 100 + i}`,
      severity: 3,
      description: 'x'.repeat(100),
    }));
    // The outbox (spool.maxBytes 65536) holds about one request's events: a sender retries its 503 until delivery made room.
    let res = await post(`${ing.url}/events/webhook_demo`, events, { authorization: basic(DEMO.user, DEMO.password) });
    for (let retry = 0; res.status === 503 && retry < 300; retry++) {
      await new Promise((w) => setTimeout(w, 100));
      res = await post(`${ing.url}/events/webhook_demo`, events, { authorization: basic(DEMO.user, DEMO.password) });
    }
    expect(res.status).toBe(200);
  }
  await waitFor(
    'every event refused by the receiver',
    async () =>
      (await metricValue(
        ing.adminUrl,
        'intake_destination_dead_lettered_total{destination="tickets",reason="http_400"}',
      )) === sent,
    120_000,
    200,
  );
  await waitFor(
    'outbox empty',
    async () => (await metricValue(ing.adminUrl, 'intake_destination_lag{destination="tickets"}')) === 0,
    30_000,
    200,
  );
  const listed = await listLetters(ing, 'kind=delivery&limit=10000');
  expect(listed.namespaces.default).toBeLessThanOrEqual(SHARE);
  expect(listed.count).toBeGreaterThan(50);
  expect(listed.count).toBeLessThan(sent);
  // The newest are kept, the oldest went, and every one that went is counted.
  const sources = listed.entries.map((e) => String(e.event?.source));
  expect(sources).toContain(`refused-${sent - 1}`);
  expect(sources).not.toContain('refused-0');
  expect(
    await metricValue(
      ing.adminUrl,
      'intake_deadletter_dropped_total{kind="delivery",namespace="default",reason="namespace_share"}',
    ),
  ).toBe(sent - listed.count);
  // The outbox is empty (the dead letters live apart, bounded), and the storage directory stays small.
  expect((await fetch(`${ing.adminUrl}/readyz`)).status).toBe(200);
  expect(dirBytes(spool)).toBeLessThan(16 * 1024 * 1024);
  const more = await post(
    `${ing.url}/events/webhook_demo`,
    { source: 'after', severity: 1 },
    { authorization: basic(DEMO.user, DEMO.password) },
  );
  expect(more.status).toBe(200);
});

it('keeps one letter for an event refused five times, and counts its replay once, so the outbox does not stay "full" while empty', async () => {
  // Five dead letters of one event id, replayed, were once counted five times and inserted once:
  // the outbox said "61684 of 65536 bytes" while empty and answered 503 until restart. Now the
  // event's letter is keyed by destination and event id: the five refusals leave one letter.
  receiver.refuse = (e) => e.source === 'same-event';
  const refused = async (): Promise<number> =>
    (await metricValue(
      ing.adminUrl,
      'intake_destination_dead_lettered_total{destination="tickets",reason="http_400"}',
    )) ?? 0;
  const refusedBefore = await refused();
  const same = { source: 'same-event', severity: 3, description: 'y'.repeat(9000) };
  const auth = { authorization: basic(DEMO.user, DEMO.password) };
  const letters = async () =>
    (await listLetters(ing, 'kind=delivery&limit=10000')).entries.filter((e) => e.event?.source === 'same-event');
  for (let n = 1; n <= 5; n++) {
    // The same content is the same event id; each one is refused and kept before the next is sent.
    expect((await post(`${ing.url}/events/webhook_demo`, same, auth)).status).toBe(200);
    await waitFor(`refusal ${n}`, async () => (await refused()) === refusedBefore + n, 30_000, 100);
  }
  const ids = (await letters()).map((e) => e.id);
  expect(ids).toHaveLength(1);
  receiver.refuse = () => false;
  const before = receiver.requests.filter(
    (r) => r.answer !== 'reset' && r.answer.status === 200 && r.events.some((e) => e.source === 'same-event'),
  ).length;
  const res = await fetch(`${ing.adminUrl}/deadletter/replay?id=${ids.join(',')}`, adminPost());
  expect(((await res.json()) as { replayed: number }).replayed).toBe(1);
  await waitFor(
    'replayed event delivered',
    async () =>
      receiver.requests.filter(
        (r) => r.answer !== 'reset' && r.answer.status === 200 && r.events.some((e) => e.source === 'same-event'),
      ).length > before,
    30_000,
    100,
  );
  // The outbox is empty again: a request of 40 KB (more than 65536 minus four phantom copies) fits.
  const big = Array.from({ length: 4 }, (_, i) => ({
    source: `after-${i}`,
    severity: 1,
    description: 'z'.repeat(9000),
  }));
  const accepted = await waitFor(
    'accepted',
    async () => {
      const r = await post(`${ing.url}/events/webhook_demo`, big, auth);
      return r.status === 200 ? r : undefined;
    },
    15_000,
    500,
  ).catch(async () => post(`${ing.url}/events/webhook_demo`, big, auth));
  expect({ status: accepted.status, body: accepted.text }).toMatchObject({ status: 200 });
  // Ready again once those are delivered (before: unready until restart).
  await waitFor('ready', async () => (await fetch(`${ing.adminUrl}/readyz`)).status === 200, 15_000, 200);
});
