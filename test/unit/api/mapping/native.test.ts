/**
 * The native presets (api/mapping/native/) must produce exactly what their JSONata expressions
 * produce: the same events, as JSON text (so in the same key order), or the same failure code and
 * message. Both run through the engine: the native preset as a route uses it, the expression as
 * the engine evaluated it before (evaluateHere). Compared on the shipped fixtures, on generated
 * payloads (native-payloads.ts) and on hand-picked odd ones; then a few exact values, so that a
 * change to the native code and the expression alike (or to a table both share by accident) is
 * caught too.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  compileCached,
  compileMapping,
  DEFAULT_MAPPING_LIMITS,
  evaluateHere,
  MappingError,
} from '../../../../api/mapping/engine.js';
import { NATIVE_PRESETS, REFERENCE } from '../../../../api/mapping/native.js';
import { PRESET_NAMES, PRESETS, type PresetName } from '../../../../api/mapping/presets.js';
import { canonicalJson } from '../../../../ingester/core/event-id.js';
import { payloads } from './native-payloads.js';

const FIXTURES = join(process.cwd(), 'test/unit/api/mapping/fixtures');
const limits = DEFAULT_MAPPING_LIMITS;

interface Outcome {
  json?: string;
  code?: string;
  message?: string;
}

/**
 * The events as canonical JSON (keys sorted, as event ids hash them): a native preset may write an
 * event's members in another order than its JSONata reference (the alert groups write them sorted,
 * for a cheaper id), and key order is no part of an event's meaning; every value and every
 * member's presence still is.
 */
const outcome = async (run: () => Promise<{ items: unknown[] }>): Promise<Outcome> => {
  try {
    return { json: canonicalJson((await run()).items) };
  } catch (err) {
    const e = MappingError.from(err);
    return { code: e.code, message: e.message };
  }
};

/** The expression, evaluated as the engine evaluates an expression in this thread. */
const reference = (preset: PresetName, body: unknown): Promise<Outcome> =>
  outcome(() => evaluateHere(compileCached(PRESETS[preset].expression, limits), body, limits));

/** The preset as a route maps it: the native function (or, for the odd body it leaves, the expression). */
const native = (preset: PresetName, body: unknown): Promise<Outcome> =>
  outcome(() => compileMapping({ preset }, limits).evaluate(body));

/** True when the native function itself maps the body (it did not leave it to the expression). */
const mappedNatively = (preset: PresetName, body: unknown): boolean => {
  try {
    return (NATIVE_PRESETS[preset] as (b: unknown) => unknown)(body) !== REFERENCE;
  } catch {
    return true;
  }
};

interface Fixture {
  cases: Array<{ input: unknown }>;
  malformed: unknown;
}
const fixture = (preset: PresetName): Fixture =>
  JSON.parse(readFileSync(join(FIXTURES, `${preset}.json`), 'utf8')) as Fixture;

it('has a native function for every preset', () => {
  expect(Object.keys(NATIVE_PRESETS).sort()).toEqual([...PRESET_NAMES].sort());
});

