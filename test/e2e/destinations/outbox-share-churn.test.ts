/**
 * A namespace at its share of a shared destination's in-flight events, standalone (the outbox):
 * its backlog waits in the outbox, unleased, until its share has room, instead of being leased,
 * handed to the dispatcher, refused for the share and given back, again and again (every row of
 * it, every second). Measured through the built ingester by the events handed back for the share
 * (`intake_destination_held_total{reason="namespace_share"}`), while the receiver hangs on A's
 * events and the other namespace's keep being delivered.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../support/waiting.js';
import { startEventHandler, type EventHandler } from '../support/event-receiver.js';
import { post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { metricValue } from '../support/nats-server.js';

const A_REQUESTS = 40;
const B_REQUESTS = 12;

const dir = mkdtempSync(join(tmpdir(), 'intake-share-churn-'));
let server: EventHandler;
let base: string;
let ing: RunningIngester;
const delivered = new Set<string>();
let hung = 0;

beforeAll(async () => {
  server = await startEventHandler((events, res) => {
    // A's events hang until the ingester's timeout; B's are taken at once.
    if (events.some((e) => e.source.startsWith('a-'))) return void hung++;
    for (const e of events) delivered.add(e.source);
    res.writeHead(200).end();
  });
  base = server.url;
  ing = await startIngester((c) => {
    c.spool = { path: dir };
    c.destinations = [
      {
        name: 'hooks',
        http: { url: base, timeout: '30s' },
        delivery: { maxInFlight: 4, backoffMin: '200ms', backoffMax: '1s', maxAttempts: 100 },
        circuitBreaker: { enabled: false },
      },
    ];
    (c.routes as unknown[]).push(
      tenantRoute('churn-a', 'team-a', { destinations: ['hooks'] }),
      tenantRoute('churn-b', 'team-b', { destinations: ['hooks'] }),
    );
  });
}, 60_000);

afterAll(async () => {
  await ing?.stop('SIGKILL');
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const send = async (integration: string, source: string): Promise<void> => {
  const res = await post(`${ing.url}/events/webhook_${integration}`, { source, severity: 3 }, tenantAuth(integration));
  expect(res.status).toBe(200);
};

it("leaves a namespace's backlog in the outbox while it holds its share, without leasing it again and again", async () => {
  // B is present first; then A's backlog arrives, its receiver hanging on every one of A's events.
  await send('churn-b', 'b-first');
  await waitFor('B delivered', async () => delivered.has('b-first'), 15_000, 50);
  for (let i = 0; i < A_REQUESTS; i++) await send('churn-a', `a-${i}`);
  await waitFor("A's share in flight", async () => hung >= 2, 15_000, 50);
  const started = Date.now();
  // B keeps sending beside A's backlog for about six seconds, and is delivered.
  for (let i = 0; i < B_REQUESTS; i++) {
    await send('churn-b', `b-${i}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  await waitFor(
    "B's events delivered beside A's backlog",
    async () => Array.from({ length: B_REQUESTS }, (_, i) => `b-${i}`).every((s) => delivered.has(s)),
    15_000,
    50,
  );
  const seconds = (Date.now() - started) / 1000;
  const heldForShare =
    (await metricValue(ing.adminUrl, 'intake_destination_held_total{destination="hooks",reason="namespace_share"}')) ??
    0;
  console.log(
    `outbox share churn: ${heldForShare} events of A handed back for its share in ${seconds.toFixed(1)} s (backlog ${A_REQUESTS}, hung ${hung})`,
  );
  // Handed out again and again, A's backlog would be handed back about once a second each; waiting
  // in the outbox, at most the few leased before B's share applied.
  expect(heldForShare).toBeLessThanOrEqual(A_REQUESTS);
  expect(hung).toBeLessThanOrEqual(4);
}, 90_000);
