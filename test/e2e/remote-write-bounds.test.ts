/**
 * Remote write cannot be held by its receiver, through the built
 * ingester: a receiver that trickles its answer's headers has each request aborted at
 * `remoteWrite.timeout` and retried, with at most `maxInFlightPerTenant` requests open, and gets
 * every sample once it behaves; a receiver's huge answer is not downloaded; while the receiver
 * fails, label-heavy points fill the queue up to `maxQueuedBytes`, then get 503 with Retry-After
 * (the replica stays ready: the queue holds data points only), its memory stays bounded, and it
 * recovers when the receiver is back.
 */
import { randomBytes } from 'node:crypto';
import { fromBinary } from '@bufbuild/protobuf';
import { uncompressSync } from 'snappy';
import { WriteRequestSchema } from '../../ingester/series/remote-write/generated/remote_write_v1_pb.js';
import { waitFor } from '../support/waiting.js';
import { API_KEY, post, startIngester, type RunningIngester } from './support/ingester.js';
import {
  peakRssMiB,
  rssMiB,
  startMisbehavingReceiver,
  type MisbehavingReceiver,
  type ReceivedCall,
} from './support/misbehaving-receiver.js';
import { flatten } from './support/recording-receiver.js';

const TIMEOUT_MS = 2000;
let receiver: MisbehavingReceiver;
const ingesters: RunningIngester[] = [];

beforeEach(async () => {
  receiver = await startMisbehavingReceiver('/api/v1/write');
});
afterEach(async () => {
  await Promise.all(ingesters.splice(0).map((i) => i.stop('SIGKILL')));
  await receiver.close();
});

async function remoteWriting(extra: Record<string, unknown> = {}, nodeArgs: string[] = []): Promise<RunningIngester> {
  const ing = await startIngester(
    (c) => {
      c.remoteWrite = {
        url: receiver.url,
        flushInterval: '100ms',
        backoffMin: '100ms',
        backoffMax: '1s',
        timeout: `${TIMEOUT_MS}ms`,
        maxInFlightPerTenant: 2,
        ...extra,
      };
      c.exposition = { enabled: false };
    },
    { nodeArgs },
  );
  ingesters.push(ing);
  return ing;
}

const send = (ing: RunningIngester, body: unknown) =>
  post(`${ing.url}/v1/integrations/metrics`, body, { apikey: API_KEY });
const samplesOf = (call: ReceivedCall): Array<{ labels: Array<[string, string]>; value: number; ts: number }> =>
  flatten(fromBinary(WriteRequestSchema, uncompressSync(call.body) as Buffer));
async function ownMetric(ing: RunningIngester, line: string): Promise<number> {
  const text = await (await fetch(`${ing.adminUrl}/metrics`)).text();
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found ? Number(found.slice(line.length + 1)) : 0;
}

it('aborts requests whose answer headers trickle at the deadline, keeps the lanes bounded, and delivers every sample once the receiver behaves', async () => {
  receiver.behaviour = 'trickle-headers';
  const ing = await remoteWriting();
  const nowS = Math.floor(Date.now() / 1000);
  const points = Array.from({ length: 20 }, (_, i) => ({
    metric: 'rw.slow',
    data: i,
    source: `h${i}`,
    time: nowS - 10,
  }));
  expect((await send(ing, points)).status).toBe(200);
  // Until the sender has aborted four requests at the deadline and retried (never, were requests
  // unbounded: then this times out).
  const started = Date.now();
  await waitFor(
    'four requests aborted at the deadline and retried',
    async () =>
      receiver.calls.filter((c) => c.closedAtMs !== undefined).length >= 4 &&
      (await ownMetric(ing, 'intake_remote_write_samples_retried_total{namespace="default"}')) > 0,
    30_000,
    100,
  );
  const peak = receiver.peakOpen;
  const held = [...receiver.calls];
  receiver.behaviour = 'ok';
  receiver.okStatus = 204;
  process.stdout.write(
    `slow-loris remote write receiver: ${held.length} requests in ${((Date.now() - started) / 1000).toFixed(1)} s, at most ${peak} open at once\n`,
  );
  // One tenant, two lanes: never more than two requests open.
  expect(peak).toBeLessThanOrEqual(2);
  const closed = held.filter((c) => c.closedAtMs !== undefined);
  expect(closed.length).toBeGreaterThanOrEqual(4);
  for (const c of closed) expect((c.closedAtMs as number) - c.atMs).toBeLessThan(TIMEOUT_MS + 2000);
  expect(await ownMetric(ing, 'intake_remote_write_samples_retried_total{namespace="default"}')).toBeGreaterThan(0);

  await waitFor(
    'all 20 samples sent',
    async () =>
      new Set(
        receiver.calls
          .filter((c) => c.behaviour === 'ok')
          .flatMap(samplesOf)
          .map((s) => s.value),
      ).size === 20,
    20_000,
    100,
  );
  expect(await ownMetric(ing, 'intake_remote_write_samples_sent_total{namespace="default"}')).toBe(20);
  expect(await ownMetric(ing, 'intake_remote_write_queued_samples{namespace="default"}')).toBe(0);
}, 60_000);

