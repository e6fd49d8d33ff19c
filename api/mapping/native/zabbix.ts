/** Zabbix webhook media type with intake's script (README): one event. The reference is presets.ts. */
import { assert, coalesce, concat, defined, elvis, lookup, path, string } from './helpers.js';
import type { NativePreset } from './helpers.js';

const SEVERITY: Readonly<Record<string, number>> = { '0': 1, '1': 1, '2': 2, '3': 3, '4': 4, '5': 5 };

export const zabbix: NativePreset = (body) => {
  const eventId = path(body, 'event_id');
  const host = path(body, 'host');
  // The script sends strings, but `$string` lets a number through: event_value 1 is "1".
  const value = string(path(body, 'event_value'));
  assert(eventId !== undefined && eventId !== '', 'event_id is required ({EVENT.ID})');
  assert(host !== undefined && host !== '', 'host is required ({HOST.HOST})');
  assert(value === '0' || value === '1', 'event_value must be 0 (recovery) or 1 (problem) ({EVENT.VALUE})');
  const recovery = value === '0';
  const eventName = path(body, 'event_name');
  return [
    defined({
      signature: concat('zabbix:', eventId),
      source: host,
      severity: recovery ? 0 : coalesce(lookup(SEVERITY, string(path(body, 'event_nseverity'))), 1),
      class: elvis(path(body, 'trigger_name'), eventName),
      type: string(path(body, 'event_update_status')) === '1' ? 'update' : recovery ? 'recovery' : 'problem',
      manager: 'Zabbix',
      description: eventName,
      external_id: eventId,
      agent_location: path(body, 'zabbix_url'),
      custom_info: defined({
        trigger_id: path(body, 'trigger_id'),
        host_ip: path(body, 'host_ip'),
        event_severity: path(body, 'event_severity'),
        event_tags: path(body, 'event_tags'),
        event_opdata: path(body, 'event_opdata'),
      }),
    }),
  ];
};
