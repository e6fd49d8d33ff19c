/**
 * Hostile-neighbour matrix, row "a bus destination's unacknowledged messages": the destination's
 * JetStream consumer may hold at most max_ack_pending messages unacknowledged (1,000 here), and
 * the server hands it nothing new past that. Tenant A's receiver on a shared destination hangs
 * (or fails, so that A's circuit opens), while A's backlog of 1,200 requests (one message each)
 * arrives; then tenant B sends steadily. Every message of A's that waits stays unacknowledged
 * (kept for its share, in flight, or handed back with a delay: a nak leaves a message on the
 * consumer's pending list), so before A got a consumer of its own (bus/namespace-consumers.ts),
 * once A's messages were 1,000, B's, behind them in the stream, were not handed out until A's
 * receiver took A's: B got none of its events in time, in either mode.
 *
 * B's events are delivered within a bound beside A's backlog, B's requests are unharmed, and A's
 * events, which only waited, are all delivered once A's receiver answers, none dead-lettered (no
 * attempt was spent by waiting).
 */
import type { ServerResponse } from 'node:http';
import { jest } from '@jest/globals';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { waitFor } from '../../support/waiting.js';
import { listLetters } from '../dead-letters/support.js';
import { startEventHandler, type EventHandler } from '../support/event-receiver.js';
import { startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, startNats, untilDeadLettersOpen, type RunningNats } from '../support/nats-server.js';
import { expectUnharmed, steadyTenant } from './support.js';

jest.setTimeout(120_000);

const A_REQUESTS = 1_200;
/** 40 of B's events beside A's backlog. */
const B_MS = 2_000;
const B_PER_SECOND = 20;
/** B's delivery p99 beside A's backlog: B's events wait for nothing of A's (the receiver takes B's at once). */
const B_DELIVERY_BOUND_MS = 3_000;

let nats: RunningNats;

beforeAll(async () => {
  nats = await startNats();
}, 30_000);

afterAll(async () => {
  await nats?.stop();
});

type Mode = 'hangs' | 'fails';

describe.each<Mode>(['hangs', 'fails'])(
  "hostile neighbour: a bus destination's unacknowledged messages (A's receiver %s)",
  (mode) => {
    let server: EventHandler;
    let ing: RunningIngester;
    /** A's requests held open until released (mode hangs); afterwards A's events are taken at once. */
    const hanging: Array<{ res: ServerResponse; sources: string[] }> = [];
    let refusedA = 0;
    let released = false;
    const deliveredAtMs = new Map<string, number>();
    /** Events the receiver took more than once (one replica: a namespace's consumer takes none twice). */
    let twice = 0;
    const bSentAtMs = new Map<string, number>();
    const destination = `hooks-${mode}`;
    const a = `hn-ackpending-a-${mode}`;
    const b = `hn-ackpending-b-${mode}`;

    beforeAll(async () => {
      server = await startEventHandler((events, res) => {
        if (events.some((e) => e.source.startsWith('a-')) && !released) {
          if (mode === 'hangs') return void hanging.push({ res, sources: events.map((e) => e.source) });
          refusedA++;
          return void res.writeHead(503).end('down for A');
        }
        for (const e of events)
          if (!deliveredAtMs.has(e.source)) deliveredAtMs.set(e.source, Date.now());
          else twice++;
        res.writeHead(200).end();
      });
      const base = server.url;
      ing = await startIngester((c) => {
        handoffConfig(nats)(c);
        c.destinations = [
          {
            name: destination,
            http: { url: base, timeout: '60s' },
            // Its consumer's max_ack_pending: the larger of 1,000 and 4 x maxInFlight.
            delivery: {
              maxInFlight: 8,
              backoffMin: '100ms',
              backoffMax: '500ms',
              // Hanging, A's events only wait: two attempts would dead-letter one charged for waiting.
              maxAttempts: mode === 'hangs' ? 2 : 100,
            },
            // Failing, A's circuit opens (B's stays closed) and A's messages are held for its cool-off.
            circuitBreaker: mode === 'hangs' ? { enabled: false } : { consecutiveFailures: 3, openFor: '2s' },
          },
        ];
        (c.routes as unknown[]).push(
          tenantRoute(a, 'team-a', { destinations: [destination] }),
          tenantRoute(b, 'team-b', { destinations: [destination] }),
        );
      });
      await untilDeadLettersOpen(ing.adminUrl);
    }, 60_000);

    afterAll(async () => {
      for (const { res } of hanging.splice(0)) res.destroy();
      await ing?.stop('SIGKILL');
      await server?.close();
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
        for (let n = next++; n < A_REQUESTS; n = next++) if ((await post(a, `a-${n}`)) === 200) accepted++;
      };
      await Promise.all(Array.from({ length: 8 }, sender));
      return accepted;
    }

    const bLatencies = (): number[] =>
      [...bSentAtMs].map(([source, sent]) => (deliveredAtMs.get(source) ?? Infinity) - sent).sort((x, y) => x - y);
    const p99 = (xs: number[]): number => xs[Math.min(xs.length - 1, Math.floor(0.99 * xs.length))] as number;

    it("delivers B's events promptly beside A's backlog of more messages than max_ack_pending, and every one of A's after", async () => {
      // B is present first (a namespace holds a share only while another sends there too).
      expect(await post(b, 'b-first')).toBe(200);
      await waitFor('B delivered', async () => deliveredAtMs.has('b-first'), 15_000, 50);
      expect(await backlogOfA()).toBe(A_REQUESTS);
      await waitFor(
        "A's receiver holding or refusing A",
        async () => (mode === 'hangs' ? hanging.length >= 4 : refusedA >= 3),
        15_000,
        50,
      );
      const beside = await steadyTenant({
        url: `${ing.url}/events/webhook_${b}`,
        headers: { 'content-type': 'application/json', ...tenantAuth(b) },
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
      const nc = await connect({ servers: nats.url });
      const consumers: string[] = [];
      for await (const info of (await jetstreamManager(nc)).consumers.list('INTAKE_EVENTS')) consumers.push(info.name);
      await nc.close();
      console.log(
        `ack pending (A's receiver ${mode}): B delivered ${latencies.filter(Number.isFinite).length} of ${latencies.length} ` +
          `beside A's backlog of ${A_REQUESTS}, delivery p99 ${p99(latencies)} ms (bound ${B_DELIVERY_BOUND_MS} ms); ` +
          `A's requests hung ${hanging.length}, refused ${refusedA}; consumers ${consumers.filter((n) => n.includes(destination)).join(', ')}`,
      );
      expectUnharmed(beside, { p99BoundMs: 2_000 });
      expect(p99(latencies)).toBeLessThanOrEqual(B_DELIVERY_BOUND_MS);
      // A got a consumer of its own; B did not.
      expect(consumers).toContain(`intake-${destination}@team-a`);
      expect(consumers).not.toContain(`intake-${destination}@team-b`);

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
      );
      // Nothing waited for an attempt's sake: none is dead-lettered.
      expect((await listLetters(ing)).count).toBe(0);
      expect(twice).toBe(0);
    });
  },
);
