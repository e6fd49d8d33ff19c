/**
 * Hostile-neighbour matrix, row "a destination's in-flight slots": A's receivers hang while B's
 * events keep their delivery latency.
 *   - A's own receiver never answers (each request times out): it has its own destination, and
 *     B's own receiver's deliveries do not notice.
 *   - The platform's shared HTTP destination (maxInFlight 8, its breaker off so that only the
 *     slots are tested) hangs on A's events and answers B's at once: A's requests may hold at most
 *     half the slots while B sends there, so B's events still find one.
 * B's requests are unharmed too (no unearned refusal, p99 near its baseline, the replica ready).
 *
 * Before namespaces had shares of a destination's in-flight events, A's hanging requests took all
 * eight slots and B's events to the shared destination waited behind them for A's timeouts and
 * retries.
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

/**
 * Receivers on one server, by path: `/a-own` never answers, `/shared` never answers A's events
 * and answers B's at once, `/b-own` answers at once. B's arrival times, by path and source.
 */
interface Receivers {
  base: string;
  arrivedAtMs: Record<'shared' | 'b-own', Map<string, number>>;
  hung: number;
  close(): Promise<void>;
}

async function startReceivers(): Promise<Receivers> {
  const r = { arrivedAtMs: { shared: new Map<string, number>(), 'b-own': new Map<string, number>() }, hung: 0 };
  const server = await startEventHandler((events, res, req) => {
    if (req.url === '/a-own' || events.some((e) => e.source.startsWith('a-'))) {
      // Hangs: the ingester's timeout ends the request.
      r.hung++;
      return;
    }
    const seen = r.arrivedAtMs[req.url === '/shared' ? 'shared' : 'b-own'];
    for (const e of events) if (!seen.has(e.source)) seen.set(e.source, Date.now());
    res.writeHead(200).end();
  });
  return Object.assign(r, { base: server.url, close: server.close });
}

const dir = mkdtempSync(join(tmpdir(), 'intake-hn-inflight-'));
let receivers: Receivers;
let ing: RunningIngester;

beforeAll(async () => {
  receivers = await startReceivers();
  ing = await startIngester((c) => {
    c.spool = { path: dir };
    const http = (path: string) => ({ url: `${receivers.base}${path}`, timeout: '3s' });
    c.destinations = [
      {
        name: 'platform-hooks',
        http: http('/shared'),
        delivery: { maxInFlight: 8, backoffMin: '200ms', backoffMax: '1s', maxAttempts: 100 },
        circuitBreaker: { enabled: false },
      },
      { name: 'a-own', http: http('/a-own'), circuitBreaker: { enabled: false } },
      { name: 'b-own', http: http('/b-own') },
    ];
    (c.routes as unknown[]).push(
      tenantRoute('hn-inflight-a', 'team-a', { destinations: ['platform-hooks', 'a-own'] }),
      tenantRoute('hn-inflight-b', 'team-b', { destinations: ['platform-hooks', 'b-own'] }),
    );
  });
}, 60_000);

afterAll(async () => {
  await ing?.stop('SIGKILL'); // the row is over: a graceful stop would drain what A left in flight
  await receivers?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** B: one event a request, its send time noted, so its delivery latency can be read. */
const tenantB = (prefix: string, durationMs: number, sentAtMs: Map<string, number>): Promise<SteadyResult> =>
  steadyTenant({
    url: `${ing.url}/events/webhook_hn-inflight-b`,
    headers: { 'content-type': 'application/json', ...tenantAuth('hn-inflight-b') },
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

/** A: events its receivers hang on, at A_PER_SECOND until `untilMs`. */
async function attack(untilMs: number): Promise<number> {
  let sent = 0;
  for (let n = 0; performance.now() < untilMs; n++) {
    const started = performance.now();
    await fetch(`${ing.url}/events/webhook_hn-inflight-a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...tenantAuth('hn-inflight-a') },
      body: JSON.stringify({ source: `a-slow-${n}`, severity: 3, description: 'hangs its receivers' }),
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

/** B's delivery latencies at one receiver (arrival less send time), ms, sorted; Infinity for one not delivered. */
function latencies(where: 'shared' | 'b-own', sentAtMs: Map<string, number>): number[] {
  return [...sentAtMs]
    .map(([source, sent]) => (receivers.arrivedAtMs[where].get(source) ?? Infinity) - sent)
    .sort((a, b) => a - b);
}
const p99 = (xs: number[]): number => xs[Math.min(xs.length - 1, Math.floor(0.99 * xs.length))] as number;
const allDelivered = (sentAtMs: Map<string, number>): boolean =>
  latencies('shared', sentAtMs).every(Number.isFinite) && latencies('b-own', sentAtMs).every(Number.isFinite);

describe("hostile neighbour: a destination's in-flight slots", () => {
  it("A's hanging receivers (its own, and the shared one on A's events) do not slow B's deliveries", async () => {
    const aloneSent = new Map<string, number>();
    const alone = await tenantB('alone', BASELINE_MS, aloneSent);
    expectUnharmed(alone, { p99BoundMs: 2_000 });
    await waitFor('B alone delivered', async () => allDelivered(aloneSent), 15_000, 50);
    const aloneShared = p99(latencies('shared', aloneSent));
    const aloneOwn = p99(latencies('b-own', aloneSent));

    const besideSent = new Map<string, number>();
    const attacking = attack(performance.now() + ATTACK_MS);
    const beside = await tenantB('beside', ATTACK_MS, besideSent);
    const aSent = await attacking;
    // Long enough for B's events to arrive if they only waited their turn, short of A's timeouts
    // and retries taking every slot for the rest of the run.
    await waitFor('B beside A delivered', async () => allDelivered(besideSent), 10_000, 50).catch(() => undefined);
    const besideShared = p99(latencies('shared', besideSent));
    const besideOwn = p99(latencies('b-own', besideSent));
    const bound = (alone: number): number => Math.max(1_500, 4 * alone);
    const p99BoundMs = Math.max(1_000, 4 * alone.p99Ms);
    console.log(
      `in-flight slots: B delivery p99 to the shared receiver alone ${aloneShared.toFixed(0)} ms, beside A ${besideShared.toFixed(0)} ms ` +
        `(bound ${bound(aloneShared).toFixed(0)} ms); to its own alone ${aloneOwn.toFixed(0)} ms, beside A ${besideOwn.toFixed(0)} ms ` +
        `(bound ${bound(aloneOwn).toFixed(0)} ms); B requests p99 alone ${alone.p99Ms.toFixed(1)} ms, beside ${beside.p99Ms.toFixed(1)} ms; ` +
        `A sent ${aSent}, requests hung ${receivers.hung}`,
    );
    expectUnharmed(beside, { p99BoundMs });
    expect(besideOwn).toBeLessThanOrEqual(bound(aloneOwn));
    expect(besideShared).toBeLessThanOrEqual(bound(aloneShared));
    // A really held the shared receiver: more of its requests hung than the slots it may hold.
    expect(receivers.hung).toBeGreaterThan(8);
  });
});
