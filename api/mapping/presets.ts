/**
 * Presets: JSONata expressions shipped with intake for tools that post their own payloads. Each
 * maps the tool's resolved/OK state to severity 0, its severity scale to 0..5, and gives a
 * `signature` that is the same for firing and resolved, so the clear matches the alert. Required
 * fields are asserted first, so a payload of the wrong shape fails with a message naming the field.
 * The fixtures in test/unit/api/mapping/fixtures/ show each one on the tool's own payload.
 */

export interface Preset {
  /** One line: what the tool sends. */
  description: string;
  expression: string;
}

/** Alertmanager (webhook_config, version 4) and Grafana Alerting share the alert shape. */
const amAlerts = (manager: string, extra: string): string => `(
  $assert($type(alerts) = "array" and $count(alerts) > 0, "alerts must be a non-empty array");
  $sev := {"critical": 5, "fatal": 5, "page": 5, "error": 4, "high": 4, "major": 4, "minor": 3, "medium": 3, "warning": 2, "warn": 2, "low": 2, "info": 1, "none": 1};
  $labelKey := function($l) { $join($sort($keys($l)).($ & "=" & $lookup($l, $)), ",") };
  $receiver := receiver;
  $groupKey := groupKey;
  [alerts.(
    $resolved := status = "resolved";
    {
      "signature": "${manager.toLowerCase()}:" & (fingerprint ? fingerprint : $labelKey(labels)),
      "source": labels.instance ?: labels.host ?: labels.job ?: labels.alertname,
      "severity": $resolved ? 0 : ($lookup($sev, $lowercase(labels.severity)) ?? 1),
      "class": labels.alertname,
      "type": labels.job,
      "manager": "${manager}",
      "external_id": fingerprint,
      "description": annotations.summary ?: annotations.description ?: annotations.message ?: labels.alertname,
      "agent_time": $resolved ? endsAt : startsAt,
      "custom_info": {
        "status": status,
        "labels": labels,
        "annotations": annotations,
        "generatorURL": generatorURL,
        "receiver": $receiver,
        "groupKey": $groupKey${extra}
      }
    }
  )]
)`;

