/**
 * What the ingester benchmark's scenarios run against: the config and request bodies written to the
 * work dir, the targets wrk loads, the checks that the answers are right before anything is
 * measured, and the series scenario.
 */
import { existsSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../../test/support/ports.js';
import { alertmanagerConfig as alertmanagerConfigText } from '../../test/e2e/support/alertmanager.js';
import type { PresetName } from '../../api/mapping/presets.js';
import type { Target } from '../support/load.js';
import { PRESET_ROUTES, writePresetBodies } from './presets.js';
import {
  BENCH_API_KEY,
  BENCH_API_KEY_ROUTE,
  BENCH_AUTH,
  BENCH_PASSWORD,
  BENCH_TENANT_LIMITS,
  BENCH_USER,
  benchWebhook,
} from '../support/processes.js';
import { median } from '../../test/support/stats.js';
import { peakRssMiB, request, rssMiB, type Server } from '../support/servers.js';
import {
  DIR,
  log,
  NOTIFICATION_ALERTS,
  NOTIFICATION_CONNECTIONS,
  OK_EVENT,
  RENDERS,
  SERIES,
  SERIES_BATCH,
} from '../support/settings.js';

export interface Setup {
  ports: { ingest: number; admin: number; baseline: number; gateway: number; alertmanager: number };
  configFile: string;
  eventsFile: string;
  bodies: {
    event: string;
    batch: string;
    point: string;
    push: string;
    alert: string;
    notification: string;
    raw: string;
    /** Each preset's request body (bench/ingest/presets.ts). */
    presets: Record<PresetName, string>;
  };
  alertmanagerConfig: string;
}

export async function prepare(): Promise<Setup> {
  const ports = {
    ingest: await freePort(),
    admin: await freePort(),
    baseline: await freePort(),
    gateway: await freePort(),
    alertmanager: await freePort(),
  };
  const configFile = join(DIR, 'intake.yaml');
  const config = {
    listen: `127.0.0.1:${ports.ingest}`,
    adminListen: `127.0.0.1:${ports.admin}`,
    logLevel: 'warn',
    limits: { pointsPerRequest: SERIES_BATCH, maxSeriesPerNamespace: 250_000, maxSeriesTotal: 250_000 },
    tenantLimits: BENCH_TENANT_LIMITS,
    // One namespace (the bench's) sends every payload, 32 at once: its share of the mapping queue
    // (a quarter of it by default, 16) is out of reach, as its rates are, so the custom mapping
    // scenario measures the workers, not the share's 503s.
    mapping: { maxQueuedPerNamespace: 64 },
    // In the work dir: the default (/tmp/intake-deadletter.sqlite) would be shared with other runs.
    deadLetter: { path: join(DIR, 'deadletter.sqlite') },
    routes: [benchWebhook(), BENCH_API_KEY_ROUTE, ...MAPPED_ROUTES],
  };
  writeFileSync(configFile, `# written by bench/ingest/ingest.ts\n${stringify(config)}`);
  const event = {
    source: 'web-01.example.com',
    severity: 'critical',
    class: 'cpu',
    type: 'high',
    description: 'CPU above 95% for 5 minutes',
  };
  const batch = Array.from({ length: 100 }, (_, i) => ({
    ...event,
    source: `web-${String(i).padStart(2, '0')}.example.com`,
    severity: i % 6,
  }));
  const bodies = {
    event: join(DIR, 'event.json'),
    batch: join(DIR, 'batch.json'),
    point: join(DIR, 'point.json'),
    push: join(DIR, 'push.txt'),
    alert: join(DIR, 'alert.json'),
    notification: join(DIR, 'alertmanager-notification.json'),
    raw: join(DIR, 'raw-event.json'),
    presets: {} as Record<PresetName, string>,
  };
  writeFileSync(bodies.event, JSON.stringify(event));
  writeFileSync(bodies.batch, JSON.stringify(batch));
  writeFileSync(
    bodies.point,
    JSON.stringify({ metric: 'cpu.load', data: 0.75, source: 'web-01', tags: { env: 'prod' } }),
  );
  writeFileSync(bodies.push, 'cpu_load{source="web-01",env="prod"} 0.75\n');
  // The same event as an Alertmanager alert: one alert per request, as the webhook sends one event.
  const alert = {
    labels: { alertname: 'cpu_high', instance: event.source, severity: event.severity, class: event.class },
    annotations: { description: event.description },
  };
  writeFileSync(bodies.alert, JSON.stringify([alert]));
  writeFileSync(bodies.notification, alertmanagerNotification(NOTIFICATION_ALERTS));
  bodies.presets = writePresetBodies(bodies.notification);
  // The same event in a tool's own shape, which the custom mapping turns into the event above.
  writeFileSync(bodies.raw, JSON.stringify({ host: event.source, level: event.severity, msg: event.description }));
  // Every alert goes to a receiver without integrations: Alertmanager keeps it and notifies nobody.
  const alertmanagerConfig = join(DIR, 'alertmanager.yml');
  writeFileSync(alertmanagerConfig, alertmanagerConfigText());
  return { ports, configFile, eventsFile: join(DIR, 'events.jsonl'), bodies, alertmanagerConfig };
}

// Data mapping: Alertmanager notifications through the preset, and a small custom mapping.
export const mappedRoute = (name: string, mapping: Record<string, string>) => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace: 'bench',
  credentials: [{ username: BENCH_USER, secret: { plain: BENCH_PASSWORD } }],
  mapping,
});
export const MAPPED_ROUTES = [
  mappedRoute('bench-am', { preset: 'alertmanager' }),
  mappedRoute('bench-mapped', {
    // BENCH_MAPPED_EXPRESSION: another expression for the custom mapping (it must map the raw event
    // to the same event), e.g. one JSONata's interpreter must evaluate: `$string(host)` for `host`.
    expression:
      process.env.BENCH_MAPPED_EXPRESSION ||
      '{"source": host, "severity": level, "class": "cpu", "type": "high", "description": msg}',
  }),
  // One route per preset (bench/ingest/presets.ts).
  ...PRESET_ROUTES,
];

