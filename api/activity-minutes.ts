/**
 * The per-minute counts of status.activity (ActivityMinutes in api/activity.ts): built by each
 * ingester replica from its minute rings, summed by the operator across replicas, drawn by the
 * console. Minutes are whole wall-clock minutes since the epoch.
 */
import { ACTIVITY_MINUTES, type ActivityMinutes } from './activity.js';

const MINUTE_MS = 60_000;

export const minuteStart = (minute: number): string => new Date(minute * MINUTE_MS).toISOString();

/** The minute an ActivityMinutes starts at, or undefined if `start` is not a time. */
export function minuteOfStart(start: string): number | undefined {
  const ms = Date.parse(start);
  return Number.isFinite(ms) ? Math.floor(ms / MINUTE_MS) : undefined;
}

/**
 * Counts per minute from `first` (arrays of equal length) as an ActivityMinutes: cut to the span
 * from the first to the last minute with anything; undefined when every minute is 0.
 */
export function toActivityMinutes(
  first: number,
  events: readonly number[],
  refused: readonly number[],
): ActivityMinutes | undefined {
  const any = (i: number): boolean => (events[i] ?? 0) > 0 || (refused[i] ?? 0) > 0;
  let from = 0;
  let to = Math.max(events.length, refused.length) - 1;
  while (from <= to && !any(from)) from++;
  while (to >= from && !any(to)) to--;
  if (from > to) return undefined;
  const span = (a: readonly number[]): number[] => Array.from({ length: to - from + 1 }, (_, i) => a[from + i] ?? 0);
  return { start: minuteStart(first + from), events: span(events), refused: span(refused) };
}

/**
 * Sums several replicas' minutes, minute by minute, over the hour that ends with the latest minute
 * any of them has (a replica's report is at most an hour long; one held from before is cut to it).
 * Entries that are not numbers count 0: what a replica reported is not trusted to be well formed.
 */
export function sumActivityMinutes(all: Iterable<ActivityMinutes | undefined>): ActivityMinutes | undefined {
  const byMinute = new Map<number, [number, number]>();
  for (const m of all) {
    const first = m && minuteOfStart(m.start);
    if (first === undefined || !m) continue;
    const length = Math.min(ACTIVITY_MINUTES, Math.max(m.events?.length ?? 0, m.refused?.length ?? 0));
    for (let i = 0; i < length; i++) {
      const cell = byMinute.get(first + i) ?? [0, 0];
      cell[0] += count(m.events?.[i]);
      cell[1] += count(m.refused?.[i]);
      byMinute.set(first + i, cell);
    }
  }
  if (byMinute.size === 0) return undefined;
  const last = Math.max(...byMinute.keys());
  const first = last - ACTIVITY_MINUTES + 1;
  const events: number[] = [];
  const refused: number[] = [];
  for (let minute = first; minute <= last; minute++) {
    const [e, r] = byMinute.get(minute) ?? [0, 0];
    events.push(e);
    refused.push(r);
  }
  return toActivityMinutes(first, events, refused);
}

const count = (n: unknown): number => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.floor(n) : 0);
