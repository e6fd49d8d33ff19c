/**
 * Standalone (the outbox), a real Alertmanager, the destination's delivery settings left at their
 * defaults: while Alertmanager holds its answers (SIGSTOP), the ingester keeps 8192 events under
 * way, thirty-two posts of 256 alerts, each with its alert state written (the state is written
 * while the post goes out). Fewer batches under way left Alertmanager's core idle between posts
 * and cost the ingester more per alert (docs/benchmarks.md). Once Alertmanager answers, every event
 * is delivered and every state kept.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { waitFor } from '../../support/waiting.js';
import { startAlertmanager, type RunningAlertmanager } from '../support/alertmanager.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { metricValue } from '../support/nats-server.js';

// Within maxAlertsPerNamespace (10,000 by default): every event starts an alert that is kept.
const EVENTS = 10_000;
const PER_REQUEST = 100;
const spoolDir = mkdtempSync(join(tmpdir(), 'intake-am-in-flight-'));
let am: RunningAlertmanager | undefined;
let ingester: RunningIngester | undefined;

afterAll(async () => {
  if (am?.pid) process.kill(am.pid, 'SIGCONT');
  await ingester?.stop('SIGKILL');
  await am?.stop();
  rmSync(spoolDir, { recursive: true, force: true });
});

const statesKept = (db: DatabaseSync): number =>
  (db.prepare('SELECT COUNT(*) AS n FROM alerts').get() as { n: number }).n;

it('keeps 8192 events under way to a held Alertmanager by default, and delivers them all once it answers', async () => {
  am = await startAlertmanager();
  const amUrl = am.url;
  ingester = await startIngester((c) => {
    delete c.sinks;
    c.spool = { path: spoolDir };
    c.destinations = [
      {
        name: 'alertmanager',
        default: true,
        // A timeout longer than the hold: nothing is retried meanwhile. No delivery settings: the defaults.
        alertmanager: { urls: [amUrl], timeout: '60s', resendInterval: '1h' },
      },
    ];
  });
  const ing = ingester;
  process.kill(am.pid as number, 'SIGSTOP');
  for (let r = 0; r < EVENTS / PER_REQUEST; r++) {
    const body = Array.from({ length: PER_REQUEST }, (_, i) => ({
      source: `host-${i}`,
      signature: `sig-${r * PER_REQUEST + i}`,
      severity: 'major',
      type: 'InFlight',
    }));
    const res = await post(`${ing.url}/events/webhook_demo`, body, { authorization: basic(DEMO.user, DEMO.password) });
    expect(res.status).toBe(200);
  }
  const db = new DatabaseSync(join(spoolDir, 'outbox.sqlite'));
  // The states of every batch under way are written while their posts wait: their count stops
  // growing at what the dispatcher holds (4096 with the default before).
  let last = -1;
  const held = await waitFor(
    'the states of the batches under way written, and no more',
    async () => {
      const n = statesKept(db);
      const steady = n > 0 && n === last;
      last = n;
      return steady ? n : undefined;
    },
    30_000,
    1000,
  );
  // Up to a post short of 8192: the requests' rows come one by one, so the posts are of their
  // sizes, and a last batch smaller than the room waits to fill (dispatcher.ts: waitsToFill).
  expect(held).toBeGreaterThan(8192 - 256);
  expect(held).toBeLessThanOrEqual(8192);
  expect(await metricValue(ing.adminUrl, 'intake_destination_delivered_total{destination="alertmanager"}')).toBe(
    undefined,
  );

  process.kill(am.pid as number, 'SIGCONT');
  await waitFor(
    'every event delivered once Alertmanager answers',
    async () =>
      (await metricValue(ing.adminUrl, 'intake_destination_delivered_total{destination="alertmanager"}')) === EVENTS,
    60_000,
    200,
  );
  expect(statesKept(db)).toBe(EVENTS);
  db.close();
}, 120_000);