it("does not download a receiver's 256 MiB answer", async () => {
  receiver.behaviour = 'huge-body';
  receiver.hugeBytes = 256 * 1024 * 1024;
  const ing = await remoteWriting();
  expect((await send(ing, { metric: 'rw.huge', data: 1, source: 'h' })).status).toBe(200);
  await waitFor(
    'sent',
    async () => (await ownMetric(ing, 'intake_remote_write_samples_sent_total{namespace="default"}')) === 1,
    20_000,
    100,
  );
  await waitFor(
    'connection closed by the sender',
    async () => receiver.calls.length === 1 && receiver.calls[0]?.closedAtMs !== undefined,
    10_000,
    100,
  );
  expect(receiver.calls[0]!.bytesWritten).toBeLessThan(32 * 1024 * 1024);
}, 60_000);

it('bounds the queue in bytes while the receiver fails: 503 with Retry-After past maxQueuedBytes, still ready, memory bounded, and recovers', async () => {
  receiver.okStatus = 500;
  // The heap of a 256 MiB pod (V8 sizes it from the container's limit), and the image's young generation.
  const ing = await remoteWriting(
    // One namespace may take the whole queue here (its share is the default eighth otherwise).
    {
      maxQueuedSamples: 100_000,
      maxQueuedBytes: 16 * 1024 * 1024,
      maxQueuedBytesPerTenant: 16 * 1024 * 1024,
      batchSize: 2000,
    },
    ['--max-semi-space-size=4', '--max-old-space-size=192'],
  );
  const baseline = rssMiB(ing.child.pid as number);
  // 2,000 series with ~1.9 KB of labels each (random, so the request compresses badly), 400 per request.
  const series = Array.from({ length: 2000 }, (_, i) => ({
    source: `host-${i}`,
    tags: { a: randomBytes(475).toString('hex'), b: randomBytes(475).toString('hex') },
  }));
  const t0 = Date.now() - 60_000;
  const accepted: number[] = [];
  const refused: Array<Awaited<ReturnType<typeof send>>> = [];
  for (let n = 0; n < 250; n++) {
    const round = Math.floor(n / 5);
    const body = series
      .slice((n % 5) * 400, ((n % 5) + 1) * 400)
      .map((s) => ({ metric: 'rw.heavy', data: n, time: t0 + round, ...s }));
    const res = await send(ing, body);
    if (res.status === 200) accepted.push(...body.map(() => n));
    else {
      expect([res.status, res.status === 503 ? '' : res.text.slice(0, 400)]).toEqual([503, '']);
      refused.push(res);
    }
  }
  const peak = peakRssMiB(ing.child.pid as number);
  const queuedBytes = await ownMetric(ing, 'intake_remote_write_queued_bytes');
  process.stdout.write(
    `remote write, failing receiver, 2 KB labels: baseline RSS ${baseline.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB; ${accepted.length} points accepted, ${refused.length} requests refused; queued ${queuedBytes} bytes\n`,
  );
  for (const r of refused) expect(r.headers.get('retry-after')).toBeTruthy();
  // Past the byte cap (on a busy machine a few may be refused by the event-loop overload guard instead).
  expect(refused.filter((r) => /remoteWrite\.maxQueuedBytes/.test(r.json().message as string)).length).toBeGreaterThan(
    refused.length / 2,
  );
  expect(accepted.length).toBeGreaterThan(0);
  expect(queuedBytes).toBeLessThanOrEqual(16 * 1024 * 1024);
  expect(ing.child.exitCode).toBeNull();
  expect(peak).toBeLessThan(300);
  // A full queue refuses data points only: webhooks are still served, so the replica stays in the Service.
  expect((await fetch(`${ing.adminUrl}/readyz`)).status).toBe(200);

  receiver.okStatus = 204;
  await waitFor(
    'every accepted point sent',
    async () =>
      (await ownMetric(ing, 'intake_remote_write_samples_sent_total{namespace="default"}')) === accepted.length,
    60_000,
    200,
  );
  const received = new Set(
    receiver.calls
      .filter((c) => c.status === 204)
      .flatMap(samplesOf)
      .map((s) => `${s.labels.find(([k]) => k === 'source')?.[1]}@${s.ts}`),
  );
  expect(received.size).toBe(accepted.length);
  expect(await ownMetric(ing, 'intake_remote_write_queued_bytes')).toBe(0);
  const after = series.slice(0, 400).map((s) => ({ metric: 'rw.heavy', data: -1, ...s }));
  expect((await send(ing, after)).status).toBe(200);
  process.stdout.write(`remote write: RSS after the drain ${rssMiB(ing.child.pid as number).toFixed(0)} MiB\n`);
}, 180_000);
