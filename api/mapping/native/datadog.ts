/** Datadog webhook with intake's template (README): one event. The reference is presets.ts. */
import { assert, coalesce, concat, defined, elvis, lookup, lowercase, path, uppercase } from './helpers.js';
import type { NativePreset } from './helpers.js';

const PRIORITY: Readonly<Record<string, number>> = { P1: 5, P2: 4, P3: 3, P4: 2, P5: 1 };
const TYPE: Readonly<Record<string, number>> = { error: 5, warning: 2, info: 1, success: 0 };

/** `$lookup($priority, $uppercase(priority)) ?? $lookup($type, alert_type) ?? 3`, evaluated in that order. */
function severityOf(transition: string | undefined, priority: unknown, alertType: unknown): number {
  if (transition === 'recovered') return 0;
  if (transition === 'warn') return 2;
  const byPriority = lookup(PRIORITY, uppercase(priority));
  if (byPriority !== undefined) return byPriority;
  return coalesce(lookup(TYPE, alertType), 3);
}

export const datadog: NativePreset = (body) => {
  const alertId = path(body, 'alert_id');
  const transition = path(body, 'alert_transition');
  assert(alertId !== undefined && alertId !== '', 'alert_id is required ($ALERT_ID in the Datadog template)');
  assert(transition !== undefined, 'alert_transition is required ($ALERT_TRANSITION in the Datadog template)');
  const lowered = lowercase(transition);
  const scope = path(body, 'scope');
  const priority = path(body, 'priority');
  const alertType = path(body, 'alert_type');
  return [
    defined({
      signature: concat('datadog:', alertId, ':', elvis(scope, '*')),
      source: elvis(path(body, 'hostname'), scope, 'datadog'),
      severity: severityOf(lowered, priority, alertType),
      type: transition,
      class: alertType,
      manager: 'Datadog',
      description: path(body, 'title'),
      agent_location: path(body, 'link'),
      external_id: path(body, 'id'),
      agent_time: path(body, 'date'),
      custom_info: defined({
        body: path(body, 'body'),
        tags: path(body, 'tags'),
        priority,
        cycle_key: path(body, 'alert_cycle_key'),
        org: path(body, 'org'),
      }),
    }),
  ];
};
