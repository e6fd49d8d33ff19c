/**
 * Hostile-neighbour matrix, row "a shared destination's circuit breaker": the platform's HTTP
 * destination carries the events of two namespaces. Namespace A sends events this receiver
 * cannot read, and it answers each of them 500 at once (a receiver in trouble as far as one
 * request can tell); namespace B's events to the same receiver are fine. A's failures open A's
 * circuit only: B's events keep being delivered, at B's usual delivery latency, and B's requests
 * are unharmed (no unearned refusal, p99 near its baseline, the replica ready).
 *
 * Before each namespace had its own circuit, A's five failures opened the destination's one
 * circuit, and every event of B's waited out the 30 s cool-off in the outbox.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { jest } from '@jest/globals';
import { waitFor } from '../../support/waiting.js';
import { startEventHandler } from '../support/event-receiver.js';
import { startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { expectUnharmed, steadyTenant, type SteadyResult } from './support.js';

jest.setTimeout(90_000);

const BASELINE_MS = 2_000;
const ATTACK_MS = 5_000;
const B_PER_SECOND = 10;
const A_PER_SECOND = 20;

/** The shared receiver: 500 at once for A's events, 200 for B's; B's arrival times by source. */
interface SharedReceiver {
  url: string;
  arrivedAtMs: Map<string, number>;
  failedForA: number;
  close(): Promise<void>;
}

async function startSharedReceiver(): Promise<SharedReceiver> {
  const r = { arrivedAtMs: new Map<string, number>(), failedForA: 0 };
  const server = await startEventHandler((events, res) => {
    if (events.some((e) => e.source.startsWith('a-'))) {
      r.failedForA++;
      res.writeHead(500).end('{"error":"cannot read this payload"}');
      return;
    }
    for (const e of events) if (!r.arrivedAtMs.has(e.source)) r.arrivedAtMs.set(e.source, Date.now());
    res.writeHead(200).end();
  });
  return Object.assign(r, { url: `${server.url}/hooks`, close: server.close });
}

const dir = mkdtempSync(join(tmpdir(), 'intake-hn-breaker-'));
let receiver: SharedReceiver;
let ing: RunningIngester;

beforeAll(async () => {
  receiver = await startSharedReceiver();
  ing = await startIngester((c) => {
    c.spool = { path: dir };
    // The defaults: opens on 5 failures in a row, 30 s cool-off.
    c.destinations = [{ name: 'platform-hooks', http: { url: receiver.url, timeout: '2s' } }];
    (c.routes as unknown[]).push(
      tenantRoute('hn-breaker-a', 'team-a', { destinations: ['platform-hooks'] }),
      tenantRoute('hn-breaker-b', 'team-b', { destinations: ['platform-hooks'] }),
    );
  });
}, 60_000);

afterAll(async () => {
  await ing?.stop('SIGKILL'); // the row is over: a graceful stop would drain what A left in flight
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** B: one event a request, its send time in the event, so its delivery latency can be read. */
const tenantB = (prefix: string, durationMs: number, sentAtMs: Map<string, number>): Promise<SteadyResult> =>
  steadyTenant({
    url: `${ing.url}/events/webhook_hn-breaker-b`,
    headers: { 'content-type': 'application/json', ...tenantAuth('hn-breaker-b') },
    body: (seq) => {
      const source = `b-${prefix}-${seq}`;
      sentAtMs.set(source, Date.now());
      return { body: JSON.stringify({ source, severity: 3, description: 'steady' }) };
    },
    perSecond: B_PER_SECOND,
    durationMs,
    timeoutMs: 15_000,
    adminUrl: ing.adminUrl,
  });

/** A: events the receiver fails on, at A_PER_SECOND until `untilMs`. */
async function attack(untilMs: number): Promise<number> {
  let sent = 0;
  for (let n = 0; performance.now() < untilMs; n++) {
    const started = performance.now();
    await fetch(`${ing.url}/events/webhook_hn-breaker-a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...tenantAuth('hn-breaker-a') },
      body: JSON.stringify({ source: `a-bad-${n}`, severity: 3, description: 'unreadable for this receiver' }),
      signal: AbortSignal.timeout(10_000),
    })
      .then((res) => res.arrayBuffer())
      .then(() => sent++)
      .catch(() => undefined);
    const wait = started + 1000 / A_PER_SECOND - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  return sent;
}

/** B's delivery latencies (arrival at the receiver less send time), ms, sorted; Infinity for one not delivered. */
function deliveryLatencies(sentAtMs: Map<string, number>): number[] {
  return [...sentAtMs]
    .map(([source, sent]) => (receiver.arrivedAtMs.get(source) ?? Infinity) - sent)
    .sort((a, b) => a - b);
}
const p99 = (xs: number[]): number => xs[Math.min(xs.length - 1, Math.floor(0.99 * xs.length))] as number;

describe('hostile neighbour: a shared destination’s circuit breaker', () => {
  it("A's events failing at the shared receiver open A's circuit, not B's: B's events are delivered as before", async () => {
    const aloneSent = new Map<string, number>();
    const alone = await tenantB('alone', BASELINE_MS, aloneSent);
    expectUnharmed(alone, { p99BoundMs: 2_000 });
    await waitFor('B alone delivered', async () => deliveryLatencies(aloneSent).every(Number.isFinite), 15_000, 50);
    const aloneDelivery = p99(deliveryLatencies(aloneSent));

    const besideSent = new Map<string, number>();
    const attacking = attack(performance.now() + ATTACK_MS);
    const beside = await tenantB('beside', ATTACK_MS, besideSent);
    const aSent = await attacking;
    // Every event of B's arrives, and soon: not after a cool-off (30 s) it did not earn.
    await waitFor('B beside A delivered', async () => deliveryLatencies(besideSent).every(Number.isFinite), 15_000, 50);
    const besideDelivery = p99(deliveryLatencies(besideSent));
    const deliveryBoundMs = Math.max(2_000, 4 * aloneDelivery);
    const p99BoundMs = Math.max(1_000, 4 * alone.p99Ms);
    console.log(
      `shared breaker: B delivery p99 alone ${aloneDelivery.toFixed(0)} ms, beside A ${besideDelivery.toFixed(0)} ms ` +
        `(bound ${deliveryBoundMs.toFixed(0)} ms); B requests p99 alone ${alone.p99Ms.toFixed(1)} ms, beside ${beside.p99Ms.toFixed(1)} ms; ` +
        `A sent ${aSent}, the receiver failed ${receiver.failedForA} of A's requests`,
    );
    expectUnharmed(beside, { p99BoundMs });
    expect(besideDelivery).toBeLessThanOrEqual(deliveryBoundMs);
    // A's circuit opened: the receiver saw a few of A's requests, not one per event and retry.
    expect(receiver.failedForA).toBeGreaterThanOrEqual(5);
    expect(receiver.failedForA).toBeLessThan(aSent);
  });
});
