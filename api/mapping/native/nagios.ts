/** Nagios Core or Icinga 2 notification command with intake's script (README). The reference is presets.ts. */
import { assert, coalesce, concat, defined, elvis, lookup, path, truthy, uppercase } from './helpers.js';
import type { NativePreset } from './helpers.js';

const SEVERITY: Readonly<Record<string, number>> = { WARNING: 2, CRITICAL: 5, UNKNOWN: 1, DOWN: 5, UNREACHABLE: 3 };

export const nagios: NativePreset = (body) => {
  const host = path(body, 'host');
  const state = path(body, 'state');
  assert(host !== undefined && host !== '', 'host is required ($HOSTNAME$ / $host.name$)');
  assert(
    state !== undefined && state !== '',
    'state is required ($SERVICESTATE$ or $HOSTSTATE$ / $service.state$ or $host.state$)',
  );
  // Both before the event is built, in this order: a state that is not a string fails first.
  const upperState = uppercase(state);
  const kind = uppercase(path(body, 'notification_type'));
  const service = path(body, 'service');
  const hasService = truthy(service);
  const ok = kind === 'RECOVERY' || upperState === 'OK' || upperState === 'UP';
  return [
    defined({
      signature: concat('nagios:', host, hasService ? concat(':', service) : ''),
      source: host,
      severity: ok ? 0 : coalesce(lookup(SEVERITY, upperState), 1),
      class: hasService ? 'service' : 'host',
      type: path(body, 'notification_type'),
      manager: elvis(path(body, 'manager'), 'Nagios'),
      description: elvis(path(body, 'output'), concat(hasService ? service : host, ' is ', state)),
      agent_time: path(body, 'timestamp'),
      custom_info: defined({
        service,
        state,
        state_type: path(body, 'state_type'),
        address: path(body, 'address'),
        author: path(body, 'author'),
        comment: path(body, 'comment'),
      }),
    }),
  ];
};
