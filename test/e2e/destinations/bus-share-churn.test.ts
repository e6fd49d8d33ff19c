/**
 * A namespace at its share of a shared destination's in-flight events, with the bus: its messages
 * wait on the replica that fetched them (in progress for the server) until its share has room,
 * instead of being handed back for the share and redelivered every second, again and again.
 * Measured through the built ingester and a real nats-server by the events handed back for the
 * share (`intake_destination_held_total{reason="namespace_share"}`) and the consumer's redelivered
 * messages, while the receiver hangs on A's events: B's keep being delivered, and nothing is
 * dead-lettered (none of A's events failed). With a short `timeout` (ack_wait 5 s), the kept
 * messages outlive their ack_wait: told to be in progress, only those that failed come back.
 */
import type { ServerResponse } from 'node:http';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { waitFor } from '../../support/waiting.js';
import { startEventHandler, type EventHandler } from '../support/event-receiver.js';
import { post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import {
  handoffConfig,
  metricValue,
  startNats,
  untilDeadLettersOpen,
  type RunningNats,
} from '../support/nats-server.js';
import { listLetters } from '../dead-letters/support.js';

const A_REQUESTS = 40;
const B_REQUESTS = 12;

let nats: RunningNats;
let nc: NatsConnection;

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
}, 30_000);

afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

interface Case {
  /** The receiver's timeout: a hung request of A's fails after it (ack_wait is 4 x it + 1 s, at least 5 s). */
  timeout: string;
  maxAttempts: number;
  /** B's requests, one every 500 ms. */
  bRequests: number;
}

describe.each<[string, Case]>([
  // Few attempts: a redelivery for the share counted as one would dead-letter A's events.
  ['A hung for the whole test', { timeout: '30s', maxAttempts: 2, bRequests: B_REQUESTS }],
  // A's hung requests fail every second; its kept messages wait past their 5 s ack_wait.
  ['A failing after 1 s, kept past ack_wait', { timeout: '1s', maxAttempts: 100, bRequests: 2 * B_REQUESTS }],
])('a namespace at its share of a bus destination: %s', (label, setting) => {
  let server: EventHandler;
  let ing: RunningIngester;
  const delivered = new Set<string>();
  const open: ServerResponse[] = [];
  let hung = 0;
  const consumer = `intake-hooks-${setting.timeout}`;
  // In every source: the events of the two cases differ (the stream would store a repeat once).
  const t = setting.timeout;

  beforeAll(async () => {
    server = await startEventHandler((events, res) => {
      // A's events hang until the ingester's timeout; B's are taken at once.
      if (events.some((e) => e.source.startsWith('a-'))) {
        hung++;
        return void open.push(res);
      }
      for (const e of events) delivered.add(e.source);
      res.writeHead(200).end();
    });
    const base = server.url;
    ing = await startIngester((c) => {
      handoffConfig(nats)(c);
      c.destinations = [
        {
          name: `hooks-${setting.timeout}`,
          http: { url: base, timeout: setting.timeout },
          delivery: { maxInFlight: 4, backoffMin: '200ms', backoffMax: '1s', maxAttempts: setting.maxAttempts },
          circuitBreaker: { enabled: false },
        },
      ];
      (c.routes as unknown[]).push(
        tenantRoute('bus-churn-a', 'team-a', { destinations: [`hooks-${setting.timeout}`] }),
        tenantRoute('bus-churn-b', 'team-b', { destinations: [`hooks-${setting.timeout}`] }),
      );
    });
    await untilDeadLettersOpen(ing.adminUrl);
  }, 60_000);

  afterAll(async () => {
    await ing?.stop('SIGKILL');
    await server?.close();
  });

  const send = async (integration: string, source: string): Promise<void> => {
    const res = await post(
      `${ing.url}/events/webhook_${integration}`,
      { source, severity: 3 },
      tenantAuth(integration),
    );
    expect(res.status).toBe(200);
  };

  it("keeps A's messages waiting, without handing them back to the bus again and again", async () => {
    // B is present first; then A's backlog arrives, its receiver hanging on every one of A's events.
    await send('bus-churn-b', `b-${t}-first`);
    await waitFor('B delivered', async () => delivered.has(`b-${t}-first`), 15_000, 50);
    for (let i = 0; i < A_REQUESTS; i++) await send('bus-churn-a', `a-${t}-${i}`);
    await waitFor("A's share in flight", async () => hung >= 2, 15_000, 50);
    const started = Date.now();
    // B keeps sending beside A's backlog, and is delivered.
    for (let i = 0; i < setting.bRequests; i++) {
      await send('bus-churn-b', `b-${t}-${i}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    await waitFor(
      "B's events delivered beside A's backlog",
      async () => Array.from({ length: setting.bRequests }, (_, i) => `b-${t}-${i}`).every((s) => delivered.has(s)),
      15_000,
      50,
    );
    const seconds = (Date.now() - started) / 1000;
    const heldForShare =
      (await metricValue(
        ing.adminUrl,
        `intake_destination_held_total{destination="hooks-${setting.timeout}",reason="namespace_share"}`,
      )) ?? 0;
    // The gauge of messages waiting for their namespace's share: A's backlog, less its share in flight.
    const waiting =
      (await metricValue(
        ing.adminUrl,
        `intake_destination_waiting_for_share{destination="hooks-${setting.timeout}"}`,
      )) ?? -1;
    const jsm = await jetstreamManager(nc);
    const redelivered = (await jsm.consumers.info('INTAKE_EVENTS', consumer)).num_redelivered;
    const letters = await listLetters(ing);
    console.log(
      `bus share churn (${label}): ${heldForShare} events of A handed back for its share, ${redelivered} messages ` +
        `redelivered, in ${seconds.toFixed(1)} s, ${waiting} waiting for the share (backlog ${A_REQUESTS}, A's requests ${hung}, dead letters ${letters.count})`,
    );
    // Handed back every second, A's backlog would come back about once a second each (hundreds of
    // holds, nearly every message redelivered); waiting on the replica, none or a few.
    expect(heldForShare).toBeLessThanOrEqual(A_REQUESTS / 4);
    // Only the messages of A's requests that failed come back (none while they hang); a kept
    // message whose ack_wait ran out would come back too.
    expect(redelivered).toBeLessThanOrEqual(setting.timeout === '30s' ? A_REQUESTS / 4 : hung);
    if (setting.timeout === '30s') expect(hung).toBeLessThanOrEqual(4);
    if (setting.timeout === '30s') expect(waiting).toBeGreaterThanOrEqual(A_REQUESTS / 2);
    else expect(waiting).toBeGreaterThanOrEqual(0);
    // A's events only hung or failed fewer times than their attempts: none is dead-lettered.
    expect(letters.count).toBe(0);
    for (const res of open.splice(0)) res.destroy();
  }, 90_000);
});
