/**
 * Waiting for its share spends no attempt, with two replicas on one bus: a namespace's messages
 * handed back for its share would be redelivered to either replica, and the one that did not hand
 * them back counts those redeliveries as attempts, so an event that never failed would be
 * dead-lettered on its first failure. Kept on the replica that fetched them until the share has
 * room, they are delivered after a first failure like any other event.
 */
import type { ServerResponse } from 'node:http';
import { waitFor } from '../../support/waiting.js';
import { startEventHandler, type EventHandler } from '../support/event-receiver.js';
import { post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, startNats, untilDeadLettersOpen, type RunningNats } from '../support/nats-server.js';
import { listLetters } from '../dead-letters/support.js';

const A_REQUESTS = 24;

let nats: RunningNats;
let server: EventHandler;
const replicas: RunningIngester[] = [];
const delivered = new Set<string>();
/** A's requests held open until released; then each of A's events fails once, then is taken. */
const hanging: Array<{ res: ServerResponse; sources: string[] }> = [];
let released = false;
const failedOnce = new Set<string>();

function answer(events: Array<{ source: string }>, res: ServerResponse): void {
  const a = events.filter((e) => e.source.startsWith('a-'));
  if (a.length > 0 && !released) return void hanging.push({ res, sources: a.map((e) => e.source) });
  const fresh = a.filter((e) => !failedOnce.has(e.source));
  if (fresh.length > 0) {
    for (const e of fresh) failedOnce.add(e.source);
    return void res.writeHead(500).end('not yet');
  }
  for (const e of events) delivered.add(e.source);
  res.writeHead(200).end();
}

beforeAll(async () => {
  nats = await startNats();
  server = await startEventHandler(answer);
  const base = server.url;
  for (let i = 0; i < 2; i++) {
    const ing = await startIngester((c) => {
      handoffConfig(nats)(c);
      c.destinations = [
        {
          name: 'hooks',
          http: { url: base, timeout: '30s' },
          // Two attempts: a first failure is retried once; a redelivery counted as an attempt is not.
          delivery: { maxInFlight: 4, backoffMin: '100ms', backoffMax: '200ms', maxAttempts: 2 },
          circuitBreaker: { enabled: false },
        },
      ];
      (c.routes as unknown[]).push(
        tenantRoute('attempts-a', 'team-a', { destinations: ['hooks'] }),
        tenantRoute('attempts-b', 'team-b', { destinations: ['hooks'] }),
      );
    });
    replicas.push(ing);
    await untilDeadLettersOpen(ing.adminUrl);
  }
}, 90_000);

afterAll(async () => {
  for (const ing of replicas) await ing.stop('SIGKILL');
  await server?.close();
  await nats?.stop();
});

const send = async (integration: string, source: string, i = 0): Promise<void> => {
  const ing = replicas[i % 2] as RunningIngester;
  const res = await post(`${ing.url}/events/webhook_${integration}`, { source, severity: 3 }, tenantAuth(integration));
  expect(res.status).toBe(200);
};

it("dead-letters none of a namespace's events that waited for its share, across two replicas", async () => {
  // B sends steadily (both replicas deliver some of it, so B is present on both); A's backlog
  // arrives and its receiver hangs on A's events.
  let sendingB = true;
  let b = 0;
  const bSender = (async () => {
    while (sendingB) {
      await send('attempts-b', `b-${b}`, b);
      b++;
      await new Promise((r) => setTimeout(r, 150));
    }
  })();
  await waitFor('B delivered', async () => delivered.size >= 4, 15_000, 50);
  for (let i = 0; i < A_REQUESTS; i++) await send('attempts-a', `a-${i}`, i);
  await waitFor("A's share in flight", async () => hanging.length >= 2, 15_000, 50);
  // A's backlog waits for its share for a few seconds (handed back, it would bounce between replicas).
  await new Promise((r) => setTimeout(r, 6000));
  sendingB = false;
  await bSender;
  // The receiver comes back for A: the hung requests fail, and every event of A fails once.
  released = true;
  for (const { res, sources } of hanging.splice(0)) {
    for (const s of sources) failedOnce.add(s);
    res.writeHead(500).end('not yet');
  }
  const allA = Array.from({ length: A_REQUESTS }, (_, i) => `a-${i}`);
  const letters = async (): Promise<number> => {
    let n = 0;
    for (const ing of replicas) n = Math.max(n, (await listLetters(ing)).count);
    return n;
  };
  await waitFor(
    "A's events delivered or dead-lettered",
    async () => allA.filter((s) => delivered.has(s)).length + (await letters()) >= A_REQUESTS,
    45_000,
    100,
  );
  const deadLettered = await letters();
  console.log(
    `bus share attempts: ${allA.filter((s) => delivered.has(s)).length} of A delivered, ${deadLettered} dead-lettered (two replicas, maxAttempts 2)`,
  );
  expect(deadLettered).toBe(0);
  expect(allA.every((s) => delivered.has(s))).toBe(true);
}, 120_000);
