/**
 * `intake status`: a replica's activity report (api/activity.ts) as a table a person reads.
 *
 * Every text from the report is printed inert (common/sender-text.ts), whatever ingester version
 * wrote it: a terminal never gets a control character from a sender. What a sender claimed (its
 * User-Agent) is labelled as such; senders refused before authentication are listed apart, by
 * address and count, since anyone can make those.
 */
import type { Activity, ActivityReport, RecentRefusal, UnauthenticatedSender } from '../api/activity.js';
import { inertText } from '../common/sender-text.js';
import { columns } from './output.js';

type Row = Omit<Activity, 'updatedTime'> & { kind: string; namespace: string; name: string };

/** kubectl's age style: 45s, 12m, 3h, 2d; "never" when absent. */
export function age(time: string | undefined, nowMs: number): string {
  if (!time) return 'never';
  const s = Math.max(0, Math.round((nowMs - Date.parse(time)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 2 * 3600) return `${Math.floor(s / 60)}m`;
  if (s < 2 * 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

const reasons = (r: Record<string, number>): string =>
  Object.entries(r)
    .sort((a, b) => b[1] - a[1])
    .map(([reason, n]) => `${inertText(reason)}=${n}`)
    .join(',') || '-';

/** At most this many lines in each list below the table. */
const LISTED = 10;

export function activityTable(report: ActivityReport, nowMs = Date.now()): string {
  const rows: Row[] = [
    ...report.webhookIntegrations.map((a) => ({ ...a, kind: 'WebhookIntegration' })),
    ...report.apiKeys.map((a) => ({ ...a, kind: 'ApiKey' })),
  ];
  for (const [kind, a] of [
    ['WebhookIntegration', report.unattributed.webhookIntegrations],
    ['ApiKey', report.unattributed.apiKeys],
  ] as const)
    if (a.lastRefusalTime) rows.push({ ...a, kind, namespace: '-', name: '(none matched)' });
  if (rows.length === 0) return 'no integration or API key has received anything since this ingester started\n';
  const table = columns([
    ['KIND', 'NAMESPACE', 'NAME', 'LAST EVENT', 'EVENTS 1H', 'LAST REFUSAL', 'REFUSED 1H', 'REASONS 1H'],
    ...rows.map((r) => [
      r.kind,
      inertText(r.namespace),
      inertText(r.name),
      age(r.lastEventTime, nowMs),
      String(r.eventsLastHour),
      age(r.lastRefusalTime, nowMs),
      String(r.refusedLastHour),
      reasons(r.refusalsLastHour),
    ]),
  ]);
  const where = (r: Row): string => `${inertText(r.namespace)}/${inertText(r.name)}`;
  const recent = rows
    .flatMap((r) => r.recentRefusals.map((f): [Row, RecentRefusal] => [r, f]))
    .sort((a, b) => Date.parse(b[1].time) - Date.parse(a[1].time))
    .slice(0, LISTED);
  const senders = rows
    .flatMap((r) => (r.unauthenticatedSenders ?? []).map((s): [Row, UnauthenticatedSender] => [r, s]))
    .sort((a, b) => Date.parse(b[1].lastTime) - Date.parse(a[1].lastTime))
    .slice(0, LISTED);
  let out = `${table}\n`;
  if (recent.length > 0) {
    const lines = recent.map(
      ([r, f]) =>
        `  ${inertText(f.time)}  ${where(r)}  ${f.status} ${inertText(f.code)} (${inertText(f.reason)})  ` +
        `from ${inertText(f.remoteAddress) || '?'}${f.userAgent ? `, user-agent "${inertText(f.userAgent)}"` : ''}: ` +
        `${inertText(f.message)}${f.deadLetterId ? ` [dead letter ${inertText(f.deadLetterId)}]` : ''}`,
    );
    out += `\nrecent refusals (newest first):\n${lines.join('\n')}\n`;
  }
  if (senders.length > 0) {
    const lines = senders.map(
      ([r, s]) =>
        `  ${inertText(s.lastTime)}  ${where(r)}  ${s.status} ${inertText(s.code)} (${inertText(s.reason)})  ` +
        `from ${inertText(s.remoteAddress) || '?'}: ${s.count} since ${inertText(s.firstTime)}`,
    );
    out += `\nrefused before authentication (address and count only; anyone can send these):\n${lines.join('\n')}\n`;
  }
  return out;
}
