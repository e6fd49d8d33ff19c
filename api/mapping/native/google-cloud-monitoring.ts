/** Google Cloud Monitoring webhook (schema 1.2): one incident. The reference is presets.ts. */
import { assert, coalesce, concat, defined, elvis, lookup, lowercase, path, truthy, uppercase } from './helpers.js';
import type { NativePreset } from './helpers.js';

const SEVERITY: Readonly<Record<string, number>> = { CRITICAL: 5, ERROR: 4, WARNING: 2 };

export const googleCloudMonitoring: NativePreset = (body) => {
  // `$i := incident`, then `$i.x`: a path from the variable's value.
  const i = path(body, 'incident');
  const incidentId = path(i, 'incident_id');
  const state = path(i, 'state');
  assert(incidentId !== undefined && state !== undefined, 'incident.incident_id and incident.state are required');
  const closed = lowercase(state) === 'closed';
  const endedAt = path(i, 'ended_at');
  // Looked at only when open, and the policy's label only when the incident's severity is not
  // in the table: either must then be a string (or nothing), else $uppercase fails.
  const severity = (): number =>
    lookup(SEVERITY, uppercase(path(i, 'severity'))) ??
    coalesce(lookup(SEVERITY, uppercase(path(i, 'policy_user_labels', 'severity'))), 1);
  return [
    defined({
      signature: concat('gcm:', incidentId),
      source: elvis(
        path(i, 'resource_display_name'),
        path(i, 'resource', 'labels', 'instance_id'),
        path(i, 'resource_name'),
        path(i, 'scoping_project_id'),
        'google-cloud-monitoring',
      ),
      severity: closed ? 0 : severity(),
      class: path(i, 'policy_name'),
      type: path(i, 'condition_name'),
      manager: 'Google Cloud Monitoring',
      description: path(i, 'summary'),
      agent_location: path(i, 'url'),
      external_id: incidentId,
      agent_time: closed && truthy(endedAt) ? endedAt : path(i, 'started_at'),
      custom_info: defined({
        state,
        resource: path(i, 'resource'),
        metric: path(i, 'metric'),
        policy_user_labels: path(i, 'policy_user_labels'),
        observed_value: path(i, 'observed_value'),
        threshold_value: path(i, 'threshold_value'),
      }),
    }),
  ];
};
