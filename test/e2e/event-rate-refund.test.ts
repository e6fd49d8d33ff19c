/**
 * An event request that the hand-off refuses (503 SPOOL_SHARE_FULL: the bus is down and the
 * namespace's share of the spool is full; 503 OUTBOX_SHARE_FULL: its destination is down and its
 * share of the outbox is full) spends none of its integration's or namespace's event rate, through
 * the built ingester: the rate's tokens taken before the hand-off are given back when it refuses,
 * so a tenant whose events could not be stored for a while is not refused 429 for events it was
 * never allowed to send once the store recovers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../support/waiting.js';
import { post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from './support/ingester.js';
import { handoffConfig, startNats, type RunningNats } from './support/nats-server.js';
import { startEventReceiver, type EventReceiver } from './support/event-receiver.js';

const KiB = 1024;
/** Events a request, each about 1.5 KB: the namespace's 64 KiB share of the spool (the smallest) holds a few requests. */
const PER_REQUEST = 10;
/** The integration's burst, in requests of PER_REQUEST events. */
const BURST = 40;
/** Refusals for a full share: far more events than the bucket refills (1 a second) while the test runs. */
const REFUSED = 25;
const NOTE = 'n'.repeat(1500);
let spoolDir: string;
let nats: RunningNats | undefined;
let receiver: EventReceiver | undefined;
let ing: RunningIngester | undefined;

beforeEach(() => {
  spoolDir = mkdtempSync(join(tmpdir(), 'intake-rate-refund-'));
});
afterEach(async () => {
  await ing?.stop('SIGKILL');
  ing = undefined;
  await nats?.stop();
  nats = undefined;
  await receiver?.close();
  receiver = undefined;
  rmSync(spoolDir, { recursive: true, force: true });
});

/** The integration under test: BURST requests' events, refilled one a second (the smallest rate), so what a request spends stays spent. */
const refundRoute = () =>
  tenantRoute('refund', 'team-r', { limits: { eventsPerSecond: 1, eventsBurst: BURST * PER_REQUEST } });

const send = (i: number) =>
  post(
    `${ing!.url}/events/webhook_refund`,
    Array.from({ length: PER_REQUEST }, (_, k) => ({
      source: `h${i}-${k}`,
      severity: 2,
      description: 'refund',
      custom_info: { note: NOTE },
    })),
    tenantAuth('refund'),
  );

/** Sends until the store has refused REFUSED requests with `code`; the number accepted before. */
async function fillShare(code: string): Promise<number> {
  const statuses: number[] = [];
  for (let i = 0; i < 2 * BURST && statuses.filter((s) => s === 503).length < REFUSED; i++) {
    const res = await send(i);
    statuses.push(res.status);
    if (res.status === 503) expect(res.json().code).toBe(code);
  }
  const accepted = statuses.filter((s) => s === 200).length;
  expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
  expect(statuses.filter((s) => s === 503).length).toBe(REFUSED);
  return accepted;
}

/**
 * The rest of the burst, once the store has room again: the statuses (every request accepted, none refused 429).
 * `untilRoom` paces the requests, so that the store (drained as it is filled) never reaches the
 * share again. `retryCode`: a refusal the store may still give for a moment after `untilRoom`
 * (its 503 refunds the rate too, which is what is under test), sent again as a sender would.
 */
async function spendTheRest(
  accepted: number,
  untilRoom: (acceptedSoFar: number) => Promise<void>,
  retryCode?: string,
): Promise<number[]> {
  const after: number[] = [];
  for (let k = 0; k < BURST - accepted; k++) {
    await untilRoom(accepted + after.filter((s) => s === 200).length);
    let res = await send(1000 + k);
    for (let tries = 0; retryCode && res.status === 503 && res.json().code === retryCode && tries < 100; tries++) {
      await new Promise((r) => setTimeout(r, 20));
      res = await send(1000 + k);
    }
    after.push(res.status);
  }
  return after;
}

it('a request refused because its share of the spool is full does not spend the event rate: after the bus is back, the rate is still there', async () => {
  nats = await startNats();
  const running = nats;
  ing = await startIngester((c) => {
    handoffConfig(running, { spoolDir, spoolMaxBytes: 1024 * KiB, spoolMaxBytesPerNamespace: 64 * KiB })(c);
    (c.routes as unknown[]).push(refundRoute());
  });

  // The bus goes down: the spool takes the namespace's share, then every request is refused 503.
  await nats.kill9();
  const accepted = await fillShare('SPOOL_SHARE_FULL');
  expect(accepted).toBeGreaterThan(0);
  expect(accepted).toBeLessThan(BURST - REFUSED);

  // The bus is back and the spool drains; the integration's remaining burst is still its to spend.
  await nats.restart();
  await waitFor(
    'spool drained',
    async () => {
      const text = await (await fetch(`${ing!.adminUrl}/metrics`)).text();
      return /^intake_spool_events 0\b/m.test(text) && (await fetch(`${ing!.adminUrl}/readyz`)).ok;
    },
    30_000,
    100,
  );
  // The bus takes each request as it comes: nothing is spooled.
  const after = await spendTheRest(accepted, async () => undefined);
  expect(after).toEqual(Array.from({ length: BURST - accepted }, () => 200));
}, 90_000);

it('a request refused because its share of the outbox is full does not spend the event rate: after the destination recovers, the rate is still there', async () => {
  receiver = await startEventReceiver();
  // Down: every row stays in the outbox, retried soon.
  receiver.script = Array.from({ length: 1_000_000 }, () => ({ status: 503 }));
  const url = receiver.url;
  ing = await startIngester((c) => {
    c.destinations = [
      {
        name: 'tickets',
        default: true,
        http: { url, timeout: '1s' },
        delivery: { backoffMin: '50ms', backoffMax: '200ms' },
        // The rate's refund is under test, not the breaker: its 30 s cool-off would delay the recovery past the wait.
        circuitBreaker: { enabled: false },
      },
    ];
    c.spool = { path: spoolDir, maxBytes: 1024 * KiB, maxBytesPerNamespace: 64 * KiB };
    (c.routes as unknown[]).push(refundRoute());
  });
  const accepted = await fillShare('OUTBOX_SHARE_FULL');
  expect(accepted).toBeGreaterThan(0);
  expect(accepted).toBeLessThan(BURST - REFUSED);

  // The destination recovers and the outbox drains: each request is sent once the ones before it
  // were delivered. Their rows leave the outbox a moment after the receiver answered (the settles
  // are committed in groups), so the first request may still find the share full: sent again.
  receiver.script = [];
  const delivered = (requests: number) => async () => receiver!.accepted.size >= requests * PER_REQUEST;
  const after = await spendTheRest(
    accepted,
    async (acceptedSoFar) => {
      await waitFor('the requests before delivered', delivered(acceptedSoFar), 30_000, 10);
    },
    'OUTBOX_SHARE_FULL',
  );
  expect(after).toEqual(Array.from({ length: BURST - accepted }, () => 200));
}, 90_000);
