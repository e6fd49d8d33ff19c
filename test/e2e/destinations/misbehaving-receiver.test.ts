/**
 * Every request to a destination is bounded: against a receiver that sends a
 * status line and then one header byte a second, one that sends 200 and then one body byte a
 * second, and one that streams hundreds of MB of answer, the built ingester aborts each request at
 * its total deadline (`http.timeout`) or its answer cap, retries with backoff, keeps at most one
 * request per event in flight (a request held past the lease used to be re-sent beside the first
 * one, until maxInFlight requests hung for good), and delivers every event once the receiver
 * behaves. Standalone: the outbox in the storage directory is the queue.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../support/waiting.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import {
  startMisbehavingReceiver,
  peakRssMiB,
  type MisbehavingReceiver,
  type ReceivedCall,
} from '../support/misbehaving-receiver.js';
import { metricValue } from '../support/nats-server.js';

const TIMEOUT_MS = 1000;
/** The lease (claim timeout): 4 x the timeout + 1 s, at least 5 s. */
const LEASE_MS = Math.max(5000, 4 * TIMEOUT_MS + 1000);
const spoolDir = mkdtempSync(join(tmpdir(), 'intake-slow-receiver-'));
let receiver: MisbehavingReceiver;
let ing: RunningIngester;

beforeAll(async () => {
  receiver = await startMisbehavingReceiver();
  ing = await startIngester((c) => {
    c.spool = { path: spoolDir };
    c.destinations = [
      {
        name: 'slow',
        default: true,
        http: { url: receiver.url, timeout: `${TIMEOUT_MS}ms` },
        delivery: { maxAttempts: 1000, backoffMin: '200ms', backoffMax: '1s', maxInFlight: 64 },
        // This file is about each request's bounds and retries: five timeouts in a row would open
        // the circuit for 30 s (destinations/protection.test.ts tests the breaker).
        circuitBreaker: { enabled: false },
      },
    ];
  });
}, 60_000);

afterAll(async () => {
  await ing?.stop('SIGKILL');
  await receiver?.close();
  rmSync(spoolDir, { recursive: true, force: true });
});

const send = async (events: unknown[]): Promise<string[]> => {
  const res = await post(`${ing.url}/events/webhook_demo`, events, { authorization: basic(DEMO.user, DEMO.password) });
  expect(res.status).toBe(200);
  return events.map((e) => (e as { source: string }).source);
};
const sourceOf = (call: ReceivedCall): string => (JSON.parse(call.body.toString('utf8')) as { source: string }).source;
const callsOf = (sources: readonly string[]): ReceivedCall[] =>
  receiver.calls.filter((c) => sources.includes(sourceOf(c)));
const delivered = async (): Promise<number> =>
  (await metricValue(ing.adminUrl, 'intake_destination_delivered_total{destination="slow"}')) ?? 0;

it('aborts requests whose answer headers never complete at the deadline, retries them, keeps one request per event in flight, and delivers all once the receiver behaves', async () => {
  receiver.behaviour = 'trickle-headers';
  receiver.peakOpen = receiver.open;
  const sources = await send(Array.from({ length: 5 }, (_, i) => ({ source: `loris-${i}`, severity: 3 })));
  // Longer than two leases: an unbounded request would be handed out again beside itself.
  const heldMs = 2 * LEASE_MS + 1000;
  await new Promise((r) => setTimeout(r, heldMs));
  const held = callsOf(sources);
  const peak = receiver.peakOpen;
  receiver.behaviour = 'ok';
  process.stdout.write(
    `slow-loris destination: ${held.length} requests in ${heldMs / 1000} s for 5 events, at most ${peak} open at once, peak RSS ${peakRssMiB(ing.child.pid as number).toFixed(0)} MiB\n`,
  );
  // At most one request per event at a time (5 events, maxInFlight 64).
  expect(peak).toBeLessThanOrEqual(5);
  // Each request aborted by the sender at the 2 s deadline (not by the receiver's 120 s limit).
  const closed = held.filter((c) => c.closedAtMs !== undefined);
  expect(closed.length).toBeGreaterThanOrEqual(10);
  for (const c of closed) expect((c.closedAtMs as number) - c.atMs).toBeLessThan(TIMEOUT_MS + 2000);
  // Retried with backoff: every event was tried several times, never two requests of it at once.
  for (const s of sources) expect(held.filter((c) => sourceOf(c) === s).length).toBeGreaterThanOrEqual(2);
  expect(
    (await metricValue(ing.adminUrl, 'intake_destination_retries_total{destination="slow",reason="timeout"}')) ?? 0,
  ).toBeGreaterThanOrEqual(10);

  await waitFor(
    'every event delivered once the receiver answers',
    async () => sources.every((s) => receiver.calls.some((c) => c.behaviour === 'ok' && sourceOf(c) === s)),
    20_000,
    100,
  );
  expect(await delivered()).toBe(5);
  // Bounded duplicates: each event accepted once (a request aborted before any answer took nothing).
  for (const s of sources)
    expect(receiver.calls.filter((c) => c.behaviour === 'ok' && sourceOf(c) === s)).toHaveLength(1);
}, 90_000);

it('counts a 200 whose body trickles as delivered, closing the connection at the deadline, and sends it once', async () => {
  receiver.behaviour = 'trickle-body';
  const before = await delivered();
  const sources = await send(Array.from({ length: 3 }, (_, i) => ({ source: `trickle-${i}`, severity: 3 })));
  await waitFor('3 more delivered', async () => (await delivered()) === before + 3, 20_000, 100);
  const calls = callsOf(sources);
  expect(calls).toHaveLength(3);
  await waitFor(
    'connections closed by the sender',
    async () => calls.every((c) => c.closedAtMs !== undefined),
    10_000,
    100,
  );
  for (const c of calls) expect((c.closedAtMs as number) - c.atMs).toBeLessThan(TIMEOUT_MS + 2000);
  receiver.behaviour = 'ok';
}, 60_000);

it('reads at most a small part of a 256 MiB answer, delivers each event with one request, and keeps its memory', async () => {
  receiver.behaviour = 'huge-body';
  receiver.hugeBytes = 256 * 1024 * 1024;
  const before = await delivered();
  const sources = await send(Array.from({ length: 4 }, (_, i) => ({ source: `huge-${i}`, severity: 3 })));
  await waitFor('4 more delivered', async () => (await delivered()) === before + 4, 30_000, 100);
  const calls = callsOf(sources);
  expect(calls).toHaveLength(4);
  await waitFor(
    'connections closed by the sender',
    async () => calls.every((c) => c.closedAtMs !== undefined),
    10_000,
    100,
  );
  // The client reads 64 KiB, then destroys the socket; what the receiver wrote beyond that sat in
  // the kernel's socket buffers.
  for (const c of calls) expect(c.bytesWritten).toBeLessThan(32 * 1024 * 1024);
  const peak = peakRssMiB(ing.child.pid as number);
  process.stdout.write(
    `ingester peak RSS with a 256 MiB answer: ${peak.toFixed(0)} MiB; bytes written per call: ${calls.map((c) => c.bytesWritten).join(', ')}\n`,
  );
  expect(peak).toBeLessThan(250);
  receiver.behaviour = 'ok';
}, 60_000);
