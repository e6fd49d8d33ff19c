/**
 * Standalone (the outbox), a real Alertmanager: the post of an event's alert does not wait for the
 * alert state's write, yet the event is acknowledged only once that state is written. The state
 * table is made to refuse writes from outside (a trigger added through a connection of the test's
 * own): Alertmanager gets the alert while its state cannot be written, the event stays in the
 * outbox (retried, not delivered), and a kill -9 in that moment loses nothing: the restarted
 * ingester delivers it again, writes its state, and a later clear finds that state and resolves
 * the alert.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { waitFor } from '../../support/waiting.js';
import { activeAlerts, startAlertmanager, type RunningAlertmanager } from '../support/alertmanager.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { metricValue } from '../support/nats-server.js';

const spoolDir = mkdtempSync(join(tmpdir(), 'intake-state-after-post-'));
let am: RunningAlertmanager;
const ingesters: RunningIngester[] = [];

afterAll(async () => {
  for (const i of ingesters) await i.stop('SIGKILL');
  await am?.stop();
  rmSync(spoolDir, { recursive: true, force: true });
});

const config =
  (amUrl: string) =>
  (c: Record<string, unknown>): void => {
    delete c.sinks;
    c.spool = { path: spoolDir };
    c.destinations = [
      {
        name: 'alertmanager',
        default: true,
        alertmanager: { urls: [amUrl], timeout: '1s', resendInterval: '1h' },
        // Retried quickly and for long: the event must wait for its state, never be dead-lettered.
        delivery: { backoffMin: '50ms', backoffMax: '200ms', maxAttempts: 10_000 },
      },
    ];
  };

const send = async (ing: RunningIngester, body: unknown): Promise<void> => {
  const res = await post(`${ing.url}/events/webhook_demo`, body, { authorization: basic(DEMO.user, DEMO.password) });
  expect(res.status).toBe(200);
};

const metric = async (ing: RunningIngester, series: string): Promise<number> =>
  (await metricValue(ing.adminUrl, series)) ?? 0;

it('posts before the state is written, acknowledges only after, and loses nothing to a kill -9 between', async () => {
  am = await startAlertmanager();
  const first = await startIngester(config(am.url));
  ingesters.push(first);
  // The ingester created the state table at start; from now on every write of a state fails.
  const db = new DatabaseSync(join(spoolDir, 'outbox.sqlite'));
  db.exec(`CREATE TRIGGER refuse_states BEFORE INSERT ON alerts BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
  db.exec(
    `CREATE TRIGGER refuse_updates BEFORE UPDATE ON alerts BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`,
  );

  await send(first, { source: 'db-01', severity: 'critical', type: 'Replication', description: 'lag 90 s' });
  // Posted while the state cannot be written (before, the post waited for the write: nothing came).
  const [alert] = await waitFor(
    'the alert in Alertmanager while its state is refused',
    async () => {
      const active = await activeAlerts(am.url);
      return active.length === 1 ? active : undefined;
    },
    15_000,
    100,
  );
  expect(alert?.labels).toMatchObject({ source: 'db-01', severity: 'critical', alertname: 'Replication' });
  await waitFor(
    'retried for its state',
    async () =>
      (await metric(first, 'intake_destination_retries_total{destination="alertmanager",reason="state_store"}')) > 1,
    15_000,
    50,
  );
  // Not acknowledged: still held in the outbox, nothing counted as delivered.
  expect(await metric(first, 'intake_destination_delivered_total{destination="alertmanager"}')).toBe(0);
  expect(db.prepare('SELECT COUNT(*) AS n FROM outbox').get()).toEqual({ n: 1 });
  expect(db.prepare('SELECT COUNT(*) AS n FROM alerts').get()).toEqual({ n: 0 });

  // Killed after the post, before any state was written.
  first.child.kill('SIGKILL');
  await first.exited;
  db.exec('DROP TRIGGER refuse_states');
  db.exec('DROP TRIGGER refuse_updates');

  const second = await startIngester(config(am.url));
  ingesters.push(second);
  await waitFor(
    'delivered again after the restart, its state written',
    async () =>
      (await metric(second, 'intake_destination_delivered_total{destination="alertmanager"}')) === 1 &&
      (db.prepare('SELECT COUNT(*) AS n FROM outbox').get() as { n: number }).n === 0,
    // A row leased by the killed process comes back after its lease (5 s for a 1 s timeout).
    30_000,
    100,
  );
  const stored = db.prepare('SELECT state FROM alerts').all() as Array<{ state: string }>;
  expect(stored).toHaveLength(1);
  expect(JSON.parse(stored[0]?.state ?? '{}')).toMatchObject({ labels: { source: 'db-01' } });
  expect(stored[0]?.state).not.toContain('resolvedAt');
  expect((await activeAlerts(am.url)).map((a) => a.labels.source)).toEqual(['db-01']);

  // The clear finds the state the redelivery wrote, and resolves the alert.
  await send(second, { source: 'db-01', severity: 'clear', type: 'Replication' });
  await waitFor('the alert resolved', async () => (await activeAlerts(am.url)).length === 0, 15_000, 100);
  db.close();
}, 90_000);
