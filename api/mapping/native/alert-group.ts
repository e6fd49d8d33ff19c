/**
 * Alertmanager (webhook_config, version 4) and Grafana Alerting: one notification is a group of
 * alerts, one event per alert. The reference is amAlerts() in presets.ts.
 */
import { assert, concat, defined, elvis, lookup, lowercase, path, REFERENCE, string, truthy } from './helpers.js';
import type { Json, NativePreset } from './helpers.js';

const SEVERITY: Readonly<Record<string, number>> = {
  critical: 5,
  fatal: 5,
  page: 5,
  error: 4,
  high: 4,
  major: 4,
  minor: 3,
  medium: 3,
  warning: 2,
  warn: 2,
  low: 2,
  info: 1,
  none: 1,
};

/** `$join($sort($keys(labels)).($ & "=" & $lookup(labels, $)), ",")` for labels that are an object. */
function labelKey(labels: unknown): string {
  if (labels === null || typeof labels !== 'object') return '';
  const l = labels as Json;
  return Object.keys(l)
    .sort()
    .map((k) => `${k}=${string(l[k])}`)
    .join(',');
}

/**
 * One alert's event. Its members (and custom_info's) are written in sorted order: the event id
 * hashes the event in canonical JSON (keys sorted), which then is one native JSON.stringify of
 * this object as it is (ingester/core/event-id.ts) instead of a sorted copy. Key order is no part
 * of an event's meaning (the stored event is built anew); the labels and annotations are the
 * sender's own objects (Alertmanager writes them sorted).
 */
function alertEvent(alert: unknown, manager: string, receiver: unknown, groupKey: unknown, grafana: boolean): Json {
  const labels = path(alert, 'labels');
  const annotations = path(alert, 'annotations');
  const status = path(alert, 'status');
  const fingerprint = path(alert, 'fingerprint');
  const resolved = status === 'resolved';
  const generatorURL = path(alert, 'generatorURL');
  const customInfo: Json = grafana
    ? {
        annotations,
        dashboardURL: path(alert, 'dashboardURL'),
        generatorURL,
        groupKey,
        labels,
        panelURL: path(alert, 'panelURL'),
        receiver,
        silenceURL: path(alert, 'silenceURL'),
        status,
        valueString: path(alert, 'valueString'),
      }
    : { annotations, generatorURL, groupKey, labels, receiver, status };
  return defined({
    agent_time: resolved ? path(alert, 'endsAt') : path(alert, 'startsAt'),
    class: path(labels, 'alertname'),
    custom_info: defined(customInfo),
    description: elvis(
      path(annotations, 'summary'),
      path(annotations, 'description'),
      path(annotations, 'message'),
      path(labels, 'alertname'),
    ),
    external_id: fingerprint,
    manager,
    severity: resolved ? 0 : (lookup(SEVERITY, lowercase(path(labels, 'severity'))) ?? 1),
    signature: concat(`${manager.toLowerCase()}:`, truthy(fingerprint) ? fingerprint : labelKey(labels)),
    source: elvis(path(labels, 'instance'), path(labels, 'host'), path(labels, 'job'), path(labels, 'alertname')),
    type: path(labels, 'job'),
  });
}

export const alertGroup =
  (manager: string, grafana: boolean): NativePreset =>
  (body) => {
    const alerts = path(body, 'alerts');
    assert(Array.isArray(alerts) && alerts.length > 0, 'alerts must be a non-empty array');
    const list = alerts as unknown[];
    // `alerts.(...)` evaluates the block once per element of an element that is an array, but an
    // inner array of several alerts becomes one event of merged fields; and `$keys` of labels that
    // are an array unions its objects' keys. Neither is an alert group's shape: the expression maps those.
    for (const alert of list) {
      if (Array.isArray(alert)) return REFERENCE;
      if (Array.isArray(path(alert, 'labels')) && !truthy(path(alert, 'fingerprint'))) return REFERENCE;
    }
    const receiver = path(body, 'receiver');
    const groupKey = path(body, 'groupKey');
    return list.map((alert) => alertEvent(alert, manager, receiver, groupKey, grafana));
  };