describe.each(PRESET_NAMES.map((p, i) => [p, i] as const))('native preset %s', (preset, index) => {
  it('equals the JSONata preset on the fixture, mapping it natively', async () => {
    const f = fixture(preset);
    for (const body of [...f.cases.map((c) => c.input), f.malformed]) {
      expect(mappedNatively(preset, body)).toBe(true);
      expect(await native(preset, body)).toEqual(await reference(preset, body));
    }
    expect((await native(preset, f.malformed)).code).toBe('D3141');
  });

  it('equals the JSONata preset on 400 generated payloads with missing, empty and odd fields', async () => {
    let natively = 0;
    let failed = 0;
    for (const body of payloads(preset, 1000 + index, 400)) {
      const expected = await reference(preset, body);
      expect({ body, outcome: await native(preset, body) }).toEqual({ body, outcome: expected });
      if (mappedNatively(preset, body)) natively++;
      if (expected.code) failed++;
    }
    // The generator must exercise the native code, and both its successes and its failures.
    expect(natively).toBeGreaterThan(240);
    expect(failed).toBeGreaterThan(10);
    expect(failed).toBeLessThan(380);
  });

  it.each([
    ['an empty object', {}],
    ['null', null],
    ['a string', 'payload'],
    ['a number', 42],
    ['an empty array', []],
    ['an array of one fixture', 'fixture-in-array'],
    ['an array of two fixtures', 'fixtures-in-array'],
  ])('equals the JSONata preset on %s', async (_what, given) => {
    const first = fixture(preset).cases[0]?.input;
    const body =
      given === 'fixture-in-array'
        ? [first]
        : given === 'fixtures-in-array'
          ? [first, fixture(preset).cases[1]?.input]
          : given;
    expect(await native(preset, body)).toEqual(await reference(preset, body));
  });
});

/** Removes the member (in an edit of variant()). */
const DELETE = Symbol('delete');
/** Puts the member's value into an array of one (in an edit of variant()). */
const WRAP = Symbol('wrap');
type Edits = Record<string, unknown>;

/** The fixture's first case, copied, with each edit applied: `{"alerts.0.labels.severity": 5}`. */
function variant(preset: PresetName, edits: Edits): unknown {
  const body = structuredClone(fixture(preset).cases[0]?.input);
  for (const [where, value] of Object.entries(edits)) {
    const keys = where.split('.');
    const last = keys.pop() as string;
    let o = body as Record<string, unknown>;
    for (const k of keys) o = o[k] as Record<string, unknown>;
    if (value === DELETE) delete o[last];
    else o[last] = value === WRAP ? [o[last]] : value;
  }
  return body;
}

describe.each(['alertmanager', 'grafana'] as const)('the %s preset', (preset) => {
  it("writes each event's members and custom_info's in sorted order (its id is then one native JSON.stringify)", () => {
    const sorted = (o: object): boolean => Object.keys(o).join() === Object.keys(o).sort().join();
    for (const body of fixture(preset).cases.map((c) => c.input)) {
      const events = (NATIVE_PRESETS[preset] as (b: unknown) => unknown)(body) as Array<Record<string, unknown>>;
      expect(events.length).toBeGreaterThan(0);
      for (const e of events) {
        expect(sorted(e)).toBe(true);
        expect(sorted(e.custom_info as object)).toBe(true);
      }
    }
  });
});

