/** Azure Monitor action group webhook, common alert schema: one event. The reference is presets.ts. */
import { assert, coalesce, concat, defined, elvis, lookup, path, pathFirst, truthy } from './helpers.js';
import type { NativePreset } from './helpers.js';

const SEVERITY: Readonly<Record<string, number>> = { Sev0: 5, Sev1: 4, Sev2: 2, Sev3: 1, Sev4: 1 };

export const azureMonitor: NativePreset = (body) => {
  assert(
    path(body, 'schemaId') === 'azureMonitorCommonAlertSchema',
    'schemaId must be azureMonitorCommonAlertSchema (enable the common alert schema on the action)',
  );
  // `$e := data.essentials`, then `$e.x`: a path from the variable's value.
  const e = path(body, 'data', 'essentials');
  const alertId = path(e, 'alertId');
  const condition = path(e, 'monitorCondition');
  assert(alertId !== undefined && condition !== undefined, 'data.essentials.alertId and monitorCondition are required');
  const resolved = condition === 'Resolved';
  const alertRule = path(e, 'alertRule');
  const description = path(e, 'description');
  const severity = path(e, 'severity');
  return [
    defined({
      signature: concat('azure:', alertId),
      source: elvis(pathFirst(e, 'configurationItems'), pathFirst(e, 'alertTargetIDs'), alertRule),
      severity: resolved ? 0 : coalesce(lookup(SEVERITY, severity), 1),
      class: path(e, 'signalType'),
      type: condition,
      manager: 'Azure Monitor',
      description: truthy(description) ? concat(alertRule, ': ', description) : alertRule,
      external_id: path(e, 'originAlertId'),
      agent_time: resolved ? path(e, 'resolvedDateTime') : path(e, 'firedDateTime'),
      custom_info: defined({
        alertRule,
        severity,
        monitoringService: path(e, 'monitoringService'),
        alertTargetIDs: path(e, 'alertTargetIDs'),
        alertContext: path(body, 'data', 'alertContext'),
        customProperties: path(body, 'data', 'customProperties'),
      }),
    }),
  ];
};
