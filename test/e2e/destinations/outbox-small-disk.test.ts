/**
 * An outbox (standalone, no bus) whose filesystem filled up still delivers and drains: on a small
 * tmpfs that something else filled too (an emptyDir on a full node disk), the ingester is killed
 * (kill -9) and started again on that full disk, and every acknowledged event must reach the
 * destination and leave the outbox. Without room, the restarted process could neither lease a row
 * nor delete one ("database or disk is full"), so nothing was delivered and nothing drained.
 * The dead letters kept beside the outbox too: on a full disk a replay claims, fails for want of
 * room to hand the letter on, and releases it; once there is room, it hands each on once and
 * removes it.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { adminPost } from '../../support/admin.js';
import { waitFor } from '../../support/waiting.js';
import { asRoot, fillAllBut, SmallDisks } from '../support/small-disk.js';
import { listLetters } from '../dead-letters/support.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { metricValue } from '../support/nats-server.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const running: RunningIngester[] = [];
let receiver: EventReceiver;

beforeAll(async () => {
  receiver = await startEventReceiver();
});

afterAll(async () => {
  for (const r of running.reverse()) await r.stop('SIGKILL');
  await receiver?.close();
  disks.unmountAll();
});

const itAsRoot = asRoot ? it : it.skip;
const disks = new SmallDisks();
const smallFilesystem = (size: string): string => disks.mount(size);

const standalone = (spoolDir: string) => (c: Record<string, unknown>) => {
  c.destinations = [
    {
      name: 'tickets',
      default: true,
      http: { url: receiver.url, timeout: '1s' },
      // Retried soon after the receiver is back, and never given up on while it is down.
      delivery: { maxAttempts: 1000, backoffMin: '100ms', backoffMax: '2s' },
      // The full disk is under test: rows the breaker held keep its cool-off (30 s) through the restart.
      circuitBreaker: { enabled: false },
    },
  ];
  c.spool = { path: spoolDir, maxBytes: MiB, maxBytesPerNamespace: MiB };
  c.deadLetter = { maxBytes: 256 * KiB, maxBytesPerNamespace: 256 * KiB };
};

/** One event of ~4 KiB per request, until the ingester refused 10 (at most 1500 requests). */
async function fillOutbox(ing: RunningIngester): Promise<string[]> {
  const accepted: string[] = [];
  let refused = 0;
  for (let n = 0; n < 1500 && refused < 10; n++) {
    const trace = `outbox-${n}`;
    const answer = await post(
      `${ing.url}/events/webhook_demo`,
      { source: trace, severity: 3, description: 'x'.repeat(4096) },
      { authorization: basic(DEMO.user, DEMO.password) },
    );
    if (answer.status === 200) accepted.push(trace);
    else {
      // Refused because the disk is full, not because of any size limit.
      expect(`${answer.status} ${answer.text}`).toMatch(/^503 .*SINK_FAILED/);
      refused++;
    }
  }
  expect(refused).toBe(10);
  return accepted;
}

const receivedSources = (): Set<string> =>
  new Set(
    receiver.requests
      .filter((r) => r.answer !== 'reset' && r.answer.status === 200)
      .flatMap((r) => r.events.map((e) => String(e.source))),
  );

