/**
 * While the bus is down every request is spooled, and each is answered only once it is on the
 * disk; that flush runs off the request thread, through the built ingester: every fsync/fdatasync
 * of the spool's files while events are spooled comes from another thread than the event loop's
 * (libuv's pool), and each spooled event is counted before its 200. Before, SQLite's commit
 * fdatasynced the WAL on the request thread (synchronous=FULL), during which every request waited.
 *
 * Observed with strace attached to every thread of the ingester (skipped where strace is absent).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { waitFor } from '../../support/waiting.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, startNats, type RunningNats } from '../support/nats-server.js';
import { flushesDuring, hasStrace } from '../support/strace.js';

jest.setTimeout(90_000);

let nats: RunningNats | undefined;
let ingester: RunningIngester | undefined;
const spoolDir = mkdtempSync(join(tmpdir(), 'intake-spool-flush-'));

afterAll(async () => {
  await ingester?.stop('SIGKILL');
  await nats?.stop();
  rmSync(spoolDir, { recursive: true, force: true });
});

const send = (ing: RunningIngester, description: string): Promise<{ status: number }> =>
  post(
    `${ing.url}/events/webhook_demo`,
    { source: 'spooled', severity: 3, description },
    {
      authorization: basic(DEMO.user, DEMO.password),
    },
  );

(hasStrace ? it : it.skip)(
  'spools each event before its 200 without flushing the disk on the request thread',
  async () => {
    nats = await startNats();
    ingester = await startIngester(handoffConfig(nats, { spoolDir }));
    const ing = ingester;
    await nats.kill9();
    // The first spooled event opens the WAL's file.
    expect((await send(ing, 'first')).status).toBe(200);
    expect(await metricValue(ing.adminUrl, 'intake_spool_events')).toBe(1);

    const flushes = (
      await flushesDuring(ing.child.pid as number, async () => {
        for (let i = 0; i < 3; i++) {
          expect((await send(ing, `spooled-${i}`)).status).toBe(200);
          // Held before its answer: counted at once.
          expect(await metricValue(ing.adminUrl, 'intake_spool_events')).toBe(2 + i);
        }
      })
    )?.filter((f) => /spool\.sqlite/.test(f.line));
    if (!flushes) return;
    // The WAL was flushed once per event at least (so the check below looked at something) ...
    expect(flushes.length).toBeGreaterThanOrEqual(3);
    // ... and never by the event loop's thread, whose thread id is the process id.
    expect(flushes.filter((f) => f.thread === ing.child.pid)).toEqual([]);

    // Nothing spooled is lost: the bus takes all four once it is back.
    await nats.restart();
    await waitFor(
      'spool drained',
      async () => (await metricValue(ing.adminUrl, 'intake_spool_events')) === 0,
      30_000,
      100,
    );
  },
);
