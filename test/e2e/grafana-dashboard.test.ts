/**
 * The chart's Grafana dashboard (charts/intake/files/dashboards/intake.json) against a real
 * Prometheus scraping a real ingester: a bounded load exercises every path a panel draws
 * (accepted and refused events and data points, failed logins, a custom mapping, the JetStream
 * hand-off with a spool, an HTTP destination that fails and refuses, remote write), and every
 * query of every panel must then return data. A panel whose query names a metric or label that
 * does not exist, or is spelled wrong, returns nothing and fails here.
 */
import { jest } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/paths.js';
import { waitFor } from '../support/waiting.js';
import { startEventReceiver, type EventReceiver } from './support/event-receiver.js';
import {
  API_KEY,
  DEMO,
  basic,
  post,
  startIngester,
  tenantAuth,
  tenantRoute,
  type RunningIngester,
} from './support/ingester.js';
import { handoffConfig, startNats, untilDeadLettersOpen, type RunningNats } from './support/nats-server.js';
import { query, startPrometheus, type Prometheus } from './support/prometheus.js';

jest.setTimeout(120_000);

interface Target {
  refId: string;
  expr: string;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: Target[];
}
const DASHBOARD = JSON.parse(readFileSync(join(ROOT, 'charts/intake/files/dashboards/intake.json'), 'utf8')) as {
  uid: string;
  panels: Panel[];
  templating: { list: Array<{ name: string }> };
};
const graphs = DASHBOARD.panels.filter((p) => p.type !== 'row');

/** What Grafana puts in place of the dashboard's variables: all namespaces, a one-minute rate window. */
const asGrafanaSends = (expr: string): string =>
  expr.replaceAll('$__rate_interval', '1m').replaceAll('$namespace', '.*');

const LIMITED_KEY = 'lim_0123456789abcdef0123456789abcdef';
/** How long the load runs, and its pace (requests a second on each path). */
const LOAD_MS = 12_000;
const TICK_MS = 200;

let nats: RunningNats;
let receiver: EventReceiver;
let prom: Prometheus;
let ing: RunningIngester;
let spoolDir: string;

beforeAll(async () => {
  spoolDir = mkdtempSync(join(tmpdir(), 'intake-dashboard-'));
  // The receiver (port 0) first: beside the others it could be given a port just picked for one of them.
  receiver = await startEventReceiver();
  [nats, prom] = await Promise.all([startNats(), startPrometheus()]);
  // Events marked refuse are answered 400 (dead-lettered); the first answers are 500s (retried).
  receiver.refuse = (e) => (e.custom_info as Record<string, unknown> | undefined)?.refuse === true;
  receiver.script.push({ status: 500 }, { status: 500 });
  ing = await startIngester((c) => {
    handoffConfig(nats, { spoolDir })(c);
    c.destinations = [
      {
        name: 'tickets',
        default: true,
        http: { url: receiver.url, timeout: '1s' },
        delivery: { maxAttempts: 3, backoffMin: '50ms', backoffMax: '200ms' },
      },
    ];
    // Flushed every 2 s: data points wait in the queue across scrapes, as under a real load.
    c.remoteWrite = { url: prom.writeUrl, flushInterval: '2s', backoffMin: '50ms', backoffMax: '400ms' };
    c.exposition = { enabled: false };
    (c.routes as unknown[]).push(
      tenantRoute('mapped', 'team-m', { mapping: { expression: '{"source": host, "severity": 3}' } }),
      tenantRoute('limited', 'team-l', {
        limits: { eventsPerSecond: 1, eventsBurst: 1, namespace: { eventsPerSecond: 2, eventsBurst: 2 } },
      }),
      {
        apiVersion: 'intake.dev/v1alpha1',
        kind: 'ApiKey',
        name: 'lim',
        namespace: 'team-l',
        credentials: [{ username: 'lim', secret: { plain: LIMITED_KEY } }],
        limits: {
          dataPointsPerSecond: 1,
          dataPointsBurst: 1,
          namespace: { dataPointsPerSecond: 3, dataPointsBurst: 3 },
        },
      },
    );
  });
  await untilDeadLettersOpen(ing.adminUrl);
  await prom.scrape([new URL(ing.adminUrl).host]);
}, 90_000);

