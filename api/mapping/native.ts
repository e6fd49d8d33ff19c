/**
 * The presets as plain functions (native/<preset>.ts), by preset name. Each produces exactly what
 * the preset's JSONata expression in presets.ts produces, failures included (the same code and
 * message), at a small fraction of the cost: JSONata spends about 85 µs per Alertmanager alert,
 * more than the whole budget of a notification of 100 alerts at 20,000 events/s, and tens of µs
 * on one Datadog or Zabbix event. The expressions stay the reference and the documentation; the
 * unit tests (test/unit/api/mapping/native.test.ts) compare the two on the fixtures and on many
 * generated payloads.
 */
import { alertGroup } from './native/alert-group.js';
import { azureMonitor } from './native/azure-monitor.js';
import { datadog } from './native/datadog.js';
import { googleCloudMonitoring } from './native/google-cloud-monitoring.js';
import { REFERENCE, type NativePreset } from './native/helpers.js';
import { nagios } from './native/nagios.js';
import { pagerdutyEventsV2 } from './native/pagerduty-events-v2.js';
import { uptimeKuma } from './native/uptime-kuma.js';
import { zabbix } from './native/zabbix.js';
import type { PresetName } from './presets.js';

export { REFERENCE, type NativePreset } from './native/helpers.js';

/**
 * A body that is an array is not any tool's shape, and JSONata treats it as a sequence: every path
 * maps over its elements and the event's fields merge theirs. The expression maps it (REFERENCE).
 */
const objectBody =
  (preset: NativePreset): NativePreset =>
  (body) =>
    Array.isArray(body) ? REFERENCE : preset(body);

/**
 * Preset name -> native implementation; a preset not listed runs its JSONata expression. Every
 * preset is listed (typed by presets.ts's names); a plain object read by any name, so a benchmark
 * can take entries out and measure the expressions in the same build (bench/ingest/jsonata-presets.ts).
 */
export const NATIVE_PRESETS: Readonly<Record<string, NativePreset>> = {
  alertmanager: objectBody(alertGroup('Alertmanager', false)),
  grafana: objectBody(alertGroup('Grafana', true)),
  'pagerduty-events-v2': objectBody(pagerdutyEventsV2),
  datadog: objectBody(datadog),
  zabbix: objectBody(zabbix),
  nagios: objectBody(nagios),
  'azure-monitor': objectBody(azureMonitor),
  'google-cloud-monitoring': objectBody(googleCloudMonitoring),
  'uptime-kuma': objectBody(uptimeKuma),
} satisfies Record<PresetName, NativePreset>;