itAsRoot(
  'delivers and drains an outbox whose disk is full after a restart (kill -9) on that full disk',
  async () => {
    const disk = smallFilesystem('5m');
    const spoolDir = join(disk, 'spool');
    // The receiver is down (503) while the outbox fills: every row is retried, i.e. rescheduled.
    receiver.script = Array.from({ length: 100_000 }, () => ({ status: 503 }));
    const first = await startIngester(standalone(spoolDir));
    running.push(first);
    fillAllBut(disk, 1200 * KiB);
    const accepted = await fillOutbox(first);
    expect(accepted.length).toBeGreaterThan(10);
    await first.stop('SIGKILL');

    // The disk is still full; the receiver is back.
    receiver.script = [];
    const second = await startIngester(standalone(spoolDir), { waitReady: false });
    running.push(second);
    await waitFor(
      'every accepted event delivered',
      async () => accepted.every((t) => receivedSources().has(t)),
      60_000,
      200,
    ).catch(() => undefined);
    expect(accepted.filter((t) => !receivedSources().has(t))).toEqual([]);
    await waitFor(
      'outbox drained',
      async () => (await metricValue(second.adminUrl, 'intake_destination_lag{destination="tickets"}')) === 0,
      30_000,
      200,
    ).catch(() => undefined);
    expect(await metricValue(second.adminUrl, 'intake_destination_lag{destination="tickets"}')).toBe(0);

    // Delivered once more after the restart at most (a row the killed process had leased), not forever.
    const requestsAfterDrain = receiver.requests.length;
    await new Promise((r) => setTimeout(r, 3000));
    expect(receiver.requests.length).toBe(requestsAfterDrain);
    expect(first.stderr() + second.stderr()).toMatch(/the outbox.s disk is full: its reserve is given up/);

    // Room again: the reserve is back, the replica ready, and new events are accepted and delivered.
    rmSync(join(disk, 'neighbour.bin'));
    await waitFor('ready', async () => (await fetch(`${second.adminUrl}/readyz`)).status === 200, 20_000, 200);
    const after = await post(
      `${second.url}/events/webhook_demo`,
      { source: 'after-room', severity: 3 },
      { authorization: basic(DEMO.user, DEMO.password) },
    );
    expect(after.status).toBe(200);
    await waitFor('delivered', async () => receivedSources().has('after-room'), 20_000, 100);
  },
  180_000,
);

itAsRoot(
  'replays dead letters kept on a full disk after a restart there: each handed on once, none left listed, none lost',
  async () => {
    const disk = smallFilesystem('5m');
    const spoolDir = join(disk, 'spool');
    receiver.script = [];
    receiver.refuse = (e) => String(e.source).startsWith('letter-');
    const first = await startIngester(standalone(spoolDir));
    running.push(first);
    const total = 20;
    for (let n = 0; n < total; n++) {
      const answer = await post(
        `${first.url}/events/webhook_demo`,
        { source: `letter-${n}`, severity: 3, description: 'y'.repeat(2048) },
        { authorization: basic(DEMO.user, DEMO.password) },
      );
      expect(answer.status).toBe(200);
    }
    const deadLettered = async (ing: RunningIngester): Promise<number> =>
      (await metricValue(
        ing.adminUrl,
        'intake_destination_dead_lettered_total{destination="tickets",reason="http_400"}',
      )) ?? 0;
    await waitFor('every event dead-lettered', async () => (await deadLettered(first)) === total, 30_000, 100);
    await first.stop('SIGKILL');
    fillAllBut(disk, 0);

    // Started again on the full disk, the destination taking everything now.
    receiver.refuse = () => false;
    const second = await startIngester(standalone(spoolDir), { waitReady: false });
    running.push(second);
    expect((await listLetters(second, 'limit=1000')).count).toBe(total);
    const replay = async (): Promise<{ status: number; body: { replayed: number; failed: number } }> => {
      const res = await fetch(`${second.adminUrl}/deadletter/replay?limit=1000`, adminPost());
      return { status: res.status, body: (await res.json()) as { replayed: number; failed: number } };
    };
    // Letters are handed on while the outbox has room (free pages of its own); then a replay fails,
    // says why, and the letter stays (claimed and released). Those handed on are removed.
    const onFullDisk = await replay();
    expect(onFullDisk.status).toBe(200);
    expect(onFullDisk.body.replayed + onFullDisk.body.failed).toBe(total);
    expect(onFullDisk.body.failed).toBeGreaterThan(0);
    expect((await listLetters(second, 'limit=1000')).count).toBe(onFullDisk.body.failed);
    expect(second.stderr()).toMatch(/disk is full: its reserve is given up/);

    // Room again: the replay hands each letter on once, and none is left listed.
    rmSync(join(disk, 'neighbour.bin'));
    await waitFor('the replay goes through', async () => (await replay()).body.replayed > 0, 20_000, 500);
    await waitFor(
      'every letter delivered',
      async () => Array.from({ length: total }, (_, n) => `letter-${n}`).every((s) => receivedSources().has(s)),
      30_000,
      200,
    );
    expect((await listLetters(second, 'limit=1000')).count).toBe(0);
    const sent = receiver.requests
      .flatMap((r) => r.events.map((e) => String(e.source)))
      .filter((s) => s.startsWith('letter-'));
    // Each one refused once (before the restart), then delivered once.
    expect(sent.length).toBe(2 * total);
  },
  180_000,
);
