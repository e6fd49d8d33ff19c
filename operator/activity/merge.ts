/**
 * Merging what the ingester replicas report for one integration or key into its status.activity
 * (api/activity.ts): counts over the last hour are summed (each replica counts only what it
 * answered), times are the latest, recent refusals are the newest RECENT_REFUSALS of all of them.
 * What the resource's status already holds is merged in too: times never go back and the last
 * refusals stay when every replica restarted (their counts start again from zero).
 */
import { stringify as stableStringify } from 'safe-stable-stringify';
import { RECENT_REFUSALS, type Activity, type RecentRefusal, type ReportedActivity } from '../../api/activity.js';

export type MergedActivity = Omit<Activity, 'updatedTime'>;

const later = (a: string | undefined, b: string | undefined): string | undefined =>
  a === undefined ? b : b === undefined ? a : Date.parse(b) > Date.parse(a) ? b : a;

const refusalKey = (r: RecentRefusal): string =>
  JSON.stringify([r.time, r.status, r.code, r.reason, r.message, r.remoteAddress, r.userAgent, r.deadLetterId ?? '']);

export function mergeActivity(reported: readonly ReportedActivity[], previous?: Activity): MergedActivity {
  let lastEventTime = previous?.lastEventTime;
  let lastRefusalTime = previous?.lastRefusalTime;
  let eventsLastHour = 0;
  const byReason = new Map<string, number>();
  const recent = new Map<string, RecentRefusal>();
  for (const r of previous?.recentRefusals ?? []) recent.set(refusalKey(r), r);
  for (const r of reported) {
    lastEventTime = later(lastEventTime, r.lastEventTime);
    lastRefusalTime = later(lastRefusalTime, r.lastRefusalTime);
    eventsLastHour += r.eventsLastHour;
    for (const [reason, n] of Object.entries(r.refusalsLastHour)) byReason.set(reason, (byReason.get(reason) ?? 0) + n);
    for (const f of r.recentRefusals) recent.set(refusalKey(f), f);
  }
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
