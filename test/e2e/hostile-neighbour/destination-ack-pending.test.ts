/**
 * Hostile-neighbour matrix, row "a bus destination's unacknowledged messages": the destination's
 * JetStream consumer may hold at most max_ack_pending messages unacknowledged (1,000 here), and
 * the server hands it nothing new past that. Tenant A's receiver on a shared destination hangs
 * while A's backlog of 1,200 requests (one message each) arrives; then tenant B sends steadily.
 * A holds its share of the in-flight events; the rest of its messages wait for the share on the
 * replica (bus/share-wait-list.ts) or go back to the bus with a delay, and either way they stay
 * unacknowledged: a nak, with or without a delay, leaves a message on the consumer's pending list
 * (checked against nats-server 2.12). So once A's messages are 1,000, B's, behind them in the
 * stream, are not handed out until A's receiver takes A's: one slow tenant delays the others.
 *
 * The first test states what must hold (B's events delivered within a bound beside A's backlog)
 * and is marked failing: it fails today, for the reason above; it passes once a namespace's
 * messages no longer take the consumer's room from others (then mark it `it`). The second holds
 * today and must keep holding: B's requests unharmed, and A's events, which only waited, are all
 * delivered once A's receiver answers, none dead-lettered (no attempt was spent by waiting).
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jest } from '@jest/globals';
import { waitFor } from '../../support/waiting.js';
import { listLetters } from '../dead-letters/support.js';
import { startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, startNats, untilDeadLettersOpen, type RunningNats } from '../support/nats-server.js';
import { expectUnharmed, steadyTenant, type SteadyResult } from './support.js';

jest.setTimeout(90_000);

const A_REQUESTS = 1_200;
const B_MS = 8_000;
const B_PER_SECOND = 10;
/** B's delivery p99 beside A's backlog: B's events wait for nothing of A's (the receiver takes B's at once). */
const B_DELIVERY_BOUND_MS = 3_000;

let nats: RunningNats;
let server: Server;
let ing: RunningIngester;
/** A's requests held open until released; afterwards A's events are taken at once. */
const hanging: Array<{ res: ServerResponse; sources: string[] }> = [];
let released = false;
const deliveredAtMs = new Map<string, number>();
const bSentAtMs = new Map<string, number>();
let beside: SteadyResult | undefined;

beforeAll(async () => {
  nats = await startNats();
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
      const events = (Array.isArray(parsed) ? parsed : [parsed]) as Array<{ source: string }>;
      if (events.some((e) => e.source.startsWith('a-')) && !released)
        return void hanging.push({ res, sources: events.map((e) => e.source) });
      for (const e of events) if (!deliveredAtMs.has(e.source)) deliveredAtMs.set(e.source, Date.now());
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  ing = await startIngester((c) => {
    handoffConfig(nats)(c);
    c.destinations = [
      {
        name: 'platform-hooks',
        http: { url: base, timeout: '60s' },
        // Its consumer's max_ack_pending: the larger of 1,000 and 4 x maxInFlight.
        delivery: { maxInFlight: 8, backoffMin: '100ms', backoffMax: '500ms', maxAttempts: 2 },
        circuitBreaker: { enabled: false },
      },
    ];
    (c.routes as unknown[]).push(
      tenantRoute('hn-ackpending-a', 'team-a', { destinations: ['platform-hooks'] }),
      tenantRoute('hn-ackpending-b', 'team-b', { destinations: ['platform-hooks'] }),
    );
  });
  await untilDeadLettersOpen(ing.adminUrl);
}, 60_000);

afterAll(async () => {
  for (const { res } of hanging.splice(0)) res.destroy();
  await ing?.stop('SIGKILL');
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await nats?.stop();
});

