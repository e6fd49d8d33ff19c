/**
 * Dead-letter bookkeeping through the real process, standalone (outbox and dead letters in the
 * storage directory), with a real HTTP destination:
 *   - kill -9 of the ingester in the middle of a replay, again and again: after each restart no
 *     listed letter is one whose event the destination has received (a later replay would send it
 *     again), and no event is lost (each one received, or still listed);
 *   - a sender re-sending one request with the same Idempotency-Key to a destination that answers
 *     400 keeps one letter per event, not one per re-send.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { waitFor } from '../../support/waiting.js';
import { adminPost } from '../../support/admin.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { metricValue } from '../support/nats-server.js';
import { listLetters } from './support.js';

jest.setTimeout(240_000);

const spools: string[] = [];
let receiver: EventReceiver;
let ing: RunningIngester | undefined;

beforeAll(async () => {
  receiver = await startEventReceiver();
});

afterAll(async () => {
  await ing?.stop('SIGKILL');
  await receiver?.close();
  for (const s of spools) rmSync(s, { recursive: true, force: true });
});

const start = (spool: string): Promise<RunningIngester> =>
  startIngester((c) => {
    // A short timeout: rows a killed process had leased come back after the claim timeout (5 s).
    c.destinations = [{ name: 'tickets', default: true, http: { url: receiver.url, timeout: '1s' } }];
    c.spool = { path: spool };
  });

const sendDemo = async (events: unknown[], headers: Record<string, string> = {}): Promise<void> => {
  const res = await post(`${ing!.url}/events/webhook_demo`, events, {
    authorization: basic(DEMO.user, DEMO.password),
    ...headers,
  });
  expect(res.status).toBe(200);
};

const lastRequestAt = (): number => receiver.requests.at(-1)?.atMs ?? 0;

const deadLettered = async (): Promise<number> =>
  (await metricValue(
    ing!.adminUrl,
    'intake_destination_dead_lettered_total{destination="tickets",reason="http_400"}',
  )) ?? 0;

it('kill -9 during a replay: a letter whose event reached the destination is never listed again, and none is lost', async () => {
  const spool = mkdtempSync(join(tmpdir(), 'intake-e2e-dl-crash-'));
  spools.push(spool);
  receiver.refuse = () => true;
  ing = await start(spool);
  const total = 400;
  for (let n = 0; n < total / 100; n++)
    await sendDemo(
      Array.from({ length: 100 }, (_, i) => ({
        source: `crash-${n * 100 + i}`,
        severity: 3,
        description: 'x'.repeat(2000),
      })),
    );
  await waitFor('every event dead-lettered', async () => (await deadLettered()) === total, 60_000, 100);
  const ids = new Set((await listLetters(ing, 'kind=delivery&limit=10000')).entries.map((e) => String(e.event?.id)));
  expect(ids.size).toBe(total);
  receiver.refuse = () => false;

  for (let round = 0; round < 8; round++) {
    // A replay over every letter, cut by kill -9 somewhere in its middle.
    const replaying = fetch(`${ing.adminUrl}/deadletter/replay?limit=10000`, adminPost()).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 150 + round * 40));
    await ing.stop('SIGKILL');
    await replaying;
    ing = await start(spool);
    // What the replay handed back to the outbox is delivered after the restart: wait until the
    // destination has been sent nothing for a while.
    let listed: string[] = [];
    await waitFor(
      'every event received or listed, and the outbox drained',
      async () => {
        listed = (await listLetters(ing!, 'kind=delivery&limit=10000')).entries.map((e) => String(e.event?.id));
        return (
          [...ids].every((id) => receiver.accepted.has(id) || listed.includes(id)) && Date.now() - lastRequestAt() > 700
        );
      },
      30_000,
      200,
    );
    const delivered = [...ids].filter((id) => receiver.accepted.has(id));
    const listedAndDelivered = listed.filter((id) => receiver.accepted.has(id));
    expect({ round, listedAndDelivered }).toEqual({ round, listedAndDelivered: [] });
    if (delivered.length === total) break;
  }
});

it('re-sends of one request with the same Idempotency-Key to a destination that answers 400 keep one letter per event', async () => {
  await ing?.stop('SIGKILL');
  const spool = mkdtempSync(join(tmpdir(), 'intake-e2e-dl-resend-'));
  spools.push(spool);
  receiver.refuse = () => true;
  ing = await start(spool);
  const events = [
    { source: 'resend-a', severity: 3 },
    { source: 'resend-b', severity: 4 },
    { source: 'resend-c', severity: 5 },
  ];
  const resend = () => sendDemo(events, { 'idempotency-key': 'resend-same-key' });
  for (let n = 1; n <= 5; n++) {
    const before = await deadLettered();
    await resend();
    let sentAtMs = Date.now();
    // Each re-send must reach the destination and be refused. The previous one's outbox row leaves
    // a moment after its refusal is counted (settles are committed in groups); a re-send in that
    // moment is the same row and is ignored, so it is sent again until this one is refused too.
    await waitFor(
      `re-send ${n} refused`,
      async () => {
        if ((await deadLettered()) > before) return true;
        if (Date.now() - sentAtMs > 1000) {
          await resend();
          sentAtMs = Date.now();
        }
        return false;
      },
      30_000,
      50,
    );
  }
  const listed = (await listLetters(ing, 'kind=delivery&limit=10000')).entries;
  const sources = listed.map((e) => String(e.event?.source)).sort();
  expect(sources).toEqual(['resend-a', 'resend-b', 'resend-c']);
});