afterAll(async () => {
  await ing?.stop();
  await Promise.all([receiver?.close(), nats?.stop(), prom?.stop()]);
  rmSync(spoolDir, { recursive: true, force: true });
});

/** One tick of the load: a request on each path, as a monitoring tool and a metrics agent would send them. */
async function tick(i: number): Promise<void> {
  const nowS = Math.floor(Date.now() / 1000);
  const demo = { authorization: basic(DEMO.user, DEMO.password) };
  await Promise.all([
    post(
      `${ing.url}/events/webhook_demo`,
      { source: `h${i}`, severity: 4, custom_info: { refuse: i % 10 === 0 } },
      demo,
    ),
    post(`${ing.url}/events/webhook_mapped`, { host: `m${i}` }, tenantAuth('mapped')),
    post(`${ing.url}/events/webhook_limited`, { source: `l${i}`, severity: 2 }, tenantAuth('limited')),
    post(`${ing.url}/v1/integrations/metrics`, [{ metric: 'dash.e2e', data: i, source: 'h', time: nowS }], {
      apikey: API_KEY,
    }),
    post(`${ing.url}/v1/integrations/metrics`, [{ metric: 'dash.e2e.limited', data: i, source: 'h', time: nowS }], {
      apikey: LIMITED_KEY,
    }),
  ]);
}

describe('the Grafana dashboard', () => {
  it('is well formed: every panel queries the chosen data source, with ids unique', () => {
    expect(DASHBOARD.uid).toBe('intake-overview');
    expect(DASHBOARD.templating.list.map((v) => v.name)).toEqual(['datasource', 'namespace']);
    expect(new Set(DASHBOARD.panels.map((p) => p.id)).size).toBe(DASHBOARD.panels.length);
    expect(graphs.length).toBeGreaterThanOrEqual(15);
    for (const p of graphs) {
      expect({ panel: p.title, uid: p.datasource?.uid }).toEqual({ panel: p.title, uid: '${datasource}' });
      expect(p.targets?.length).toBeGreaterThan(0);
    }
  });

  it('shows data in every panel for an ingester under a bounded load', async () => {
    // Two failed logins: the refusals panel's authentication line (far below the guard's block).
    for (const password of ['wrong-1', 'wrong-2'])
      expect(
        (await post(`${ing.url}/events/webhook_demo`, { source: 'x' }, { authorization: basic(DEMO.user, password) }))
          .status,
      ).toBe(401);
    const start = Date.now();
    for (let i = 0; Date.now() - start < LOAD_MS; i++) {
      await Promise.all([tick(i), new Promise((r) => setTimeout(r, TICK_MS))]);
    }
    // Every refused event dead-lettered, and a few scrapes after the load so each rate has two samples.
    await waitFor(
      'a dead letter',
      async () => receiver.requests.some((r) => r.answer !== 'reset' && r.answer.status === 400),
      30_000,
      200,
    );
    await new Promise((r) => setTimeout(r, 3_000));

    const empty: string[] = [];
    for (const panel of graphs)
      for (const target of panel.targets ?? []) {
        const result = await query(prom, asGrafanaSends(target.expr));
        const finite = result.filter((s) => Number.isFinite(Number(s.value[1])));
        if (finite.length === 0) empty.push(`${panel.title} (${target.refId}): ${target.expr}`);
      }
    expect(empty).toEqual([]);

    // The limits the usage panels divide by, cluster-wide and in the counters' units.
    const limit = async (namespace: string, resource: string): Promise<string | undefined> =>
      (await query(prom, `intake_tenant_limit_per_second{namespace="${namespace}", resource="${resource}"}`))[0]
        ?.value[1];
    expect(await limit('team-l', 'events')).toBe('2');
    expect(await limit('team-l', 'datapoints')).toBe('3');
    expect(await limit('team-m', 'mapping_cpu_seconds')).toBe('0.5');
  });
});
