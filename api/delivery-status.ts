/**
 * Delivery per destination, as an ingester replica reports it on its admin port
 * (`GET /status/delivery`) and as the operator merges it, across replicas, into `status.delivery`
 * and the `CircuitOpen` and `Paused` conditions of a team's Destination (DestinationDelivery in
 * api/v1alpha1/types.ts). The ingester and the operator share this module.
 */
import type { AddressRefusal, DeliveryAnswer, DestinationMinutes } from './v1alpha1/types.js';
import { minuteOfStart, minuteStart } from './activity-minutes.js';

/** Minutes kept in DestinationMinutes: the last hour. */
export const DELIVERY_MINUTES = 60;
/** Longest excerpt of a receiver's answer kept (characters, after escaping). */
export const MAX_EXCERPT = 256;
/** Destinations one replica's report holds at most (the platform's and every team's it delivers to). */
export const MAX_REPORTED_DESTINATIONS = 10_000;

export type CircuitStateName = 'closed' | 'half-open' | 'open';

/** One destination in a replica's report. */
export interface ReportedDelivery {
  /** The ingesters' name: a platform destination's, or `<namespace>/<name>` for a team's. */
  name: string;
  /** A team destination's namespace; absent for the platform's. */
  namespace?: string;
  kind: 'alertmanager' | 'http';
  lastSuccess?: DeliveryAnswer;
  lastFailure?: DeliveryAnswer;
  deliveredLastHour: number;
  failedLastHour: number;
  deadLetteredLastHour: number;
  minutes?: DestinationMinutes;
  /**
   * Waiting for it, as this replica measured it: the bus consumers' pending and unacknowledged
   * messages (`backlogShared`: every replica measures the same consumers), or this replica's
   * outbox rows (its own share). Absent: not measured yet.
   */
  backlog?: number;
  /** Seconds the oldest waiting event has waited (0: none waits). */
  oldestPendingSeconds?: number;
  backlogShared: boolean;
  /** The destination's circuit on this replica (open or half-open only when every namespace's is). */
  circuit: CircuitStateName;
  /** Whether it is paused, and by whom: `settings` (suspend), `admin` (the admin API), `auto` (auto-pause). */
  paused: boolean;
  pausedBy?: 'settings' | 'admin' | 'auto';
  /** RFC 3339: when a runtime pause (admin, auto) began. */
  pausedSince?: string;
  addressRefused?: AddressRefusal;
}

/** `GET /status/delivery` of one ingester replica. */
export interface DeliveryReport {
  /** RFC 3339: when the report was made. */
  time: string;
  destinations: ReportedDelivery[];
}

/**
 * Counts per minute from `first` (arrays of equal length) as DestinationMinutes: cut to the span
 * from the first to the last minute with anything; undefined when every minute is 0.
 */
export function toDeliveryMinutes(
  first: number,
  delivered: readonly number[],
  failed: readonly number[],
): DestinationMinutes | undefined {
  const any = (i: number): boolean => (delivered[i] ?? 0) > 0 || (failed[i] ?? 0) > 0;
  let from = 0;
  let to = Math.max(delivered.length, failed.length) - 1;
  while (from <= to && !any(from)) from++;
  while (to >= from && !any(to)) to--;
  if (from > to) return undefined;
  const span = (a: readonly number[]): number[] => Array.from({ length: to - from + 1 }, (_, i) => a[from + i] ?? 0);
  return { start: minuteStart(first + from), delivered: span(delivered), failed: span(failed) };
}

/**
 * Sums several replicas' minutes, minute by minute, over the hour that ends with the latest minute
 * any of them has. Entries that are not numbers count 0: a replica's report is not trusted to be
 * well formed.
 */
export function sumDeliveryMinutes(all: Iterable<DestinationMinutes | undefined>): DestinationMinutes | undefined {
  const byMinute = new Map<number, [number, number]>();
  for (const m of all) {
    const first = m && typeof m.start === 'string' ? minuteOfStart(m.start) : undefined;
    if (first === undefined || !m) continue;
    const delivered = Array.isArray(m.delivered) ? m.delivered : [];
    const failed = Array.isArray(m.failed) ? m.failed : [];
    const length = Math.min(DELIVERY_MINUTES, Math.max(delivered.length, failed.length));
    for (let i = 0; i < length; i++) {
      const cell = byMinute.get(first + i) ?? [0, 0];
      cell[0] += count(delivered[i]);
      cell[1] += count(failed[i]);
      byMinute.set(first + i, cell);
    }
  }
  if (byMinute.size === 0) return undefined;
  const last = Math.max(...byMinute.keys());
  const first = last - DELIVERY_MINUTES + 1;
  const delivered: number[] = [];
  const failed: number[] = [];
  for (let minute = first; minute <= last; minute++) {
    const [d, f] = byMinute.get(minute) ?? [0, 0];
    delivered.push(d);
    failed.push(f);
  }
  return toDeliveryMinutes(first, delivered, failed);
}

/** A count a replica reported: a finite non-negative integer, else 0. */
export const count = (n: unknown): number => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.floor(n) : 0);
