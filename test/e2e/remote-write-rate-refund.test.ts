/**
 * A data point request that the remote write queue refuses (503 REMOTE_WRITE_QUEUE_FULL) spends
 * none of its API key's or namespace's rate, through the built ingester: the queue is checked
 * before the rate's tokens are taken, so a tenant whose receiver was down for a while is not
 * refused 429 for points it was never allowed to send once the receiver is back.
 */
import { waitFor } from '../support/waiting.js';
import { post, startIngester, type RunningIngester } from './support/ingester.js';
import { startMisbehavingReceiver, type MisbehavingReceiver } from './support/misbehaving-receiver.js';

const KEY = 'meter_0123456789abcdef0123456789abcdef';
/** Data points a request: each of a new series, about 1.5 KB of labels. */
const PER_REQUEST = 10;
/** The key's burst, in requests of PER_REQUEST points. */
const BURST = 60;
/** Refusals for a full queue: far more points than the bucket refills (1 a second) while the test runs. */
const REFUSED = 30;
/** About 1.5 KB of labels a point: the queue (64 KiB) fills after a few requests. */
const TAG = 't'.repeat(750);
let receiver: MisbehavingReceiver;
let ing: RunningIngester | undefined;

beforeEach(async () => {
  receiver = await startMisbehavingReceiver('/api/v1/write');
});
afterEach(async () => {
  await ing?.stop('SIGKILL');
  ing = undefined;
  await receiver.close();
});

it('a request refused because the remote write queue is full does not spend the rate: after the receiver recovers, the rate is still there', async () => {
  // The receiver holds every request (its answer's headers trickle until the ingester gives up
  // and retries): nothing leaves the queue until it behaves.
  receiver.behaviour = 'trickle-headers';
  ing = await startIngester((c) => {
    c.remoteWrite = {
      url: receiver.url,
      flushInterval: '50ms',
      backoffMin: '100ms',
      backoffMax: '200ms',
      timeout: '2s',
      // The smallest queue: room for a few dozen of the label-heavy points below.
      maxQueuedBytes: 65536,
      maxQueuedBytesPerTenant: 65536,
    };
    c.exposition = { enabled: false };
    (c.routes as unknown[]).push({
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'ApiKey',
      name: 'meter',
      namespace: 'team-m',
      credentials: [{ username: 'meter', secret: { plain: KEY } }],
      // BURST points, refilled one a second (the smallest rate): what a request spends stays spent.
      limits: { dataPointsPerSecond: 1, dataPointsBurst: BURST * PER_REQUEST },
    });
  });
  const url = `${ing.url}/v1/integrations/metrics`;
  const send = (i: number) =>
    post(
      url,
      Array.from({ length: PER_REQUEST }, (_, k) => ({
        metric: 'rw.refund',
        data: i,
        source: `h${i}-${k}`,
        tags: { note: TAG, more: TAG },
      })),
      { apikey: KEY },
    );

  // Fill the queue while the receiver fails, then keep being refused 503 for it.
  const statuses: number[] = [];
  let i = 0;
  for (; i < 2 * BURST && statuses.filter((s) => s === 503).length < REFUSED; i++) {
    const res = await send(i);
    statuses.push(res.status);
    if (res.status === 503) expect(res.json().code).toBe('REMOTE_WRITE_QUEUE_FULL');
  }
  const accepted = statuses.filter((s) => s === 200).length;
  expect(statuses.filter((s) => s === 503).length).toBe(REFUSED);
  expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
  expect(accepted).toBeGreaterThan(0);
  expect(accepted).toBeLessThan(BURST - REFUSED);

  // The receiver recovers and the queue drains; the key's remaining burst is still its to spend.
  receiver.behaviour = 'ok';
  receiver.okStatus = 204;
  await waitFor(
    'queue drained',
    async () => {
      const res = await fetch(`${ing!.adminUrl}/metrics`);
      return /intake_remote_write_queued_samples\{namespace="team-m"\} 0\b/.test(await res.text());
    },
    20_000,
    100,
  );
  const after: number[] = [];
  for (let k = 0; k < BURST - accepted; k++) {
    after.push((await send(1000 + k)).status);
    // Paced, so that the queue (draining every 50 ms) never fills again.
    await new Promise((r) => setTimeout(r, 25));
  }
  expect(after).toEqual(Array.from({ length: BURST - accepted }, () => 200));
}, 60_000);
