/**
 * `intake status`, its delivery half: a replica's delivery report (api/delivery-status.ts, from
 * `GET /status/delivery`) as a table a person reads: per destination its circuit, pause, backlog,
 * oldest pending event and last success and failure; the receivers' last failing answers below it.
 *
 * A receiver's answer is its own words (an excerpt of its body): printed inert
 * (common/sender-text.ts), whatever ingester version wrote the report.
 */
import type { DeliveryReport, ReportedDelivery } from '../api/delivery-status.js';
import { inertText } from '../common/sender-text.js';
import { age } from './activity-table.js';
import { columns } from './output.js';

/** At most this many receivers' answers listed below the table. */
const LISTED = 10;

/** The age of an event that has waited `s` seconds (kubectl's style: 45s, 12m, 3h); `-` when not measured yet. */
function waited(s: number | undefined, nowMs: number): string {
  if (s === undefined || !Number.isFinite(s)) return '-';
  return age(new Date(nowMs - Math.max(0, s) * 1000).toISOString(), nowMs);
}

/** Paused, and by whom (settings, admin, auto). */
const paused = (d: ReportedDelivery): string => (d.paused ? `True (${inertText(d.pausedBy ?? '?')})` : 'False');

/** When it last failed and how: the status code, or that no answer came (a timeout, a refused connection). */
function failure(d: ReportedDelivery, nowMs: number): string {
  if (!d.lastFailure) return 'never';
  const how = d.lastFailure.statusCode !== undefined ? String(d.lastFailure.statusCode) : 'no answer';
  return `${age(d.lastFailure.time, nowMs)} (${how})`;
}

export function deliveryTable(report: DeliveryReport, nowMs = Date.now()): string {
  const list = Array.isArray(report.destinations) ? report.destinations : [];
  if (list.length === 0) return 'no destination is delivered to by this ingester\n';
  const table = columns([
    [
      'DESTINATION',
      'KIND',
      'CIRCUIT',
      'PAUSED',
      'BACKLOG',
      'OLDEST PENDING',
      'LAST SUCCESS',
      'LAST FAILURE',
      'DELIVERED 1H',
      'FAILED 1H',
      'DEAD-LETTERED 1H',
    ],
    ...list.map((d) => [
      inertText(d.name),
      inertText(d.kind),
      inertText(d.circuit),
      paused(d),
      d.backlog === undefined ? '-' : String(d.backlog),
      waited(d.oldestPendingSeconds, nowMs),
      age(d.lastSuccess?.time, nowMs),
      failure(d, nowMs),
      String(d.deliveredLastHour),
      String(d.failedLastHour),
      String(d.deadLetteredLastHour),
    ]),
  ]);
  let out = `${table}\n`;
  const failures = list
    .filter((d) => d.lastFailure)
    .sort((a, b) => Date.parse(b.lastFailure?.time ?? '') - Date.parse(a.lastFailure?.time ?? ''))
    .slice(0, LISTED);
  if (failures.length > 0) {
    const lines = failures.map((d) => {
      const f = d.lastFailure as NonNullable<ReportedDelivery['lastFailure']>;
      const how = f.statusCode !== undefined ? `${f.statusCode}` : 'no answer';
      return `  ${inertText(f.time)}  ${inertText(d.name)}  ${how}${f.excerpt ? `: ${inertText(f.excerpt)}` : ''}`;
    });
    out += `\nlast failures (newest first):\n${lines.join('\n')}\n`;
  }
  const refused = list.filter((d) => d.addressRefused);
  if (refused.length > 0) {
    const lines = refused.slice(0, LISTED).map((d) => {
      const r = d.addressRefused as NonNullable<ReportedDelivery['addressRefused']>;
      return `  ${inertText(r.time)}  ${inertText(d.name)}  ${inertText(r.host)} (${inertText(r.address)}): ${inertText(r.message)}`;
    });
    out += `\naddresses refused by the address guard:\n${lines.join('\n')}\n`;
  }
  return out;
}
