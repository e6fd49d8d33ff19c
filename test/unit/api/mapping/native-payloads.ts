/**
 * Generated payloads for the native presets' equivalence tests (native.test.ts): each preset's
 * fields with plausible values (every entry of its tables among them) and, often, odd ones: missing,
 * null, empty, wrong types, numbers JSONata rounds, unicode, keys only an object's prototype has,
 * objects replaced by arrays of them, and now and then a body that is an array or no object at all.
 * Deterministic (a fixed seed per preset), so a failure names a reproducible case.
 */
import type { PresetName } from '../../../../api/mapping/presets.js';

/** A leaf lists plausible values; an object nests; list() is an array of 1-4 such objects. */
type Shape = readonly unknown[] | { readonly [key: string]: Shape } | { readonly [LIST]: Shape };
const LIST = Symbol('list');
const list = (item: Shape): Shape => ({ [LIST]: item });

const ODD: readonly unknown[] = [
  null,
  '',
  0,
  1,
  -3,
  Math.PI / 3,
  0.30000000000000004,
  1e21,
  true,
  false,
  [],
  ['x'],
  ['a', 'b'],
  [['nested']],
  {},
  { k: 'v' },
  'Ünïcødé ✓ 🚨',
  'İSTANBUL',
  'ß',
  'constructor',
  '__proto__',
  'toString',
  '  spaced  out  ',
];

/** mulberry32: small, well-distributed, deterministic. */
function random(seed: number): (n: number) => number {
  let s = seed >>> 0;
  return (n) => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
}

function generate(shape: Shape, rnd: (n: number) => number): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[rnd(xs.length)] as T;
  if (Array.isArray(shape)) return rnd(4) === 0 ? pick(ODD) : pick(shape as readonly unknown[]);
  if (LIST in shape) {
    const item = (shape as { [LIST]: Shape })[LIST];
    if (rnd(12) === 0) return pick(ODD);
    return Array.from({ length: 1 + rnd(4) }, () => generate(item, rnd));
  }
  const object = (): Record<string, unknown> => {
    const o: Record<string, unknown> = {};
    for (const [key, sub] of Object.entries(shape as Record<string, Shape>)) {
      if (rnd(6) === 0) continue;
      o[key] = generate(sub, rnd);
    }
    return o;
  };
  switch (rnd(16)) {
    case 0:
      return pick(ODD);
    case 1:
      return [object()];
    case 2:
      return [object(), object()];
    default:
      return object();
  }
}

const text = ['web-1', 'Disk full on /var', 'a=b,c', 'Ünïcødé ✓ 🚨'];
const time = ['2026-11-22T20:43:01.316853583Z', '0001-01-01T00:00:00Z', '1763844181000', 1763844181];
const alert = (grafana: boolean): Shape => ({
  status: ['firing', 'resolved', 'other'],
  labels: {
    alertname: ['HighCPU', ...text],
    instance: text,
    host: text,
    job: ['node', ''],
    severity: [
      'critical',
      'Fatal',
      'PAGE',
      'error',
      'high',
      'major',
      'minor',
      'medium',
      'warning',
      'WARN',
      'low',
      'info',
      'none',
      'weird',
    ],
    zone: text,
  },
  annotations: { summary: text, description: text, message: text },
  startsAt: time,
  endsAt: time,
  generatorURL: ['', 'http://prom/graph'],
  fingerprint: ['', '61a934e31c3bc048', 12345],
  ...(grafana
    ? {
        dashboardURL: ['http://grafana/d/x'],
        panelURL: ['http://grafana/d/x?viewPanel=1'],
        silenceURL: [''],
        valueString: ['[ var=A value=3 ]'],
      }
    : {}),
});

