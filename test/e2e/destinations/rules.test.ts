/**
 * Routing rules through the real ingester, standalone (the outbox) and with the bus: two HTTP
 * receivers, rules by severity and by a custom_info label, one that drops. Every event of one
 * request (one bus message) is routed on its own; a dropped event reaches no receiver and is
 * counted in metrics and activity; the dry run says, per event, which rule matched and where it
 * would go.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, startNats, type RunningNats } from '../support/nats-server.js';

const RULES = [
  { name: 'drop-tests', match: { source: { regex: 'test-.*' } }, drop: true },
  { name: 'payments', match: { customInfo: { team: { equals: 'payments' } } }, destinations: ['pager', 'tickets'] },
  { name: 'pages', match: { severity: { min: 'major' } }, destinations: ['pager'] },
];

const EVENTS = [
  { source: 'web-1', severity: 'critical', description: 'pages' },
  { source: 'web-2', severity: 'warning', description: 'unmatched' },
  { source: 'db-1', severity: 'minor', custom_info: { team: 'payments' }, description: 'payments' },
  { source: 'test-1', severity: 'critical', description: 'dropped' },
  { source: 'web-3', severity: 'major', description: 'pages' },
];

describe.each(['standalone', 'bus'] as const)('routing rules, %s', (mode) => {
  let pager: EventReceiver;
  let tickets: EventReceiver;
  let nats: RunningNats | undefined;
  let ing: RunningIngester;
  const spoolDir = mkdtempSync(join(tmpdir(), 'intake-rules-e2e-'));

  beforeAll(async () => {
    [pager, tickets] = await Promise.all([startEventReceiver(), startEventReceiver()]);
    if (mode === 'bus') nats = await startNats();
    ing = await startIngester((c) => {
      if (nats) handoffConfig(nats)(c);
      else c.spool = { path: spoolDir };
      c.destinations = [
        { name: 'pager', http: { url: pager.url, timeout: '2s' } },
        { name: 'tickets', default: true, http: { url: tickets.url, timeout: '2s' } },
      ];
      const demo = (c.routes as Array<Record<string, unknown>>).find((r) => r.name === 'demo') as Record<
        string,
        unknown
      >;
      demo.destinations = ['tickets'];
      demo.rules = RULES;
    });
  }, 60_000);

  afterAll(async () => {
    await ing?.stop();
    await Promise.all([pager?.close(), tickets?.close(), nats?.stop()]);
    rmSync(spoolDir, { recursive: true, force: true });
  });

  const auth = { authorization: basic(DEMO.user, DEMO.password) };
  const descriptions = (r: EventReceiver): string[] =>
    r.requests.flatMap((q) => q.events.map((e) => `${e.source as string}:${e.description as string}`)).sort();

  it('the dry run says per event which rule matched and where it would go', async () => {
    const res = await post(`${ing.url}/events/webhook_demo?dryRun=true`, EVENTS, auth);
    expect(res.status).toBe(200);
    expect(res.json().routing).toEqual([
      { matched: ['pages'], destinations: ['pager'] },
      { matched: [], destinations: ['tickets'] },
      { matched: ['payments'], destinations: ['pager', 'tickets'] },
      { matched: ['drop-tests'], destinations: [], droppedBy: 'drop-tests' },
      { matched: ['pages'], destinations: ['pager'] },
    ]);
    // A dry run delivers nothing.
    await new Promise((r) => setTimeout(r, 300));
    expect(pager.requests).toEqual([]);
    expect(tickets.requests).toEqual([]);
  });

  it('delivers by severity and by a custom_info label, and drops what a rule drops', async () => {
    const res = await post(`${ing.url}/events/webhook_demo`, EVENTS, auth);
    expect(res.status).toBe(200);
    expect(res.json()).toMatchObject({ response: { received: 5 } });
    await waitFor('pager has its three', async () => pager.accepted.size === 3, 20_000, 50);
    await waitFor('tickets has its two', async () => tickets.accepted.size === 2, 20_000, 50);
    // Time for a wrong delivery to show up.
    await new Promise((r) => setTimeout(r, 1000));
    expect(descriptions(pager)).toEqual(['db-1:payments', 'web-1:pages', 'web-3:pages']);
    expect(descriptions(tickets)).toEqual(['db-1:payments', 'web-2:unmatched']);
    expect(
      await metricValue(
        ing.adminUrl,
        'intake_events_dropped_by_rule_total{integration="demo",namespace="default",rule="drop-tests"}',
      ),
    ).toBe(1);
    const activity = (await (await fetch(`${ing.adminUrl}/status/activity`)).json()) as {
      webhookIntegrations: Array<{ name: string; eventsLastHour: number; droppedByRuleLastHour?: number }>;
    };
    expect(activity.webhookIntegrations.find((w) => w.name === 'demo')).toMatchObject({
      eventsLastHour: 5,
      droppedByRuleLastHour: 1,
    });
  });
});
