/**
 * The spool's disk: a burst while the bus is down fills it, and once the bus is back and the
 * spool drained its directory shrinks back to about nothing (no WAL left at the size of the
 * largest transaction, no free pages kept in the database file); during the burst it stays
 * within maxBytes plus the documented margin.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../support/waiting.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, startNats, type RunningNats } from '../support/nats-server.js';

const MiB = 1024 * 1024;
let nats: RunningNats | undefined;
let ingester: RunningIngester | undefined;
const spoolDir = mkdtempSync(join(tmpdir(), 'intake-spool-disk-'));

afterAll(async () => {
  await ingester?.stop('SIGKILL');
  await nats?.stop();
  rmSync(spoolDir, { recursive: true, force: true });
});

/** Bytes of every file in the spool directory (database, WAL, shared memory). */
const diskUse = (): number => readdirSync(spoolDir).reduce((sum, f) => sum + statSync(join(spoolDir, f)).size, 0);

it('gives the disk back after a burst is drained, and stays near maxBytes during it', async () => {
  const maxBytes = 24 * MiB;
  nats = await startNats();
  ingester = await startIngester(
    handoffConfig(nats, { spoolDir, spoolMaxBytes: maxBytes, spoolMaxBytesPerNamespace: maxBytes }),
  );
  const baseline = diskUse();
  await nats.kill9();

  // ~20 MiB in requests of 50 events of 4 KiB, four at a time (several requests per transaction).
  let peak = 0;
  let accepted = 0;
  const description = 'x'.repeat(4096);
  for (let round = 0; round < 25; round++) {
    const answers = await Promise.all(
      Array.from({ length: 4 }, (_, r) =>
        post(
          `${ingester!.url}/events/webhook_demo`,
          Array.from({ length: 50 }, (_, i) => ({
            source: 'burst',
            severity: 3,
            description,
            custom_info: { round, r, i },
          })),
          {
            authorization: basic(DEMO.user, DEMO.password),
          },
        ),
      ),
    );
    accepted += answers.filter((a) => a.status === 200).length;
    peak = Math.max(peak, diskUse());
  }
  expect(accepted).toBe(100);
  expect(await metricValue(ingester.adminUrl, 'intake_spool_events')).toBe(5000);

  await nats.restart();
  await waitFor(
    'spool drained',
    async () => (await metricValue(ingester!.adminUrl, 'intake_spool_events')) === 0,
    60_000,
    100,
  );
  // Space is given back in bounded steps after the drain.
  await waitFor('spool disk given back', async () => diskUse() < baseline + MiB, 20_000, 100).catch(() => undefined);
  const afterDrain = diskUse();
  // Reported in the test output: the numbers the README states.
  console.log(
    `spool disk: baseline ${baseline}, peak during burst ${peak}, after drain ${afterDrain} (maxBytes ${maxBytes})`,
  );
  // The documented bound: maxBytes plus SQLite's page overhead (~10%) plus the WAL limit (4 MiB), on top
  // of the baseline (the empty database and the 8 MiB disk reserve).
  expect(peak).toBeLessThan(baseline + 1.1 * maxBytes + 4 * MiB);
  expect(afterDrain).toBeLessThan(baseline + MiB);
}, 120_000);