/** An Alertmanager webhook_config notification (version 4) of one group: one alert in ten resolved. */
export function alertmanagerNotification(alerts: number): string {
  const startsAt = new Date().toISOString();
  return JSON.stringify({
    receiver: 'intake',
    status: 'firing',
    version: '4',
    groupKey: '{}:{alertname="HighCPU"}',
    externalURL: 'http://alertmanager:9093',
    truncatedAlerts: 0,
    groupLabels: { alertname: 'HighCPU' },
    commonLabels: { alertname: 'HighCPU', job: 'node' },
    commonAnnotations: {},
    alerts: Array.from({ length: alerts }, (_, i) => ({
      status: i % 10 === 0 ? 'resolved' : 'firing',
      // In the order Alertmanager writes them (a Go map: keys sorted).
      labels: {
        alertname: 'HighCPU',
        instance: `web-${i}:9100`,
        job: 'node',
        severity: i % 2 ? 'warning' : 'critical',
      },
      annotations: { summary: `CPU high on web-${i}` },
      startsAt,
      endsAt: i % 10 === 0 ? startsAt : '0001-01-01T00:00:00Z',
      generatorURL: 'http://prometheus:9090/graph',
      fingerprint: (0x1000000000000000 + i).toString(16),
    })),
  });
}

/** One request of each kind before measuring: a benchmark of wrong answers measures nothing. */
export async function checkIngester(s: Setup): Promise<void> {
  const before = existsSync(s.eventsFile) ? statSync(s.eventsFile).size : 0;
  const ev = await request(`http://127.0.0.1:${s.ports.ingest}/events/webhook_bench`, {
    method: 'POST',
    headers: { authorization: BENCH_AUTH, 'content-type': 'application/json' },
    body: readFileSync(s.bodies.event),
  });
  if (ev.status !== 200 || ev.text !== OK_EVENT)
    throw new Error(`ingester answered the single event with ${ev.status} ${ev.text}`);
  const after = statSync(s.eventsFile).size;
  const line = readFileSync(s.eventsFile, 'utf8').slice(before);
  if (after <= before || !line.includes('"integration":"bench"'))
    throw new Error(`the event did not reach ${s.eventsFile} (stdout)`);
  const pt = await request(`http://127.0.0.1:${s.ports.ingest}/v1/integrations/metrics`, {
    method: 'POST',
    headers: { apikey: BENCH_API_KEY, 'content-type': 'application/json' },
    body: readFileSync(s.bodies.point),
  });
  if (pt.status !== 200) throw new Error(`ingester answered the metric point with ${pt.status} ${pt.text}`);
}

/**
 * One request to each mapped route: the mapping must turn it into events, and the events per
 * notification that the events/s column counts are the ones the ingester says it processed.
 */
export async function checkMapping(s: Setup): Promise<{ eventsPerNotification: number }> {
  const post = (name: string, body: string) =>
    request(`http://127.0.0.1:${s.ports.ingest}/events/webhook_${name}`, {
      method: 'POST',
      headers: { authorization: BENCH_AUTH, 'content-type': 'application/json' },
      body: readFileSync(body),
    });
  const am = await post('bench-am', s.bodies.notification);
  const processed =
    am.status === 200 ? (JSON.parse(am.text) as { response?: { processed?: number } }).response?.processed : undefined;
  if (processed !== NOTIFICATION_ALERTS)
    throw new Error(
      `ingester answered the Alertmanager notification (preset alertmanager) with ${am.status} ${am.text}`,
    );
  const mapped = await post('bench-mapped', s.bodies.raw);
  if (mapped.status !== 200 || mapped.text !== OK_EVENT)
    throw new Error(`ingester answered the event for the custom mapping with ${mapped.status} ${mapped.text}`);
  const line = readFileSync(s.eventsFile, 'utf8').trimEnd().split('\n').pop() ?? '';
  if (!line.includes('"integration":"bench-mapped"') || !line.includes('"description":"CPU above 95% for 5 minutes"'))
    throw new Error(`the mapped event did not reach ${s.eventsFile} as mapped: ${line.slice(0, 300)}`);
  return { eventsPerNotification: processed };
}

