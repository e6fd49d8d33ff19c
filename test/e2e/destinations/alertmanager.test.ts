/**
 * Events become Alertmanager alerts, delivered from the bus (a durable consumer, alert states in a
 * JetStream key-value bucket), against a real Alertmanager and nats-server on loopback.
 */
import { waitFor } from '../../support/waiting.js';
import { activeAlerts, startAlertmanager, type RunningAlertmanager } from '../support/alertmanager.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, startNats, type RunningNats } from '../support/nats-server.js';

const RESEND_MS = 2000;
let nats: RunningNats;
let am: RunningAlertmanager;
let ing: RunningIngester;

beforeAll(async () => {
  [nats, am] = await Promise.all([startNats(), startAlertmanager()]);
  ing = await startIngester((c) => {
    handoffConfig(nats)(c);
    c.destinations = [
      {
        name: 'alertmanager',
        default: true,
        alertmanager: { urls: [am.url], resendInterval: `${RESEND_MS}ms`, timeout: '1s' },
        delivery: { backoffMin: '100ms', backoffMax: '500ms' },
      },
    ];
  });
}, 60_000);

afterAll(async () => {
  await ing?.stop();
  await Promise.all([am?.stop(), nats?.stop()]);
});

const send = async (events: unknown): Promise<void> => {
  const res = await post(`${ing.url}/events/webhook_demo`, events, { authorization: basic(DEMO.user, DEMO.password) });
  expect(res.status).toBe(200);
};
const bySignature = async (): Promise<Map<string, Record<string, string>>> =>
  new Map(
    (await activeAlerts(am.url)).map((a) => [
      a.labels.signature as string,
      { ...a.labels, ...prefixed(a.annotations), startsAt: a.startsAt, endsAt: a.endsAt },
    ]),
  );
const prefixed = (a: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(a).map(([k, v]) => [`annotation:${k}`, v]));

it('posts events of several severities as alerts labelled with their identity', async () => {
  await send([
    {
      source: 'web-1',
      type: 'HighCPU',
      class: 'cpu',
      severity: 'critical',
      signature: 'web-1:cpu',
      description: 'CPU at 99%',
      manager: 'nagios',
      rack: 7,
    },
    { source: 'db-1', class: 'disk', severity: 4, signature: 'db-1:disk', description: 'disk 91%' },
    { source: 'lb-1', severity: 'warning', signature: 'lb-1:latency', agent_location: 'dc-2' },
  ]);
  await waitFor('three alerts in Alertmanager', async () => (await activeAlerts(am.url)).length === 3, 15_000, 100);
  const alerts = await bySignature();
  expect(alerts.get('web-1:cpu')).toMatchObject({
    alertname: 'HighCPU',
    source: 'web-1',
    severity: 'critical',
    integration: 'demo',
    namespace: 'default',
    'annotation:description': 'CPU at 99%',
    'annotation:manager': 'nagios',
    'annotation:custom_info': '{"rack":7}',
  });
  expect(alerts.get('db-1:disk')).toMatchObject({ alertname: 'disk', severity: 'major', 'annotation:class': 'disk' });
  expect(alerts.get('lb-1:latency')).toMatchObject({
    alertname: 'IntakeEvent',
    severity: 'warning',
    'annotation:agent_location': 'dc-2',
  });
  expect(alerts.get('web-1:cpu')?.['annotation:event_id']).toMatch(/^[A-Za-z0-9_-]{43}$/);
  // endsAt is four resend intervals ahead: a lost re-send or two does not resolve the alert.
  const endsIn = Date.parse(alerts.get('web-1:cpu')?.endsAt ?? '') - Date.now();
  expect(endsIn).toBeGreaterThan(2 * RESEND_MS);
  expect(endsIn).toBeLessThanOrEqual(4 * RESEND_MS + 1000);
});

it('resolves the alert when severity 0 arrives with the same signature', async () => {
  await send({ source: 'lb-1', severity: 'clear', signature: 'lb-1:latency' });
  await waitFor('lb-1 resolved', async () => !(await bySignature()).has('lb-1:latency'), 15_000, 100);
  // The others keep firing through several re-sends.
  await new Promise((r) => setTimeout(r, 2 * RESEND_MS));
  expect([...(await bySignature()).keys()].sort()).toEqual(['db-1:disk', 'web-1:cpu']);
});

it('sends the firing alerts again to an Alertmanager that was killed and restarted, within one resend interval', async () => {
  const port = am.port;
  await am.kill9();
  am = await startAlertmanager(undefined, { port });
  const started = Date.now();
  expect(await activeAlerts(am.url)).toEqual([]);
  await waitFor(
    'alerts back after the restart',
    async () => (await activeAlerts(am.url)).length === 2,
    RESEND_MS + 3000,
    50,
  );
  const tookMs = Date.now() - started;
  expect([...(await bySignature()).keys()].sort()).toEqual(['db-1:disk', 'web-1:cpu']);
  expect(tookMs).toBeLessThanOrEqual(RESEND_MS + 1500);
  expect(await metricValue(ing.adminUrl, 'intake_destination_alerts{destination="alertmanager",state="firing"}')).toBe(
    2,
  );
}, 30_000);
