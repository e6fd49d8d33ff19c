/**
 * Payloads for "Send a test event" and the mapping playground: the plain event example, and for each
 * preset the notification its tool really sends (the first case of the preset's captured fixture in
 * test/unit/api/mapping/fixtures, bundled at build time, so the console and the tests share one copy).
 */
import alertmanager from '../../test/unit/api/mapping/fixtures/alertmanager.json';
import azure_monitor from '../../test/unit/api/mapping/fixtures/azure-monitor.json';
import datadog from '../../test/unit/api/mapping/fixtures/datadog.json';
import google_cloud_monitoring from '../../test/unit/api/mapping/fixtures/google-cloud-monitoring.json';
import grafana from '../../test/unit/api/mapping/fixtures/grafana.json';
import nagios from '../../test/unit/api/mapping/fixtures/nagios.json';
import pagerduty_events_vtwo from '../../test/unit/api/mapping/fixtures/pagerduty-events-v2.json';
import uptime_kuma from '../../test/unit/api/mapping/fixtures/uptime-kuma.json';
import zabbix from '../../test/unit/api/mapping/fixtures/zabbix.json';
import type { PresetName } from '../../api/mapping/presets.js';

interface Fixture {
  cases: Array<{ input: unknown }>;
}

export const PLAIN_EVENT = {
  source: 'web-01.example.com',
  severity: 'critical',
  class: 'cpu',
  type: 'high',
  description: 'test event from the intake console',
};

/** One per preset: typed by the presets' names, so a new preset needs its sample here. */
const FIXTURES: Readonly<Record<string, Fixture>> = {
  alertmanager: alertmanager,
  'azure-monitor': azure_monitor,
  datadog: datadog,
  'google-cloud-monitoring': google_cloud_monitoring,
  grafana: grafana,
  nagios: nagios,
  'pagerduty-events-v2': pagerduty_events_vtwo,
  'uptime-kuma': uptime_kuma,
  zabbix: zabbix,
} satisfies Record<PresetName, Fixture>;

/** The sample for an integration: its preset's notification, else the plain event. */
export function sampleFor(preset: string | undefined): unknown {
  const fixture = preset ? FIXTURES[preset] : undefined;
  return fixture?.cases[0]?.input ?? PLAIN_EVENT;
}