/** The shape of each preset's payload: the fields its expression reads, and a few it does not. */
export const SHAPES: Record<PresetName, Shape> = {
  alertmanager: {
    receiver: ['intake'],
    status: ['firing'],
    alerts: list(alert(false)),
    groupKey: ['{}:{alertname="HighCPU"}'],
    version: ['4'],
  },
  grafana: {
    receiver: ['intake'],
    status: ['firing'],
    alerts: list(alert(true)),
    groupKey: ['{}/{}:{}'],
    version: ['1'],
  },
  'pagerduty-events-v2': {
    payload: {
      summary: text,
      timestamp: time,
      severity: ['critical', 'error', 'warning', 'info', 'CRITICAL', 'debug'],
      source: text,
      component: ['mysql'],
      group: ['prod'],
      class: ['disk'],
      custom_details: [{ 'free space': '1%' }, 'text'],
    },
    routing_key: ['key'],
    dedup_key: ['samplekeyhere', ''],
    event_action: ['trigger', 'acknowledge', 'resolve', 'trigger', 'resolve', 'TRIGGER'],
    client: ['Sample Monitoring Service', ''],
    client_url: ['https://monitoring.example.com'],
    links: [[{ href: 'http://x', text: 'x' }]],
  },
  datadog: {
    id: ['7364732148239487234', 7364732148239487],
    alert_id: ['12345678', 12345678],
    alert_cycle_key: ['7364732148239480000'],
    title: text,
    body: text,
    alert_transition: ['Triggered', 'Recovered', 'Warn', 'No Data', 'Re-Triggered', 'RECOVERED'],
    alert_type: ['error', 'warning', 'info', 'success', 'ERROR', 'other'],
    priority: ['P1', 'P2', 'P3', 'P4', 'P5', 'p2', 'P6', ''],
    scope: ['host:web-1', ''],
    hostname: ['web-1', ''],
    tags: ['env:prod,service:web'],
    date: ['1763844181000'],
    link: ['https://app.datadoghq.com/event/1'],
    org: [{ id: '11287', name: 'Acme' }],
  },
  zabbix: {
    event_id: ['4711', 4711],
    event_value: ['0', '1', 0, 1, '2', 1 + 2 ** -52],
    event_nseverity: ['0', '1', '2', '3', '4', '5', 4, '6', 3.5],
    event_severity: ['High'],
    event_name: text,
    event_update_status: ['0', '1', 1],
    event_tags: ['[]'],
    event_opdata: ['97 %'],
    host: ['web-1', 'db-2'],
    host_ip: ['10.0.0.11'],
    trigger_id: ['23456'],
    trigger_name: ['High CPU utilization', ''],
    zabbix_url: ['https://zabbix.example.com'],
  },
  nagios: {
    notification_type: ['PROBLEM', 'RECOVERY', 'Recovery', 'ACKNOWLEDGEMENT', 'CUSTOM'],
    host: ['web-1', 'db-2'],
    address: ['10.0.0.11'],
    service: ['HTTP', ''],
    state: ['OK', 'WARNING', 'CRITICAL', 'UNKNOWN', 'UP', 'DOWN', 'UNREACHABLE', 'up', 'critical', 'Other'],
    state_type: ['HARD', 'SOFT'],
    output: ['CRITICAL - Socket timeout', ''],
    timestamp: ['1763844181'],
    manager: ['Icinga 2', ''],
    author: ['admin'],
    comment: ['looking'],
  },
  'azure-monitor': {
    schemaId: ['azureMonitorCommonAlertSchema', 'azureMonitorCommonAlertSchema', 'Microsoft.Insights/activityLogs'],
    data: {
      essentials: {
        alertId: ['/subscriptions/1/alerts/2'],
        alertRule: ['test-metricAlertRule', ''],
        severity: ['Sev0', 'Sev1', 'Sev2', 'Sev3', 'Sev4', 'sev0', 'Sev5'],
        signalType: ['Metric', 'Log'],
        monitorCondition: ['Fired', 'Resolved', 'resolved'],
        monitoringService: ['Platform'],
        alertTargetIDs: [['/subscriptions/1/rg/x'], [], ['a', 'b'], 'not-a-list'],
        configurationItems: [['test-storageAccount'], [], [['nested']], ['', 'second'], 'not-a-list'],
        originAlertId: ['origin-1'],
        firedDateTime: time,
        resolvedDateTime: time,
        description: ['Alert rule description', ''],
      },
      alertContext: [{ condition: { windowSize: 'PT5M' } }, {}],
      customProperties: [{ k: 'v' }, null],
    },
  },
  'google-cloud-monitoring': {
    incident: {
      incident_id: ['0.ligwyr056k2l', 42],
      scoping_project_id: ['acme-prod', ''],
      url: ['https://console.cloud.google.com/monitoring/alerting/incidents/1'],
      started_at: [1579559444, 1579559444.5],
      ended_at: [1579559552, null, 0],
      state: ['open', 'closed', 'CLOSED', 'Closed'],
      summary: text,
      observed_value: ['0.000'],
      resource: { type: ['uptime_url'], labels: { instance_id: ['1234567890', ''], host: ['api.acme.com'] } },
      resource_display_name: ['api.acme.com', ''],
      resource_name: ['acme-prod Uptime Check URL', ''],
      metric: [{ type: 'monitoring.googleapis.com/uptime_check/check_passed' }],
      policy_name: ['api uptime'],
      policy_user_labels: { severity: ['critical', 'error', 'warning', 'info', 'CRITICAL'] },
      condition_name: ['Uptime Health Check on api'],
      threshold_value: ['1'],
      severity: ['CRITICAL', 'ERROR', 'WARNING', 'critical', 'No severity'],
    },
    version: ['1.2'],
  },
  'uptime-kuma': {
    heartbeat: {
      monitorID: [3],
      status: [0, 1, 2, 3, '0', '1', 4],
      time: ['2026-11-22 20:43:01.123', '2026-11-22T20:43:01Z', 'a b c'],
      msg: ['timeout of 48000ms exceeded', ''],
      ping: [null, 87, 87 + Math.PI / 100],
      important: [true, false],
    },
    monitor: {
      id: [3, '3', 3 + 2 ** -51],
      name: ['Shop', ''],
      type: ['http', 'keyword'],
      url: ['https://shop.example.com', ''],
      hostname: [null, 'shop.example.com', ''],
    },
    msg: ['[Shop] [🔴 Down] timeout', 'Uptime Kuma Testing', ''],
  },
};

/** `count` payloads of the preset; now and then a body that is an array or no object at all. */
export function* payloads(preset: PresetName, seed: number, count: number): Generator<unknown> {
  const rnd = random(seed);
  for (let i = 0; i < count; i++) {
    const body = generate(SHAPES[preset], rnd);
    // Through JSON, as a request body arrives: no undefined, -0 is 0, 1e21 stays a number.
    yield JSON.parse(JSON.stringify(body) ?? 'null') as unknown;
  }
}
