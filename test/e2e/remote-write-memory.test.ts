/**
 * What a full remote write queue costs the process, through the built ingester run as the image
 * runs it (its NODE_OPTIONS, MALLOC_MMAP_THRESHOLD_ and MALLOC_ARENA_MAX, the V8 heap of a small pod): with the
 * receiver failing, 10,000 series with ~1.2 KB of labels fill the queue; the resident memory at
 * the full queue stays within what the queue is charged plus a stated overhead, and once the
 * receiver is back and the queue drained, the memory is given back to within a bound that holds
 * only the process' own state (the series it knows), not the queue.
 *
 * Resident memory is read when V8 has nothing left to collect: the test asks for a full garbage
 * collection through the inspector (on loopback) before the baseline and after the drain. Without
 * it the reading after the drain measured when V8 chose to collect, not what the process holds:
 * each attempt sends a copy of its batch, and up to a whole queue's worth of those copies waits as
 * garbage until V8's memory reducer runs, which it does only once the process has been idle for a
 * while, tens of seconds later on a busy machine (85-146 MiB kept in runs where it ran or not).
 * That the queue's own requests go back the moment they are settled, with no collection, is the
 * lane's unit test's (test/unit/ingester/series/remote-write/lane.test.ts).
 */
import { randomBytes } from 'node:crypto';
import { waitFor } from '../support/waiting.js';
import { inspect, type Inspected } from './support/inspector.js';
import { API_KEY, post, startIngester, type RunningIngester } from './support/ingester.js';
import {
  peakRssMiB,
  rssMiB,
  startMisbehavingReceiver,
  type MisbehavingReceiver,
} from './support/misbehaving-receiver.js';

/** Besides the queue: the V8 heap's growth under this load (capped at 192 MiB) and the series' own state. */
const OVERHEAD_MIB = 144;
/**
 * After the drain and a collection: what the process may keep, the 10,000 series' state (their
 * labels, their encoding, about 50 MiB) and what malloc keeps of its heap, never the queue's 64 MiB.
 */
const KEPT_AFTER_DRAIN_MIB = 90;

let receiver: MisbehavingReceiver;
let ing: RunningIngester | undefined;
let inspected: Inspected | undefined;
beforeEach(async () => {
  receiver = await startMisbehavingReceiver('/api/v1/write');
});
afterEach(async () => {
  inspected?.close();
  inspected = undefined;
  await ing?.stop('SIGKILL');
  ing = undefined;
  await receiver.close();
});

async function ownMetric(line: string): Promise<number> {
  const text = await (await fetch(`${(ing as RunningIngester).adminUrl}/metrics`)).text();
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found ? Number(found.slice(line.length + 1)) : 0;
}

/** The resident memory once V8 collected all it can (the lowest of three readings a second apart: V8 unmaps freed pages in the background). */
async function collectedRssMiB(pid: number): Promise<number> {
  await (inspected as Inspected).collectGarbage();
  let rss = rssMiB(pid);
  for (let i = 0; i < 2; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    rss = Math.min(rss, rssMiB(pid));
  }
  return rss;
}

it('holds a full queue within its charged bytes plus a stated overhead, and gives the memory back once it drained', async () => {
  receiver.okStatus = 500;
  const maxQueuedBytes = 64 * 1024 * 1024;
  ing = await startIngester(
    (c) => {
      c.remoteWrite = {
        url: receiver.url,
        flushInterval: '100ms',
        backoffMin: '100ms',
        backoffMax: '1s',
        timeout: '2s',
        maxQueuedBytes,
        // One tenant may fill it all here: this test is about memory, not shares.
        maxQueuedBytesPerTenant: maxQueuedBytes,
      };
      c.exposition = { enabled: false };
      const limits = c.limits as Record<string, unknown>;
      limits.maxSeriesPerNamespace = 20_000;
      ((c.tenantLimits as Record<string, Record<string, unknown>>).apiKey as Record<string, unknown>).maxSeries =
        20_000;
    },
    // The image's NODE_OPTIONS and malloc setting (Dockerfile), and the V8 heap of a small pod.
    {
      nodeArgs: ['--max-semi-space-size=4', '--max-old-space-size=192', '--inspect=127.0.0.1:0'],
      env: { MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_ARENA_MAX: '2' },
    },
  );
  const pid = ing.child.pid as number;
  inspected = await inspect(ing.stderr());
  await new Promise((r) => setTimeout(r, 1000));
  const baseline = await collectedRssMiB(pid);
  const series = Array.from({ length: 10_000 }, (_, i) => ({
    source: `host-${i}`,
    tags: { a: randomBytes(300).toString('hex'), b: randomBytes(300).toString('hex') },
  }));
  const t0 = Math.floor(Date.now() / 1000) - 600;
  let accepted = 0;
  // Until the queue refuses five requests in a row; a refusal for another reason (the event-loop
  // overload guard, on a busy machine) is waited out and the same request sent again.
  for (let n = 0, full = 0, tries = 0; full < 5 && n < 400 && tries < 800; tries++) {
    const start = (n * 500) % series.length;
    const round = Math.floor((n * 500) / series.length);
    const body = Array.from({ length: 500 }, (_, k) => ({
      metric: 'rw.heavy',
      data: n,
      time: t0 + round,
      ...series[(start + k) % series.length],
    }));
    const res = await post(`${ing.url}/v1/integrations/metrics`, body, { apikey: API_KEY });
    if (res.status === 200) {
      accepted += body.length;
      full = 0;
      n++;
    } else if (res.status === 503 && /remoteWrite\.maxQueuedBytes/.test(String(res.json().message))) {
      full++;
      n++;
    } else await new Promise((r) => setTimeout(r, 200));
  }
  const queuedMiB = (await ownMetric('intake_remote_write_queued_bytes')) / 2 ** 20;
  const full = rssMiB(pid);
  const peak = peakRssMiB(pid);

  receiver.okStatus = 204;
  await waitFor('drained', async () => (await ownMetric('intake_remote_write_queued_bytes')) === 0, 60_000, 200);
  const after = await collectedRssMiB(pid);
  process.stdout.write(
    `remote write memory: ${accepted} points accepted, ${queuedMiB.toFixed(1)} MiB charged; RSS (collected) baseline ${baseline.toFixed(1)} MiB, full ${full.toFixed(1)} MiB, peak ${peak.toFixed(1)} MiB (+${(peak - baseline).toFixed(1)}), after the drain (collected) ${after.toFixed(1)} MiB (+${(after - baseline).toFixed(1)})\n`,
  );
  expect(queuedMiB).toBeGreaterThan(48);
  expect(peak - baseline).toBeLessThanOrEqual(queuedMiB + OVERHEAD_MIB);
  expect(after - baseline).toBeLessThanOrEqual(KEPT_AFTER_DRAIN_MIB);
  expect(ing.child.exitCode).toBeNull();
}, 210_000);
