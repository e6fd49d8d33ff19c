/**
 * Merging what the ingester replicas report for one integration or key into its status.activity
 * (api/activity.ts): counts over the last hour are summed (each replica counts only what it
 * answered), times are the latest, recent refusals are the newest RECENT_REFUSALS of all of them,
 * and the senders refused before authentication are summed per address and reason, the
 * UNAUTHENTICATED_SENDERS seen last kept. What the resource's status already holds is merged in
 * too: times never go back and the last refusals and senders stay when every replica restarted
 * (their counts start again from zero).
 *
 * Every text is made inert and bounded here again (common/sender-text.ts), whatever a replica
 * reported or the status held: status.activity is what kubectl describe prints.
 */
import { stringify as stableStringify } from 'safe-stable-stringify';
import {
  MAX_REFUSAL_TEXT,
  RECENT_REFUSALS,
  UNAUTHENTICATED_SENDERS,
  type Activity,
  type RecentRefusal,
  type ReportedActivity,
  type UnauthenticatedSender,
} from '../../api/activity.js';
import { inertText } from '../../common/sender-text.js';
import { sumActivityMinutes } from '../../api/activity-minutes.js';

export type MergedActivity = Omit<Activity, 'updatedTime'>;

/** Codes, reasons and times are short words; anything longer is not one. */
const MAX_WORD = 64;

const later = (a: string | undefined, b: string | undefined): string | undefined =>
  a === undefined ? b : b === undefined ? a : Date.parse(b) > Date.parse(a) ? b : a;
const earlier = (a: string, b: string): string => (Date.parse(b) < Date.parse(a) ? b : a);

const refusalKey = (r: RecentRefusal): string =>
  JSON.stringify([r.time, r.status, r.code, r.reason, r.message, r.remoteAddress, r.userAgent, r.deadLetterId ?? '']);
const senderKey = (s: UnauthenticatedSender): string => JSON.stringify([s.remoteAddress, s.reason]);

function inertRefusal(r: RecentRefusal): RecentRefusal {
  const out: RecentRefusal = {
    time: inertText(r.time, MAX_WORD),
    status: Number(r.status),
    code: inertText(r.code, MAX_WORD),
    reason: inertText(r.reason, MAX_WORD),
    message: inertText(r.message, MAX_REFUSAL_TEXT),
    remoteAddress: inertText(r.remoteAddress, MAX_REFUSAL_TEXT),
    userAgent: inertText(r.userAgent, MAX_REFUSAL_TEXT),
  };
  if (r.deadLetterId !== undefined) out.deadLetterId = inertText(r.deadLetterId, MAX_REFUSAL_TEXT);
  return out;
}

function inertSender(s: UnauthenticatedSender): UnauthenticatedSender {
  return {
    remoteAddress: inertText(s.remoteAddress, MAX_REFUSAL_TEXT),
    reason: inertText(s.reason, MAX_WORD),
    status: Number(s.status),
    code: inertText(s.code, MAX_WORD),
    count: Number(s.count),
    firstTime: inertText(s.firstTime, MAX_WORD),
    lastTime: inertText(s.lastTime, MAX_WORD),
  };
}

/** One address and reason as several replicas saw it: counts summed, the first and last times, the last answer. */
function addSender(into: Map<string, UnauthenticatedSender>, s: UnauthenticatedSender): void {
  const key = senderKey(s);
  const found = into.get(key);
  if (!found) return void into.set(key, { ...s });
  found.count += s.count;
  found.firstTime = earlier(found.firstTime, s.firstTime);
  if (Date.parse(s.lastTime) > Date.parse(found.lastTime)) {
    found.lastTime = s.lastTime;
    found.status = s.status;
    found.code = s.code;
  }
}

export function mergeActivity(reported: readonly ReportedActivity[], previous?: Activity): MergedActivity {
  let lastEventTime = previous?.lastEventTime;
  let lastRefusalTime = previous?.lastRefusalTime;
  let eventsLastHour = 0;
  let droppedByRuleLastHour = 0;
  const byReason = new Map<string, number>();
  const recent = new Map<string, RecentRefusal>();
  const add = (r: RecentRefusal): void => {
    const clean = inertRefusal(r);
    recent.set(refusalKey(clean), clean);
  };
  for (const r of previous?.recentRefusals ?? []) add(r);
  const reportedSenders = new Map<string, UnauthenticatedSender>();
  for (const r of reported) {
    lastEventTime = later(lastEventTime, r.lastEventTime);
    lastRefusalTime = later(lastRefusalTime, r.lastRefusalTime);
    eventsLastHour += r.eventsLastHour;
    droppedByRuleLastHour += r.droppedByRuleLastHour ?? 0;
    for (const [reason, n] of Object.entries(r.refusalsLastHour)) {
      const key = inertText(reason, MAX_WORD);
      byReason.set(key, (byReason.get(key) ?? 0) + n);
    }
    for (const f of r.recentRefusals) add(f);
    for (const s of r.unauthenticatedSenders ?? []) addSender(reportedSenders, inertSender(s));
  }
  // What the replicas report now is the live count; the status keeps the senders no replica remembers.
  const senders = new Map<string, UnauthenticatedSender>();
  for (const s of previous?.unauthenticatedSenders ?? []) {
    const clean = inertSender(s);
    senders.set(senderKey(clean), clean);
  }
  for (const [key, s] of reportedSenders) senders.set(key, s);

  const refusalsLastHour = Object.fromEntries(
    [...byReason].filter(([, n]) => n > 0).sort(([a], [b]) => (a < b ? -1 : 1)),
  );
  const merged: MergedActivity = {
    eventsLastHour,
    refusedLastHour: Object.values(refusalsLastHour).reduce((a, b) => a + b, 0),
    refusalsLastHour,
    // Newest first; the same instant is ordered by content, so a merge is the same whatever the order of replicas.
    recentRefusals: [...recent]
      .sort(([ka, a], [kb, b]) => Date.parse(b.time) - Date.parse(a.time) || (ka < kb ? -1 : ka > kb ? 1 : 0))
      .slice(0, RECENT_REFUSALS)
      .map(([, r]) => r),
  };
  // Only what the replicas report now: like the hour's counts, the minutes start again when every replica restarted.
  const minutes = sumActivityMinutes(reported.map((r) => r.minutes));
  if (minutes) merged.minutes = minutes;
  if (droppedByRuleLastHour > 0) merged.droppedByRuleLastHour = droppedByRuleLastHour;
  if (senders.size > 0)
    merged.unauthenticatedSenders = [...senders]
      .sort(([ka, a], [kb, b]) => Date.parse(b.lastTime) - Date.parse(a.lastTime) || (ka < kb ? -1 : ka > kb ? 1 : 0))
      .slice(0, UNAUTHENTICATED_SENDERS)
      .map(([, s]) => s);
  if (lastEventTime !== undefined) merged.lastEventTime = lastEventTime;
  if (lastRefusalTime !== undefined) merged.lastRefusalTime = lastRefusalTime;
  return merged;
}

/** A comparable form: keys sorted at every level, updatedTime left out. */
export function activityFingerprint(activity: Activity | MergedActivity | undefined): string {
  if (!activity) return '';
  const { updatedTime: _ignored, ...rest } = activity as Activity;
  return stableStringify(rest) ?? '';
}
