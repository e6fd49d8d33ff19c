/**
 * What a full remote write queue costs the process, through the built ingester run as the image
 * runs it (its NODE_OPTIONS, MALLOC_MMAP_THRESHOLD_ and MALLOC_ARENA_MAX, the V8 heap of a small pod): with the
 * receiver failing, 10,000 series with ~1.2 KB of labels fill the queue; the resident memory at
 * the full queue stays within what the queue is charged plus a stated overhead, and once the
 * receiver is back and the queue drained, the memory is given back to within a bound that holds
 * only the process' own heap, not the queue.
 */
import { randomBytes } from 'node:crypto';
import { waitFor } from '../support/waiting.js';
import { API_KEY, post, startIngester, type RunningIngester } from './support/ingester.js';
import {
  peakRssMiB,
  rssMiB,
  startMisbehavingReceiver,
  type MisbehavingReceiver,
} from './support/misbehaving-receiver.js';

/** Besides the queue: the V8 heap's growth under this load (capped at 192 MiB) and the series' own state. */
const OVERHEAD_MIB = 144;
/** After the drain: what the process may keep (V8's pages for the request path and the 10,000 series), not the queue. */
const KEPT_AFTER_DRAIN_MIB = 140;

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

async function ownMetric(line: string): Promise<number> {
  const text = await (await fetch(`${(ing as RunningIngester).adminUrl}/metrics`)).text();
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found ? Number(found.slice(line.length + 1)) : 0;
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
      nodeArgs: ['--max-semi-space-size=4', '--max-old-space-size=192'],
      env: { MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_ARENA_MAX: '2' },
    },
  );
  const pid = ing.child.pid as number;
  await new Promise((r) => setTimeout(r, 1000));
  const baseline = rssMiB(pid);
  const series = Array.from({ length: 10_000 }, (_, i) => ({
    source: `host-${i}`,
    tags: { a: randomBytes(300).toString('hex'), b: randomBytes(300).toString('hex') },
  }));
  const t0 = Math.floor(Date.now() / 1000) - 600;
  let accepted = 0;
  for (let n = 0, refusedInRow = 0; refusedInRow < 5 && n < 400; n++) {
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
      refusedInRow = 0;
    } else refusedInRow++;
  }
  const queuedMiB = (await ownMetric('intake_remote_write_queued_bytes')) / 2 ** 20;
  const full = rssMiB(pid);
  const peak = peakRssMiB(pid);

  receiver.okStatus = 204;
  await waitFor('drained', async () => (await ownMetric('intake_remote_write_queued_bytes')) === 0, 60_000, 200);
  // The drained batches are freed when V8 collects them, and V8 gives pages back, some seconds after
  // the allocations stop (its memory reducer, later on a busy machine, where a whole test run
  // shares the cores): the lowest reading within 60 s.
  let after = rssMiB(pid);
  for (let i = 0; i < 120 && after - baseline > KEPT_AFTER_DRAIN_MIB / 2; i++) {
    await new Promise((r) => setTimeout(r, 500));
    after = Math.min(after, rssMiB(pid));
  }
  process.stdout.write(
    `remote write memory: ${accepted} points accepted, ${queuedMiB.toFixed(1)} MiB charged; RSS baseline ${baseline.toFixed(0)} MiB, full ${full.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB, after the drain ${after.toFixed(0)} MiB\n`,
  );
  expect(queuedMiB).toBeGreaterThan(48);
  expect(peak - baseline).toBeLessThanOrEqual(queuedMiB + OVERHEAD_MIB);
  expect(after - baseline).toBeLessThanOrEqual(KEPT_AFTER_DRAIN_MIB);
  expect(ing.child.exitCode).toBeNull();
}, 210_000);
