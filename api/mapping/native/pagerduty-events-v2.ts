/** PagerDuty Events API v2 (the /v2/enqueue body): one event. The reference is presets.ts. */
import { assert, coalesce, concat, defined, elvis, lookup, path } from './helpers.js';
import type { NativePreset } from './helpers.js';

const SEVERITY: Readonly<Record<string, number>> = { critical: 5, error: 4, warning: 2, info: 1 };
const ACTIONS: readonly unknown[] = ['trigger', 'acknowledge', 'resolve'];

export const pagerdutyEventsV2: NativePreset = (body) => {
  const action = path(body, 'event_action');
  const dedupKey = path(body, 'dedup_key');
  const source = path(body, 'payload', 'source');
  const summary = path(body, 'payload', 'summary');
  const severity = path(body, 'payload', 'severity');
  const client = path(body, 'client');
  // `in` compares with ===: an array holding "trigger" is not "trigger".
  assert(ACTIONS.includes(action), 'event_action must be trigger, acknowledge or resolve');
  assert(
    dedupKey !== undefined || source !== undefined,
    'dedup_key (or payload.source and payload.summary) is required',
  );
  assert(
    action === 'trigger' ? summary !== undefined && severity !== undefined : true,
    'a trigger needs payload.summary and payload.severity',
  );
  return [
    defined({
      signature: concat('pagerduty:', elvis(dedupKey, concat(source, ':', summary))),
      source: elvis(source, client, 'pagerduty-events-v2'),
      severity: action === 'resolve' ? 0 : coalesce(lookup(SEVERITY, severity), 1),
      type: action,
      class: path(body, 'payload', 'class'),
      manager: elvis(client, 'PagerDuty Events API v2'),
      description: summary,
      agent_location: path(body, 'client_url'),
      external_id: dedupKey,
      agent_time: path(body, 'payload', 'timestamp'),
      custom_info: defined({
        component: path(body, 'payload', 'component'),
        group: path(body, 'payload', 'group'),
        custom_details: path(body, 'payload', 'custom_details'),
        links: path(body, 'links'),
      }),
    }),
  ];
};