describe('hand-picked odd payloads', () => {
  it.each<[PresetName, string, Edits]>([
    ['alertmanager', 'a severity that is a number', { 'alerts.0.labels.severity': 5 }],
    ['alertmanager', 'a severity only the prototype has', { 'alerts.0.labels.severity': 'constructor' }],
    ['alertmanager', 'alerts nested in an array of two', { alerts: WRAP }],
    ['alertmanager', 'labels in an array, no fingerprint', { 'alerts.0.labels': WRAP, 'alerts.0.fingerprint': DELETE }],
    [
      'alertmanager',
      'no fingerprint, a label 0.1 + 0.2',
      { 'alerts.0.fingerprint': DELETE, 'alerts.0.labels.x': 0.1 + 0.2 },
    ],
    ['grafana', 'a fingerprint with 17 digits', { 'alerts.0.fingerprint': Math.PI / 3 }],
    ['pagerduty-events-v2', 'a payload in an array of one', { payload: WRAP }],
    ['pagerduty-events-v2', 'links an array of one string', { links: ['x'] }],
    ['pagerduty-events-v2', 'a severity that is a number', { 'payload.severity': 2 }],
    [
      'pagerduty-events-v2',
      'an acknowledge with a severity that is a number',
      { event_action: 'acknowledge', 'payload.severity': 2 },
    ],
    ['datadog', 'a transition that is a number', { alert_transition: 1 }],
    ['datadog', 'a priority that is an array', { priority: ['P1'] }],
    ['datadog', 'no priority and an alert_type that is null', { priority: DELETE, alert_type: null }],
    ['zabbix', 'event_value the number 1', { event_value: 1 }],
    ['zabbix', 'event_value 1 + 2^-52 (1 in 15 digits)', { event_value: 1 + 2 ** -52 }],
    ['nagios', 'a state that is a number', { state: 2 }],
    ['nagios', 'a notification_type that is an object', { notification_type: { a: 1 } }],
    ['nagios', 'a service that is an empty object', { service: {} }],
    ['azure-monitor', 'essentials in an array of one', { 'data.essentials': WRAP }],
    ['azure-monitor', 'configurationItems nested', { 'data.essentials.configurationItems': [['a', 'b'], 'c'] }],
    [
      'google-cloud-monitoring',
      'a closed incident whose severity is a number',
      { 'incident.state': 'closed', 'incident.severity': 3 },
    ],
    ['google-cloud-monitoring', 'an open incident whose severity is a number', { 'incident.severity': 3 }],
    ['google-cloud-monitoring', 'a state that is an array', { 'incident.state': ['closed'] }],
    ['uptime-kuma', 'a time that is a number', { 'heartbeat.time': 1763844181 }],
    ['uptime-kuma', 'monitor in an array of one', { monitor: WRAP }],
  ])('%s: %s', async (preset, _what, edits) => {
    const body = variant(preset, edits);
    expect(await native(preset, body)).toEqual(await reference(preset, body));
  });
});

/**
 * Exact values, written out: the equivalence tests pass when the native code and the expression
 * change alike, these do not. Each row is one table entry or one branch.
 */
