/** Uptime Kuma webhook notification (JSON body): a heartbeat, or the test message. The reference is presets.ts. */
import { assert, coalesce, concat, defined, elvis, lookup, path, replace, string, truthy } from './helpers.js';
import type { NativePreset } from './helpers.js';

const SEVERITY: Readonly<Record<string, number>> = { '0': 5, '1': 0, '2': 2, '3': 1 };
const STATUS: Readonly<Record<string, string>> = { '0': 'DOWN', '1': 'UP', '2': 'PENDING', '3': 'MAINTENANCE' };

export const uptimeKuma: NativePreset = (body) => {
  const msg = path(body, 'msg');
  const heartbeat = path(body, 'heartbeat');
  const monitor = path(body, 'monitor');
  assert(
    msg !== undefined || heartbeat !== undefined,
    'msg or heartbeat is required (send the Uptime Kuma webhook as application/json)',
  );
  // The test notification has heartbeat and monitor null.
  if (!(truthy(heartbeat) && truthy(monitor)))
    return [
      defined({
        signature: 'uptime-kuma:test',
        source: 'uptime-kuma',
        severity: 1,
        type: 'test',
        manager: 'Uptime Kuma',
        description: msg,
      }),
    ];
  // heartbeat.status is a number (0 DOWN, 1 UP, ...); `$string` makes it the tables' key.
  const status = string(path(heartbeat, 'status'));
  const name = path(monitor, 'name');
  const url = path(monitor, 'url');
  const time = path(heartbeat, 'time');
  return [
    defined({
      signature: concat('uptime-kuma:', string(path(monitor, 'id'))),
      source: elvis(path(monitor, 'hostname'), url, name),
      severity: coalesce(lookup(SEVERITY, status), 1),
      class: path(monitor, 'type'),
      type: lookup(STATUS, status),
      manager: 'Uptime Kuma',
      description: concat(name, ': ', elvis(path(heartbeat, 'msg'), msg)),
      // Uptime Kuma's time is UTC without a zone ("2026-11-22 20:43:01.123"): made ISO 8601.
      agent_time: truthy(time) ? concat(replace(time, ' ', 'T'), 'Z') : undefined,
      custom_info: defined({
        monitor: name,
        url,
        ping: path(heartbeat, 'ping'),
        important: path(heartbeat, 'important'),
      }),
    }),
  ];
};