export const PRESETS = {
  alertmanager: {
    description:
      'Prometheus Alertmanager webhook_config: one request per alert group, firing and resolved alerts mixed',
    expression: amAlerts('Alertmanager', ''),
  },
  grafana: {
    description:
      'Grafana Alerting webhook contact point (version 1): Alertmanager-like groups with dashboard and panel links',
    expression: amAlerts(
      'Grafana',
      `,
        "dashboardURL": dashboardURL,
        "panelURL": panelURL,
        "silenceURL": silenceURL,
        "valueString": valueString`,
    ),
  },
  'pagerduty-events-v2': {
    description: 'PagerDuty Events API v2 (POST /v2/enqueue body): trigger, acknowledge or resolve with a dedup_key',
    expression: `(
  $assert(event_action in ["trigger", "acknowledge", "resolve"], "event_action must be trigger, acknowledge or resolve");
  $assert($exists(dedup_key) or $exists(payload.source), "dedup_key (or payload.source and payload.summary) is required");
  $assert(event_action = "trigger" ? $exists(payload.summary) and $exists(payload.severity) : true, "a trigger needs payload.summary and payload.severity");
  $sev := {"critical": 5, "error": 4, "warning": 2, "info": 1};
  {
    "signature": "pagerduty:" & (dedup_key ?: payload.source & ":" & payload.summary),
    "source": payload.source ?: client ?: "pagerduty-events-v2",
    "severity": event_action = "resolve" ? 0 : ($lookup($sev, payload.severity) ?? 1),
    "type": event_action,
    "class": payload.class,
    "manager": client ?: "PagerDuty Events API v2",
    "description": payload.summary,
    "agent_location": client_url,
    "external_id": dedup_key,
    "agent_time": payload.timestamp,
    "custom_info": {"component": payload.component, "group": payload.group, "custom_details": payload.custom_details, "links": links}
  }
)`,
  },
  datadog: {
    description: "Datadog webhook with intake's template (README): monitor id, transition, priority and scope",
    expression: `(
  $assert($exists(alert_id) and alert_id != "", "alert_id is required ($ALERT_ID in the Datadog template)");
  $assert($exists(alert_transition), "alert_transition is required ($ALERT_TRANSITION in the Datadog template)");
  $priority := {"P1": 5, "P2": 4, "P3": 3, "P4": 2, "P5": 1};
  $type := {"error": 5, "warning": 2, "info": 1, "success": 0};
  $transition := $lowercase(alert_transition);
  {
    "signature": "datadog:" & alert_id & ":" & (scope ?: "*"),
    "source": hostname ?: scope ?: "datadog",
    "severity": $transition = "recovered" ? 0 : $transition = "warn" ? 2 : ($lookup($priority, $uppercase(priority)) ?? $lookup($type, alert_type) ?? 3),
    "type": alert_transition,
    "class": alert_type,
    "manager": "Datadog",
    "description": title,
    "agent_location": link,
    "external_id": id,
    "agent_time": date,
    "custom_info": {"body": body, "tags": tags, "priority": priority, "cycle_key": alert_cycle_key, "org": org}
  }
)`,
  },
  zabbix: {
    description: "Zabbix webhook media type with intake's script (README): one problem or recovery event",
    expression: `(
  $assert($exists(event_id) and event_id != "", "event_id is required ({EVENT.ID})");
  $assert($exists(host) and host != "", "host is required ({HOST.HOST})");
  $assert($string(event_value) in ["0", "1"], "event_value must be 0 (recovery) or 1 (problem) ({EVENT.VALUE})");
  $sev := {"0": 1, "1": 1, "2": 2, "3": 3, "4": 4, "5": 5};
  {
    "signature": "zabbix:" & event_id,
    "source": host,
    "severity": $string(event_value) = "0" ? 0 : ($lookup($sev, $string(event_nseverity)) ?? 1),
    "class": trigger_name ?: event_name,
    "type": $string(event_update_status) = "1" ? "update" : $string(event_value) = "0" ? "recovery" : "problem",
    "manager": "Zabbix",
    "description": event_name,
    "external_id": event_id,
    "agent_location": zabbix_url,
    "custom_info": {"trigger_id": trigger_id, "host_ip": host_ip, "event_severity": event_severity, "event_tags": event_tags, "event_opdata": event_opdata}
  }
)`,
  },
  nagios: {
    description:
      "Nagios Core or Icinga 2 notification command with intake's script (README): host or service notifications",
    expression: `(
  $assert($exists(host) and host != "", "host is required ($HOSTNAME$ / $host.name$)");
  $assert($exists(state) and state != "", "state is required ($SERVICESTATE$ or $HOSTSTATE$ / $service.state$ or $host.state$)");
  $state := $uppercase(state);
  $kind := $uppercase(notification_type);
  $sev := {"WARNING": 2, "CRITICAL": 5, "UNKNOWN": 1, "DOWN": 5, "UNREACHABLE": 3};
  {
    "signature": "nagios:" & host & (service ? ":" & service : ""),
    "source": host,
    "severity": ($kind = "RECOVERY" or $state in ["OK", "UP"]) ? 0 : ($lookup($sev, $state) ?? 1),
    "class": service ? "service" : "host",
    "type": notification_type,
    "manager": manager ?: "Nagios",
    "description": output ?: (service ? service : host) & " is " & state,
    "agent_time": timestamp,
    "custom_info": {"service": service, "state": state, "state_type": state_type, "address": address, "author": author, "comment": comment}
  }
)`,
  },
  'azure-monitor': {
    description: 'Azure Monitor action group webhook with the common alert schema enabled',
    expression: `(
  $assert(schemaId = "azureMonitorCommonAlertSchema", "schemaId must be azureMonitorCommonAlertSchema (enable the common alert schema on the action)");
  $e := data.essentials;
  $assert($exists($e.alertId) and $exists($e.monitorCondition), "data.essentials.alertId and monitorCondition are required");
  $resolved := $e.monitorCondition = "Resolved";
  $sev := {"Sev0": 5, "Sev1": 4, "Sev2": 2, "Sev3": 1, "Sev4": 1};
  {
    "signature": "azure:" & $e.alertId,
    "source": $e.configurationItems[0] ?: $e.alertTargetIDs[0] ?: $e.alertRule,
    "severity": $resolved ? 0 : ($lookup($sev, $e.severity) ?? 1),
    "class": $e.signalType,
    "type": $e.monitorCondition,
    "manager": "Azure Monitor",
    "description": $e.description ? $e.alertRule & ": " & $e.description : $e.alertRule,
    "external_id": $e.originAlertId,
    "agent_time": $resolved ? $e.resolvedDateTime : $e.firedDateTime,
    "custom_info": {"alertRule": $e.alertRule, "severity": $e.severity, "monitoringService": $e.monitoringService, "alertTargetIDs": $e.alertTargetIDs, "alertContext": data.alertContext, "customProperties": data.customProperties}
  }
)`,
  },
  'google-cloud-monitoring': {
    description: 'Google Cloud Monitoring webhook notification channel (schema 1.2): one incident opened or closed',
    expression: `(
  $i := incident;
  $assert($exists($i.incident_id) and $exists($i.state), "incident.incident_id and incident.state are required");
  $closed := $lowercase($i.state) = "closed";
  $sev := {"CRITICAL": 5, "ERROR": 4, "WARNING": 2};
  {
    "signature": "gcm:" & $i.incident_id,
    "source": $i.resource_display_name ?: $i.resource.labels.instance_id ?: $i.resource_name ?: $i.scoping_project_id ?: "google-cloud-monitoring",
    "severity": $closed ? 0 : ($lookup($sev, $uppercase($i.severity)) ?? $lookup($sev, $uppercase($i.policy_user_labels.severity)) ?? 1),
    "class": $i.policy_name,
    "type": $i.condition_name,
    "manager": "Google Cloud Monitoring",
    "description": $i.summary,
    "agent_location": $i.url,
    "external_id": $i.incident_id,
    "agent_time": ($closed and $i.ended_at) ? $i.ended_at : $i.started_at,
    "custom_info": {"state": $i.state, "resource": $i.resource, "metric": $i.metric, "policy_user_labels": $i.policy_user_labels, "observed_value": $i.observed_value, "threshold_value": $i.threshold_value}
  }
)`,
  },
  'uptime-kuma': {
    description: 'Uptime Kuma webhook notification (JSON body): heartbeat, monitor and message',
    expression: `(
  $assert($exists(msg) or $exists(heartbeat), "msg or heartbeat is required (send the Uptime Kuma webhook as application/json)");
  $status := {"0": 5, "1": 0, "2": 2, "3": 1};
  heartbeat and monitor ? {
    "signature": "uptime-kuma:" & $string(monitor.id),
    "source": monitor.hostname ?: monitor.url ?: monitor.name,
    "severity": $lookup($status, $string(heartbeat.status)) ?? 1,
    "class": monitor.type,
    "type": $lookup({"0": "DOWN", "1": "UP", "2": "PENDING", "3": "MAINTENANCE"}, $string(heartbeat.status)),
    "manager": "Uptime Kuma",
    "description": monitor.name & ": " & (heartbeat.msg ?: msg),
    "agent_time": heartbeat.time ? $replace(heartbeat.time, " ", "T") & "Z",
    "custom_info": {"monitor": monitor.name, "url": monitor.url, "ping": heartbeat.ping, "important": heartbeat.important}
  } : {
    "signature": "uptime-kuma:test",
    "source": "uptime-kuma",
    "severity": 1,
    "type": "test",
    "manager": "Uptime Kuma",
    "description": msg
  }
)`,
  },
} satisfies Record<string, Preset>;

/**
 * The one list of preset names: the native functions (native.ts) and the console's samples are
 * typed by it, so neither can miss or add one; route.schema.json and the WebhookIntegration CRD,
 * static documents, repeat it as an enum that unit tests compare with it.
 */
export type PresetName = keyof typeof PRESETS;
export const PRESET_NAMES = Object.keys(PRESETS) as PresetName[];