describe('exact values', () => {
  const mapped = async (preset: PresetName, body: unknown): Promise<Record<string, unknown>> => {
    const items = (await compileMapping({ preset }, limits).evaluate(body)).items;
    expect(items.length).toBeGreaterThanOrEqual(1);
    return items[0] as Record<string, unknown>;
  };
  const severity = (preset: PresetName, edits: Edits) => mapped(preset, variant(preset, edits)).then((e) => e.severity);

  it.each<[PresetName, string, number]>([
    ['alertmanager', 'critical', 5],
    ['alertmanager', 'FATAL', 5],
    ['alertmanager', 'page', 5],
    ['alertmanager', 'error', 4],
    ['alertmanager', 'high', 4],
    ['alertmanager', 'major', 4],
    ['alertmanager', 'minor', 3],
    ['alertmanager', 'medium', 3],
    ['alertmanager', 'warning', 2],
    ['alertmanager', 'warn', 2],
    ['alertmanager', 'low', 2],
    ['alertmanager', 'info', 1],
    ['alertmanager', 'none', 1],
    ['alertmanager', 'other', 1],
    ['grafana', 'Critical', 5],
    ['grafana', 'minor', 3],
  ])('%s: label severity %s is %i', async (preset, given, expected) => {
    expect(await severity(preset, { 'alerts.0.labels.severity': given })).toBe(expected);
  });

  it.each([
    ['critical', 5],
    ['error', 4],
    ['warning', 2],
    ['info', 1],
    ['CRITICAL', 1],
  ])('pagerduty-events-v2: payload.severity %s is %i', async (given, expected) => {
    expect(await severity('pagerduty-events-v2', { 'payload.severity': given })).toBe(expected);
  });

  it.each<[string, unknown, unknown, number]>([
    ['Recovered', 'P1', 'error', 0],
    ['Warn', 'P1', 'error', 2],
    ['Triggered', 'P1', 'info', 5],
    ['Triggered', 'p2', 'info', 4],
    ['Triggered', 'P3', 'info', 3],
    ['Triggered', 'P4', 'info', 2],
    ['Triggered', 'P5', 'error', 1],
    ['Triggered', 'P9', 'error', 5],
    ['Triggered', DELETE, 'warning', 2],
    ['Triggered', DELETE, 'info', 1],
    ['Triggered', DELETE, 'success', 0],
    ['Triggered', DELETE, 'other', 3],
  ])('datadog: %s, priority %s, alert_type %s is %i', async (transition, priority, type, expected) => {
    const edits = { alert_transition: transition, priority, alert_type: type };
    expect(await severity('datadog', edits)).toBe(expected);
  });

  it.each<[unknown, unknown, number]>([
    ['1', '0', 1],
    ['1', '1', 1],
    ['1', '2', 2],
    ['1', '3', 3],
    ['1', '4', 4],
    [1, 5, 5],
    ['1', '9', 1],
    ['0', '5', 0],
  ])('zabbix: event_value %s, nseverity %s is %i', async (value, nseverity, expected) => {
    expect(await severity('zabbix', { event_value: value, event_nseverity: nseverity })).toBe(expected);
  });

  it.each([
    ['PROBLEM', 'WARNING', 2],
    ['PROBLEM', 'critical', 5],
    ['PROBLEM', 'UNKNOWN', 1],
    ['PROBLEM', 'DOWN', 5],
    ['PROBLEM', 'UNREACHABLE', 3],
    ['PROBLEM', 'OK', 0],
    ['PROBLEM', 'Up', 0],
    ['recovery', 'CRITICAL', 0],
    ['PROBLEM', 'PENDING', 1],
  ])('nagios: %s with state %s is %i', async (type, state, expected) => {
    expect(await severity('nagios', { notification_type: type, state })).toBe(expected);
  });

  it.each([
    ['Fired', 'Sev0', 5],
    ['Fired', 'Sev1', 4],
    ['Fired', 'Sev2', 2],
    ['Fired', 'Sev3', 1],
    ['Fired', 'Sev4', 1],
    ['Fired', 'sev0', 1],
    ['Resolved', 'Sev0', 0],
  ])('azure-monitor: %s %s is %i', async (condition, sev, expected) => {
    const edits = { 'data.essentials.monitorCondition': condition, 'data.essentials.severity': sev };
    expect(await severity('azure-monitor', edits)).toBe(expected);
  });

  it.each<[string, unknown, unknown, number]>([
    ['open', 'critical', DELETE, 5],
    ['open', 'Error', DELETE, 4],
    ['open', 'WARNING', DELETE, 2],
    ['open', 'none', 'error', 4],
    ['open', DELETE, 'Warning', 2],
    ['open', DELETE, DELETE, 1],
    ['Closed', 'CRITICAL', DELETE, 0],
  ])('google-cloud-monitoring: %s, severity %s, policy label %s is %i', async (state, sev, label, expected) => {
    const edits = { 'incident.state': state, 'incident.severity': sev, 'incident.policy_user_labels.severity': label };
    expect(await severity('google-cloud-monitoring', edits)).toBe(expected);
  });

  it.each([
    [0, 5, 'DOWN'],
    [1, 0, 'UP'],
    [2, 2, 'PENDING'],
    [3, 1, 'MAINTENANCE'],
    [7, 1, undefined],
  ])('uptime-kuma: heartbeat.status %i is severity %i, type %s', async (status, expected, type) => {
    const e = await mapped('uptime-kuma', variant('uptime-kuma', { 'heartbeat.status': status }));
    expect([e.severity, e.type]).toEqual([expected, type]);
  });

  /** Each fixture's first case, every field the preset sets (custom_info left to the equivalence tests). */
  it.each<[PresetName, Record<string, unknown>]>([
    [
      'alertmanager',
      {
        signature: 'alertmanager:61a934e31c3bc048',
        source: 'web-1',
        severity: 5,
        class: 'HighCPU',
        type: 'node',
        manager: 'Alertmanager',
        external_id: '61a934e31c3bc048',
        description: 'CPU high on web-1',
        agent_time: '2026-11-22T20:43:01.316853583Z',
      },
    ],
    [
      'grafana',
      {
        signature: 'grafana:5348272cf8d78ae3',
        source: 'db-1:9100',
        severity: 4,
        class: 'DiskFull',
        manager: 'Grafana',
        external_id: '5348272cf8d78ae3',
        description: 'Disk 95% full on db-1',
        agent_time: '2026-11-22T18:00:00Z',
      },
    ],
    [
      'pagerduty-events-v2',
      {
        signature: 'pagerduty:samplekeyhere',
        source: 'prod-datapipe03.example.com',
        severity: 5,
        type: 'trigger',
        class: 'disk',
        manager: 'Sample Monitoring Service',
        description: 'DISK at 99% on machine prod-datapipe03.example.com',
        agent_location: 'https://monitoring.service.com',
        external_id: 'samplekeyhere',
        agent_time: '2015-07-17T08:42:58.315+0000',
      },
    ],
    [
      'datadog',
      {
        signature: 'datadog:12345678:host:web-1',
        source: 'web-1',
        severity: 4,
        type: 'Triggered',
        class: 'error',
        manager: 'Datadog',
        description: '[P2] [Triggered] CPU high on web-1',
        agent_location: 'https://app.datadoghq.com/event/event?id=7364732148239487234',
        external_id: '7364732148239487234',
        agent_time: '1763844181000',
      },
    ],
    [
      'zabbix',
      {
        signature: 'zabbix:4711',
        source: 'web-1',
        severity: 4,
        class: 'High CPU utilization',
        type: 'problem',
        manager: 'Zabbix',
        description: 'High CPU utilization (over 90% for 5m)',
        external_id: '4711',
        agent_location: 'https://zabbix.example.com',
      },
    ],
    [
      'nagios',
      {
        signature: 'nagios:web-1:HTTP',
        source: 'web-1',
        severity: 5,
        class: 'service',
        type: 'PROBLEM',
        manager: 'Nagios',
        description: 'CRITICAL - Socket timeout after 10 seconds',
        agent_time: '1763844181',
      },
    ],
    [
      'azure-monitor',
      {
        signature:
          'azure:/subscriptions/11111111-1111-1111-1111-111111111111/providers/Microsoft.AlertsManagement/alerts/12345678-1234-1234-1234-1234567890ab',
        source: 'test-storageAccount',
        severity: 1,
        class: 'Metric',
        type: 'Fired',
        manager: 'Azure Monitor',
        description: 'test-metricAlertRule: Alert rule description',
        external_id:
          '11111111-1111-1111-1111-111111111111_test-RG_microsoft.insights_metricAlerts_test-metricAlertRule_1234567890',
        agent_time: '2021-11-15T09:35:24.3468506Z',
      },
    ],
    [
      'google-cloud-monitoring',
      {
        signature: 'gcm:0.ligwyr056k2l',
        source: 'api.acme.com',
        severity: 5,
        class: 'api uptime',
        type: 'Uptime Health Check on api',
        manager: 'Google Cloud Monitoring',
        description: 'An uptime check on acme-prod Uptime Check URL labels {host=api.acme.com} is failing.',
        agent_location:
          'https://console.cloud.google.com/monitoring/alerting/incidents/0.ligwyr056k2l?project=acme-prod',
        external_id: '0.ligwyr056k2l',
        agent_time: 1579559444,
      },
    ],
    [
      'uptime-kuma',
      {
        signature: 'uptime-kuma:3',
        source: 'https://shop.example.com',
        severity: 5,
        class: 'http',
        type: 'DOWN',
        manager: 'Uptime Kuma',
        description: 'Shop: timeout of 48000ms exceeded',
        agent_time: '2026-11-22T20:43:01.123Z',
      },
    ],
  ])('%s: the fixture maps to exactly these fields', async (preset, expected) => {
    const { custom_info: _customInfo, ...event } = await mapped(preset, fixture(preset).cases[0]?.input);
    expect(event).toEqual(expected);
  });
});