const post = (integration: string, source: string): Promise<number> =>
  fetch(`${ing.url}/events/webhook_${integration}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...tenantAuth(integration) },
    body: JSON.stringify({ source, severity: 3, description: 'ack pending' }),
    signal: AbortSignal.timeout(15_000),
  }).then(async (res) => {
    await res.arrayBuffer();
    return res.status;
  });

/** A's backlog, eight senders at once. */
async function backlogOfA(): Promise<number> {
  let next = 0;
  let accepted = 0;
  const sender = async (): Promise<void> => {
    for (let n = next++; n < A_REQUESTS; n = next++) if ((await post('hn-ackpending-a', `a-${n}`)) === 200) accepted++;
  };
  await Promise.all(Array.from({ length: 8 }, sender));
  return accepted;
}

const bLatencies = (): number[] =>
  [...bSentAtMs].map(([source, sent]) => (deliveredAtMs.get(source) ?? Infinity) - sent).sort((a, b) => a - b);
const p99 = (xs: number[]): number => xs[Math.min(xs.length - 1, Math.floor(0.99 * xs.length))] as number;

describe("hostile neighbour: a bus destination's unacknowledged messages", () => {
  it.failing("B's events are delivered promptly beside A's backlog of more messages than max_ack_pending", async () => {
    // B is present first (a namespace holds a share only while another sends there too).
    expect(await post('hn-ackpending-b', 'b-first')).toBe(200);
    await waitFor('B delivered', async () => deliveredAtMs.has('b-first'), 15_000, 50);
    const accepted = await backlogOfA();
    expect(accepted).toBe(A_REQUESTS);
    await waitFor("A's share in flight", async () => hanging.length >= 4, 15_000, 50);
    beside = await steadyTenant({
      url: `${ing.url}/events/webhook_hn-ackpending-b`,
      headers: { 'content-type': 'application/json', ...tenantAuth('hn-ackpending-b') },
      body: (seq) => {
        const source = `b-${seq}`;
        bSentAtMs.set(source, Date.now());
        return { body: JSON.stringify({ source, severity: 3, description: 'steady' }) };
      },
      perSecond: B_PER_SECOND,
      durationMs: B_MS,
      timeoutMs: 15_000,
      adminUrl: ing.adminUrl,
    });
    await waitFor(
      'B beside A delivered',
      async () => bLatencies().every(Number.isFinite),
      B_DELIVERY_BOUND_MS,
      50,
    ).catch(() => undefined);
    const latencies = bLatencies();
    const delivered = latencies.filter(Number.isFinite).length;
    console.log(
      `ack pending: B delivered ${delivered} of ${latencies.length} beside A's backlog of ${A_REQUESTS}, ` +
        `delivery p99 ${p99(latencies)} ms (bound ${B_DELIVERY_BOUND_MS} ms); A's requests hung ${hanging.length}`,
    );
    expect(p99(latencies)).toBeLessThanOrEqual(B_DELIVERY_BOUND_MS);
  });

  it("B's requests are unharmed, and A's events, which only waited, are all delivered, none dead-lettered", async () => {
    expect(beside).toBeDefined();
    expectUnharmed(beside as SteadyResult, { p99BoundMs: 2_000 });
    // A's receiver answers: the hung requests and everything after.
    released = true;
    for (const { res, sources } of hanging.splice(0)) {
      for (const source of sources) deliveredAtMs.set(source, Date.now());
      res.writeHead(200).end();
    }
    const allA = Array.from({ length: A_REQUESTS }, (_, i) => `a-${i}`);
    await waitFor(
      "A's and B's events delivered",
      async () => allA.every((s) => deliveredAtMs.has(s)) && bLatencies().every(Number.isFinite),
      45_000,
      200,
    ).catch(async (err: unknown) => {
      const metrics = await (await fetch(`${ing.adminUrl}/metrics`)).text();
      console.log(
        `A delivered ${allA.filter((s) => deliveredAtMs.has(s)).length}, B delivered ${bLatencies().filter(Number.isFinite).length} of ${bSentAtMs.size}\n` +
          metrics
            .split('\n')
            .filter((l) => /^intake_destination_(lag|held|waiting|retries|dead)/.test(l))
            .join('\n'),
      );
      throw err;
    });
    expect((await listLetters(ing)).count).toBe(0);
  });
});
