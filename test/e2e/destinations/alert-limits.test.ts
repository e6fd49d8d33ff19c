/**
 * Alert states are bounded per namespace: past maxAlertsPerNamespace a new alert is refused (not
 * kept, not sent to a real Alertmanager, counted and logged), the alerts already kept keep being
 * re-sent, and a resolved alert frees its place once its retention is over.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../support/waiting.js';
import { activeAlerts, startAlertmanager, type RunningAlertmanager } from '../support/alertmanager.js';
import {
  basic,
  DEMO,
  post,
  startIngester,
  tenantAuth,
  tenantRoute,
  type RunningIngester,
} from '../support/ingester.js';

const spoolDir = mkdtempSync(join(tmpdir(), 'intake-alert-limits-'));
let am: RunningAlertmanager | undefined;
let ing: RunningIngester | undefined;

afterAll(async () => {
  await ing?.stop('SIGKILL');
  await am?.stop();
  rmSync(spoolDir, { recursive: true, force: true });
});

const send = async (body: unknown): Promise<void> => {
  const res = await post(`${ing!.url}/events/webhook_demo`, body, { authorization: basic(DEMO.user, DEMO.password) });
  expect(res.status).toBe(200);
};

/** The sum of a labelled counter's series matching `labels` on the admin /metrics. */
async function counter(name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${ing!.adminUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

it('refuses new alerts past maxAlertsPerNamespace, counts and logs them, and takes new ones once a place is free', async () => {
  am = await startAlertmanager();
  ing = await startIngester((c) => {
    c.spool = { path: spoolDir };
    c.destinations = [
      {
        name: 'am',
        default: true,
        alertmanager: { urls: [am!.url], resendInterval: '1s', resolvedRetention: '1s', maxAlertsPerNamespace: 20 },
      },
    ];
  });
  await send(Array.from({ length: 30 }, (_, i) => ({ source: `host-${i}`, severity: 'critical', class: 'cpu' })));
  await waitFor(
    'refusals counted',
    async () =>
      (await counter('intake_destination_alerts_refused_total', {
        destination: 'am',
        namespace: 'default',
        limit: 'namespace',
      })) === 10,
    15_000,
    100,
  );
  await waitFor('20 alerts in Alertmanager', async () => (await activeAlerts(am!.url)).length === 20, 15_000, 100);
  // Re-sends (every second) keep exactly the kept ones.
  await new Promise((r) => setTimeout(r, 2500));
  const kept = (await activeAlerts(am.url)).map((a) => a.labels.source).sort();
  expect(kept).toHaveLength(20);
  expect(kept).toEqual(Array.from({ length: 20 }, (_, i) => `host-${i}`).sort());
  expect(ing.stdout() + ing.stderr()).toContain('a new alert was refused');

  // A clear resolves host-0; after its retention its place is free for a new alert.
  await send({ source: 'host-0', severity: 'clear', class: 'cpu' });
  await new Promise((r) => setTimeout(r, 3500));
  await send({ source: 'late', severity: 'critical', class: 'cpu' });
  await waitFor(
    'the new alert in Alertmanager',
    async () => (await activeAlerts(am!.url)).some((a) => a.labels.source === 'late'),
    15_000,
    100,
  );
  expect(await counter('intake_destination_alerts_refused_total', { destination: 'am' })).toBe(10);
}, 60_000);

describe('the caps are exact while re-send rounds recount the states', () => {
  let am2: RunningAlertmanager | undefined;
  let ing2: RunningIngester | undefined;
  const spool2 = mkdtempSync(join(tmpdir(), 'intake-alert-caps-'));

  afterAll(async () => {
    await ing2?.stop('SIGKILL');
    await am2?.stop();
    rmSync(spool2, { recursive: true, force: true });
  });

  it('keeps exactly maxAlerts states, at most maxAlertsPerNamespace each, however the creates and the rounds interleave', async () => {
    am2 = await startAlertmanager();
    ing2 = await startIngester((c) => {
      c.spool = { path: spool2 };
      (c.routes as unknown[]).push(tenantRoute('caps-a', 'team-a'), tenantRoute('caps-b', 'team-b'));
      c.destinations = [
        {
          name: 'am',
          default: true,
          alertmanager: {
            urls: [am2!.url],
            // Rounds every second, each long enough (pages of 256 posted one by one) to overlap creates.
            resendInterval: '1s',
            maxAlertsPerNamespace: 1200,
            maxAlerts: 2000,
          },
        },
      ];
    });
    const perTenant = 2400;
    const batch = 60;
    const sendNew = async (name: string, from: number): Promise<void> => {
      const events = Array.from({ length: batch }, (_, i) => ({
        source: `${name}-host-${from + i}`,
        severity: 'critical',
        class: 'cpu',
      }));
      const res = await post(`${ing2!.url}/events/webhook_${name}`, events, tenantAuth(name));
      expect(res.status).toBe(200);
    };
    // New alerts from both tenants, spread over several re-send rounds.
    for (let from = 0; from < perTenant; from += batch) {
      await Promise.all([sendNew('caps-a', from), sendNew('caps-b', from)]);
      await new Promise((r) => setTimeout(r, 100));
    }
    /** The sum of a metric's series for destination am, on the admin /metrics. */
    const sum = async (name: string): Promise<number> => {
      const text = await (await fetch(`${ing2!.adminUrl}/metrics`)).text();
      return text
        .split('\n')
        .filter((l) => l.startsWith(`${name}{`) && l.includes('destination="am"'))
        .reduce((total, l) => total + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    };
    // The states the store holds, as the last re-send round counted them (every second).
    const states = (): Promise<number> => sum('intake_destination_alerts');
    const refused = (): Promise<number> => sum('intake_destination_alerts_refused_total');
    await waitFor(
      'every new alert kept or refused',
      async () => (await states()) + (await refused()) >= 2 * perTenant,
      60_000,
      250,
    );
    // A little longer: nothing more arrives, more rounds run.
    await new Promise((r) => setTimeout(r, 2500));
    const kept = await activeAlerts(am2.url);
    const byNamespace = (ns: string): number => kept.filter((a) => a.labels.namespace === ns).length;
    expect({
      states: await states(),
      refused: await refused(),
      inAlertmanager: kept.length <= 2000,
      a: byNamespace('team-a') <= 1200,
      b: byNamespace('team-b') <= 1200,
    }).toEqual({ states: 2000, refused: 2 * perTenant - 2000, inAlertmanager: true, a: true, b: true });
  }, 120_000);
});
