/**
 * The README's standalone quick start with an Alertmanager destination
 * (examples/intake-alertmanager.yaml): no bus, events wait in the outbox in the storage directory. A kill -9 of
 * the ingester while Alertmanager is down loses nothing: the restarted ingester delivers what
 * the killed one acknowledged.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT } from '../../support/paths.js';
import { waitFor } from '../../support/waiting.js';
import { activeAlerts, startAlertmanager, type RunningAlertmanager } from '../support/alertmanager.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { metricValue } from '../support/nats-server.js';

const spoolDir = mkdtempSync(join(tmpdir(), 'intake-outbox-e2e-'));
let am: RunningAlertmanager;
const ingesters: RunningIngester[] = [];

afterAll(async () => {
  for (const i of ingesters) await i.stop('SIGKILL');
  await am?.stop();
  rmSync(spoolDir, { recursive: true, force: true });
});

/** The example file as shipped, with Alertmanager's and the spool's place on this machine. */
const example =
  (amUrl: string) =>
  (c: Record<string, unknown>): void => {
    for (const k of Object.keys(c)) delete c[k];
    const shipped = parse(readFileSync(join(ROOT, 'examples/intake-alertmanager.yaml'), 'utf8')) as Record<
      string,
      unknown
    > & { destinations: Array<{ alertmanager: { urls: string[]; resendInterval: string } }> };
    Object.assign(c, shipped, { spool: { path: spoolDir } });
    const am0 = shipped.destinations[0] as { alertmanager: { urls: string[]; resendInterval: string } };
    am0.alertmanager.urls = [amUrl];
    am0.alertmanager.resendInterval = '2s';
  };

const send = async (ing: RunningIngester, body: unknown): Promise<Record<string, unknown>> => {
  const res = await post(`${ing.url}/events/webhook_demo`, body, { authorization: basic(DEMO.user, DEMO.password) });
  expect(res.status).toBe(200);
  return res.json();
};

it('turns an event into an alert and resolves it with a clear', async () => {
  am = await startAlertmanager();
  const ing = await startIngester(example(am.url));
  ingesters.push(ing);
  expect(
    await send(ing, {
      source: 'web-01',
      severity: 'critical',
      class: 'disk',
      type: 'DiskFull',
      description: 'disk at 97%',
    }),
  ).toMatchObject({ response: { processed: 1, cached: 0, received: 1 } });
  const [alert] = await waitFor(
    'alert in Alertmanager',
    async () => {
      const alerts = await activeAlerts(am.url);
      return alerts.length === 1 ? alerts : undefined;
    },
    15_000,
    100,
  );
  expect(alert?.labels).toEqual({
    alertname: 'DiskFull',
    signature: 'web-01:disk:DiskFull',
    source: 'web-01',
    severity: 'critical',
    integration: 'demo',
    namespace: 'default',
  });
  expect(ing.stderr() + ing.stdout()).toContain('destinations are delivered from the outbox in the storage directory');
  await send(ing, { source: 'web-01', severity: 0, class: 'disk', type: 'DiskFull' });
  await waitFor('alert resolved', async () => (await activeAlerts(am.url)).length === 0, 15_000, 100);
  await ing.stop();
}, 40_000);

it('delivers, after a restart, what a killed ingester acknowledged while Alertmanager was down', async () => {
  const port = am.port;
  await am.kill9();
  const first = await startIngester(example(`http://127.0.0.1:${port}`));
  ingesters.push(first);
  const sent = Array.from({ length: 20 }, (_, i) => ({ source: `db-${i}`, severity: 'major', type: 'Replication' }));
  await send(first, sent);
  await waitFor(
    'retrying',
    async () =>
      ((await metricValue(
        first.adminUrl,
        'intake_destination_retries_total{destination="alertmanager",reason="network"}',
      )) ?? 0) > 0,
    10_000,
    50,
  );
  first.child.kill('SIGKILL');
  await first.exited;

  am = await startAlertmanager(undefined, { port });
  const second = await startIngester(example(am.url));
  ingesters.push(second);
  // The killed process held them leased: they are handed out again after the claim timeout (41 s
  // for the 10 s default Alertmanager timeout) at the latest; the re-send brings the states sooner.
  const alerts = await waitFor(
    'all 20 alerts in Alertmanager',
    async () => {
      const active = await activeAlerts(am.url);
      return active.length === 20 ? active : undefined;
    },
    50_000,
    200,
  );
  expect(alerts.map((a) => a.labels.source).sort()).toEqual(sent.map((e) => e.source).sort());
  await waitFor(
    'outbox empty',
    async () => (await metricValue(second.adminUrl, 'intake_destination_lag{destination="alertmanager"}')) === 0,
    50_000,
    200,
  );
  expect(await metricValue(second.adminUrl, 'intake_destination_lag{destination="alertmanager"}')).toBe(0);
}, 120_000);

it('answers 503 and turns unready when the outbox is full, and accepts again once it drained', async () => {
  const port = am.port;
  await am.kill9();
  const ing = await startIngester((c) => {
    example(`http://127.0.0.1:${port}`)(c);
    // One namespace may fill it all here (by default it holds at most a quarter: its share).
    c.spool = {
      path: mkdtempSync(join(tmpdir(), 'intake-outbox-full-')),
      maxBytes: 65536,
      maxBytesPerNamespace: 65536,
    };
  });
  ingesters.push(ing);
  const batch = (n: number): unknown[] =>
    Array.from({ length: 100 }, (_, i) => ({
      source: `full-${n}-${i}`,
      severity: 'minor',
      description: 'x'.repeat(200),
    }));
  let refused: Awaited<ReturnType<typeof post>> | undefined;
  for (let n = 0; n < 10 && !refused; n++) {
    const res = await post(`${ing.url}/events/webhook_demo`, batch(n), {
      authorization: basic(DEMO.user, DEMO.password),
    });
    if (res.status !== 200) refused = res;
  }
  expect(refused?.status).toBe(503);
  expect(refused?.headers.get('retry-after')).toBeTruthy();
  expect(refused?.json()).toMatchObject({ success: false });
  const ready = await fetch(`${ing.adminUrl}/readyz`);
  expect(ready.status).toBe(503);
  expect(((await ready.json()) as { status: string }).status).toContain('the outbox is full');

  am = await startAlertmanager(undefined, { port });
  await waitFor('outbox drained, ready again', async () => (await fetch(`${ing.adminUrl}/readyz`)).ok, 60_000, 200);
  await send(ing, { source: 'after-full', severity: 'minor' });
}, 90_000);
