/**
 * Readiness tells the truth when storage runs out. A spool on a small real filesystem (tmpfs with
 * a size limit) that fills while the bus is down: the ingester answers 503 and /readyz says 503
 * with the reason, and once the bus is back the spool drains completely (the replay cursor moves
 * where a full disk's deletes fail: nothing is republished forever) and the ingester is ready again. A nats-server
 * whose JetStream storage is full (tiny max_file_store) and no spool: 503s, and /readyz says so
 * until storage is freed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { FIRST_OPEN_WAIT_MS } from '../../../ingester/dead-letters/bus-store.js';
import { waitFor } from '../../support/waiting.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, readStream, startNats, tally, type RunningNats } from '../support/nats-server.js';

const running: Array<RunningIngester | RunningNats> = [];
const mountPoint = mkdtempSync(join(tmpdir(), 'intake-full-disk-'));
let mounted = false;

afterAll(async () => {
  for (const r of running.reverse()) await ('child' in r ? r.stop('SIGKILL') : r.stop());
  if (mounted) execFileSync('umount', [mountPoint]);
  rmSync(mountPoint, { recursive: true, force: true });
});

const readyz = async (ing: RunningIngester): Promise<{ status: number; body: string }> => {
  const res = await fetch(`${ing.adminUrl}/readyz`);
  return { status: res.status, body: await res.text() };
};

const batch = (tag: string, n: number) =>
  Array.from({ length: 50 }, (_, i) => ({
    source: 'disk',
    severity: 3,
    description: 'x'.repeat(4096),
    custom_info: { trace: `${tag}-${n}-${i}` },
  }));

const itAsRoot = process.getuid?.() === 0 ? it : it.skip;

itAsRoot(
  'is unready while its spool is on a full filesystem, drains it completely once the bus is back, and is ready again',
  async () => {
    // A 24 MiB volume holds a spool of 16 MiB, but something else takes all but 10 MiB of it (a
    // node disk other pods filled): the disk fills first.
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m,mode=0700', 'tmpfs', mountPoint]);
    mounted = true;
    const nats = await startNats();
    running.push(nats);
    const spoolMaxBytes = 16 * 1024 * 1024;
    const ing = await startIngester(
      handoffConfig(nats, {
        spoolDir: join(mountPoint, 'spool'),
        spoolMaxBytes,
        spoolMaxBytesPerNamespace: spoolMaxBytes,
      }),
    );
    running.push(ing);
    await nats.kill9();
    const { bavail, bsize } = statfsSync(mountPoint);
    writeFileSync(join(mountPoint, 'neighbour.bin'), Buffer.alloc(bavail * bsize - 10 * 1024 * 1024, 1));

    const accepted: string[] = [];
    let refused = 0;
    let refusedWhileReady = 0;
    for (let n = 0; n < 200 && refused < 20; n++) {
      const body = batch('spool', n);
      const answer = await post(`${ing.url}/events/webhook_demo`, body, {
        authorization: basic(DEMO.user, DEMO.password),
      });
      if (answer.status === 200) accepted.push(...body.map((e) => e.custom_info.trace));
      else {
        expect(answer.status).toBe(503);
        refused++;
        if ((await readyz(ing)).status === 200) refusedWhileReady++;
      }
    }
    expect(refused).toBe(20);
    expect(accepted.length).toBeGreaterThan(1000);
    expect(refusedWhileReady).toBe(0);
    const unready = await readyz(ing);
    expect(unready.status).toBe(503);
    expect(unready.body).toMatch(/spool .* cannot be written/);
    expect(await metricValue(ing.adminUrl, 'intake_spool_available')).toBe(0);

    await nats.restart();
    await waitFor(
      'spool drained',
      async () => (await metricValue(ing.adminUrl, 'intake_spool_events')) === 0,
      60_000,
      200,
    );
    await waitFor('ready again', async () => (await readyz(ing)).status === 200, 20_000, 200);
    const stored = tally(
      (await readStream(nats.url, 'INTAKE_EVENTS')).map((s) => (s.event.custom_info as { trace: string }).trace),
    );
    expect(accepted.filter((t) => !stored.has(t))).toEqual([]);
    expect([...stored].filter(([, n]) => n > 1)).toEqual([]);
    // Each spooled event was handed to the bus once, not again every backoff.
    expect(await metricValue(ing.adminUrl, 'intake_spool_replayed_total')).toBe(accepted.length);
  },
  180_000,
);

it('is unready while the NATS server has no JetStream storage left and there is no spool, and ready once storage is freed', async () => {
  const nats = await startNats({ config: 'jetstream { max_file_store: 4MB }' });
  running.push(nats);
  // With 4 MB of storage the server refuses the dead-letter stream's size too: readiness waits
  // for that stream (at most FIRST_OPEN_WAIT_MS, dead-letter-readiness.test.ts), then goes on.
  const ing = await startIngester(handoffConfig(nats), { waitReady: false });
  running.push(ing);
  await waitFor('ready', async () => (await readyz(ing)).status === 200, FIRST_OPEN_WAIT_MS + 15_000, 200);

  let refused = 0;
  let refusedWhileReady = 0;
  for (let n = 0; n < 200 && refused < 10; n++) {
    const answer = await post(`${ing.url}/events/webhook_demo`, batch('bus', n), {
      authorization: basic(DEMO.user, DEMO.password),
    });
    if (answer.status === 503) {
      refused++;
      if ((await readyz(ing)).status === 200) refusedWhileReady++;
    }
  }
  expect(refused).toBe(10);
  expect(refusedWhileReady).toBe(0);
  // It stays unready (the probe sees no room), not ready again at the next probe.
  for (let i = 0; i < 5; i++) {
    const r = await readyz(ing);
    expect(r.status).toBe(503);
    expect(r.body).toMatch(/refuses events for lack of storage/);
    await new Promise((resolve) => setTimeout(resolve, 600));
  }

  const nc = await connect({ servers: nats.url });
  await (await jetstreamManager(nc)).streams.purge('INTAKE_EVENTS');
  await nc.close();
  await waitFor('ready again', async () => (await readyz(ing)).status === 200, 20_000, 200);
  expect(
    (
      await post(`${ing.url}/events/webhook_demo`, batch('after', 0), {
        authorization: basic(DEMO.user, DEMO.password),
      })
    ).status,
  ).toBe(200);
}, 120_000);

it('is unready while the stream is at its maxBytes, and ready again once the limit leaves room', async () => {
  const nats = await startNats();
  running.push(nats);
  const ing = await startIngester(handoffConfig(nats, { jetstream: { streamConfig: { maxBytes: 1024 * 1024 } } }));
  running.push(ing);
  let refused = 0;
  let refusedWhileReady = 0;
  for (let n = 0; n < 50 && refused < 3; n++) {
    const answer = await post(`${ing.url}/events/webhook_demo`, batch('limit', n), {
      authorization: basic(DEMO.user, DEMO.password),
    });
    if (answer.status === 503) {
      refused++;
      if ((await readyz(ing)).status === 200) refusedWhileReady++;
    }
  }
  expect(refused).toBe(3);
  expect(refusedWhileReady).toBe(0);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect((await readyz(ing)).body).toMatch(/maximum bytes exceeded/);

  // The operator raises the stream's limit: the probe sees room without any request.
  const nc = await connect({ servers: nats.url });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.update('INTAKE_EVENTS', {
    ...(await jsm.streams.info('INTAKE_EVENTS')).config,
    max_bytes: 64 * 1024 * 1024,
  });
  await nc.close();
  await waitFor('ready again', async () => (await readyz(ing)).status === 200, 20_000, 200);
  expect(
    (
      await post(`${ing.url}/events/webhook_demo`, batch('raised', 0), {
        authorization: basic(DEMO.user, DEMO.password),
      })
    ).status,
  ).toBe(200);
}, 120_000);
