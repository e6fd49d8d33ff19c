/**
 * Hostile-neighbour matrix, alert states (docs/design.md §4b): tenant A floods ever-new alerts at
 * an Alertmanager destination it shares with tenant B, and at one of its own. A's namespace fills
 * only its share (`maxAlertsPerNamespace`) and A alone is refused new alerts; B's requests are
 * answered 200 within the bound, every alert B starts is created and reaches the real
 * Alertmanager, none of B's is refused, and the replica stays ready.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../support/waiting.js';
import { activeAlerts, startAlertmanager, type RunningAlertmanager } from '../support/alertmanager.js';
import { post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { expectUnharmed, steadyTenant } from './support.js';

const SHARE = 300;
const spool = mkdtempSync(join(tmpdir(), 'intake-hn-alerts-'));
let am: RunningAlertmanager | undefined;
let ing: RunningIngester | undefined;

afterAll(async () => {
  await ing?.stop('SIGKILL');
  await am?.stop();
  rmSync(spool, { recursive: true, force: true });
});

/** Refusals of new alerts on the admin /metrics, for one namespace. */
async function refused(namespace: string): Promise<number> {
  const text = await (await fetch(`${ing!.adminUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('intake_destination_alerts_refused_total{') && l.includes(`namespace="${namespace}"`))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

it("A's flood of new alert states fills only A's share; B's alerts are created and delivered", async () => {
  am = await startAlertmanager();
  ing = await startIngester((c) => {
    c.spool = { path: spool };
    const alertmanager = { urls: [am!.url], resendInterval: '2s', maxAlertsPerNamespace: SHARE, maxAlerts: 5000 };
    c.destinations = [
      { name: 'shared', default: true, alertmanager },
      { name: 'a-own', alertmanager },
    ];
    (c.routes as unknown[]).push(
      tenantRoute('hn-alerts-a', 'team-a', { destinations: ['shared'] }),
      tenantRoute('hn-alerts-a-own', 'team-a', { destinations: ['a-own'] }),
      tenantRoute('hn-alerts-b', 'team-b', { destinations: ['shared'] }),
    );
  });
  const url = ing.url;

  // A: batches of 100 never-seen alerts, two at a time on each of its integrations, until B is done.
  let attacking = true;
  let sentByA = 0;
  const flood = async (name: string): Promise<void> => {
    for (let n = 0; attacking; n++) {
      const events = Array.from({ length: 100 }, (_, i) => ({
        source: `${name}-${n}-${i}-${Math.random()}`,
        severity: 'critical',
        class: 'flood',
      }));
      const res = await post(`${url}/events/webhook_${name}`, events, tenantAuth(name)).catch(() => undefined);
      if (res?.status === 200) sentByA += events.length;
    }
  };
  const attack = Promise.all([flood('hn-alerts-a'), flood('hn-alerts-a'), flood('hn-alerts-a-own')]);
  // B starts once A holds its share (its first refused alert); without shares, after 5 s at most.
  await waitFor('A at its share', async () => (await refused('team-a')) > 0, 5_000, 50).catch(() => undefined);

  const result = await steadyTenant({
    url: `${url}/events/webhook_hn-alerts-b`,
    headers: { 'content-type': 'application/json', ...tenantAuth('hn-alerts-b') },
    body: (seq) => ({ body: JSON.stringify({ source: `b-host-${seq}`, severity: 'critical', class: 'steady' }) }),
    perSecond: 10,
    durationMs: 5_000,
    adminUrl: ing.adminUrl,
  });
  attacking = false;
  await attack;

  console.log(
    `alert states: A sent ${sentByA} new alerts (its share ${SHARE}, the replica's 5000); ` +
      `B ${result.statuses.length} requests, p99 ${result.p99Ms.toFixed(1)} ms`,
  );
  expectUnharmed(result, { p99BoundMs: 1500 });
  // The attack reached A's share: A was refused new alerts.
  expect(sentByA).toBeGreaterThan(SHARE);
  await waitFor('A refused past its share', async () => (await refused('team-a')) > 0, 15_000, 200);
  // Every alert B started is in Alertmanager, none refused.
  const sentByB = result.statuses.filter((s) => s === 200).length;
  await waitFor(
    "all of B's alerts in Alertmanager",
    async () =>
      (await activeAlerts(am!.url)).filter((a) => a.labels.namespace === 'team-b' && a.labels.alertname === 'steady')
        .length === sentByB,
    20_000,
    250,
  );
  expect(await refused('team-b')).toBe(0);
  const inAm = await activeAlerts(am.url);
  // A holds at most its share on each destination (both post to this Alertmanager).
  expect(inAm.filter((a) => a.labels.namespace === 'team-a').length).toBeLessThanOrEqual(2 * SHARE);
}, 60_000);