export interface SeriesResult {
  createMs: number;
  renderMs: number;
  renderMin: number;
  renderMax: number;
  bytes: number;
  lines: number;
  rssAfter: number;
  peakRss: number;
}

export async function seriesScenario(s: Setup, ingester: Server): Promise<SeriesResult> {
  const url = `http://127.0.0.1:${s.ports.ingest}/v1/integrations/metrics`;
  let createMs = 0;
  for (let b = 0; b < SERIES / SERIES_BATCH; b++) {
    const points = Array.from({ length: SERIES_BATCH }, (_, i) => ({
      metric: 'bench_series',
      data: i,
      source: 'bench-host',
      tags: { i: String(b * SERIES_BATCH + i) },
    }));
    const r = await request(url, {
      method: 'POST',
      headers: { apikey: BENCH_API_KEY, 'content-type': 'application/json' },
      body: JSON.stringify(points),
    });
    if (r.status !== 200) throw new Error(`series batch ${b}: ${r.status} ${r.text.slice(0, 300)}`);
    createMs += r.ms;
  }
  const times: number[] = [];
  let bytes = 0;
  let lines = 0;
  for (let i = 0; i < RENDERS; i++) {
    const r = await request(`http://127.0.0.1:${s.ports.admin}/metrics/ingested`);
    if (r.status !== 200) throw new Error(`/metrics/ingested: ${r.status}`);
    times.push(r.ms);
    bytes = Buffer.byteLength(r.text);
    lines = r.text.split('\n').filter((l) => l.startsWith('bench_series{')).length;
  }
  if (lines !== SERIES) throw new Error(`/metrics/ingested holds ${lines} bench_series samples, expected ${SERIES}`);
  log(`series: renders ${times.map((t) => t.toFixed(0)).join(', ')} ms`);
  return {
    createMs,
    renderMs: median(times),
    renderMin: Math.min(...times),
    renderMax: Math.max(...times),
    bytes,
    lines,
    rssAfter: rssMiB(ingester),
    peakRss: peakRssMiB(ingester),
  };
}

export function targets(
  s: Setup,
  on: { ingester?: Server; baseline?: Server; gateway?: Server; alertmanager?: Server },
) {
  const emptyEvents = (): void => {
    if (existsSync(s.eventsFile)) truncateSync(s.eventsFile, 0);
  };
  const ingestEvents: Target = {
    label: 'ingester single event',
    url: `http://127.0.0.1:${s.ports.ingest}/events/webhook_bench`,
    bodyFile: s.bodies.event,
    headers: { authorization: BENCH_AUTH },
    after: emptyEvents,
    ...(on.ingester ? { server: on.ingester } : {}),
  };
  const single: Target = ingestEvents;
  const baseline: Target = {
    label: 'node:http baseline single event',
    url: `http://127.0.0.1:${s.ports.baseline}/`,
    bodyFile: s.bodies.event,
    headers: { authorization: BENCH_AUTH },
    ...(on.baseline ? { server: on.baseline } : {}),
  };
  const batch: Target = { ...ingestEvents, label: 'ingester 100-event batch', bodyFile: s.bodies.batch };
  const metric: Target = {
    label: 'ingester single metric point',
    url: `http://127.0.0.1:${s.ports.ingest}/v1/integrations/metrics`,
    bodyFile: s.bodies.point,
    headers: { apiKey: BENCH_API_KEY },
    ...(on.ingester ? { server: on.ingester } : {}),
  };
  const push: Target = {
    label: 'pushgateway single push',
    url: `http://127.0.0.1:${s.ports.gateway}/metrics/job/bench`,
    bodyFile: s.bodies.push,
    headers: { contentType: 'text/plain; version=0.0.4' },
    ...(on.gateway ? { server: on.gateway } : {}),
  };
  const alert: Target = {
    label: 'alertmanager single alert',
    url: `http://127.0.0.1:${s.ports.alertmanager}/api/v2/alerts`,
    bodyFile: s.bodies.alert,
    headers: {},
    ...(on.alertmanager ? { server: on.alertmanager } : {}),
  };
  const notification: Target = {
    ...ingestEvents,
    label: `ingester Alertmanager notification (${NOTIFICATION_ALERTS} alerts, preset alertmanager)`,
    url: `http://127.0.0.1:${s.ports.ingest}/events/webhook_bench-am`,
    bodyFile: s.bodies.notification,
    connections: NOTIFICATION_CONNECTIONS,
  };
  const mapped: Target = {
    ...ingestEvents,
    label: 'ingester single event, custom mapping',
    url: `http://127.0.0.1:${s.ports.ingest}/events/webhook_bench-mapped`,
    bodyFile: s.bodies.raw,
  };
  return { single, baseline, batch, metric, push, alert, notification, mapped };
}
