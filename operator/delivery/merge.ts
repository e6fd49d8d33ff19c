/**
 * Merging what the ingester replicas report for one destination (api/delivery-status.ts) into a
 * team Destination's `status.delivery`, and its circuit and pause for the `CircuitOpen` and
 * `Paused` conditions:
 *
 * - counts over the last hour and the per-minute counts are summed (each replica counts only the
 *   requests it sent);
 * - the last success, the last failure and the last refused address are the latest of all, and of
 *   what the status already holds (they never go back, and stay when every replica restarted);
 * - what waits: with the bus every replica measures the same durable consumers, so the largest
 *   value is taken (a sum would count the same messages once per replica); from the outbox each
 *   replica holds its own rows, so they are summed. The oldest pending age is the largest either way;
 * - the circuit: open when any replica's is open (that replica's events wait), half-open when
 *   none is open and one is half-open, else closed; the pause: paused when any replica is, the
 *   auto-pause named first (only a resume ends it).
 *
 * Every text is made inert and bounded here again (common/sender-text.ts), whatever a replica
 * reported or the status held: status.delivery is what kubectl describe prints.
 */
import { stringify as stableStringify } from 'safe-stable-stringify';
import {
  count,
  MAX_EXCERPT,
  sumDeliveryMinutes,
  type CircuitStateName,
  type ReportedDelivery,
} from '../../api/delivery-status.js';
import { MAX_REFUSAL_TEXT } from '../../api/activity.js';
import type { AddressRefusal, DeliveryAnswer, DestinationDelivery } from '../../api/v1alpha1/types.js';
import { formatDuration } from '../../common/duration.js';
import { inertText } from '../../common/sender-text.js';
import type { ConditionState } from '../conditions.js';

export type MergedDeliveryStatus = Omit<DestinationDelivery, 'updatedTime'>;

export interface MergedDelivery {
  delivery: MergedDeliveryStatus;
  /** Replicas that reported the destination, and how many of them had its circuit open or half-open. */
  replicas: number;
  open: number;
  halfOpen: number;
  /** Who paused it on some replica (auto first, then admin, then settings); absent: delivering. */
  pausedBy?: 'settings' | 'admin' | 'auto';
  pausedSince?: string;
}

/** Times are short words; anything longer is not one. */
const MAX_WORD = 64;

const timeMs = (t: unknown): number => (typeof t === 'string' ? Date.parse(t) : Number.NaN);

function inertAnswer(a: DeliveryAnswer | undefined): DeliveryAnswer | undefined {
  if (!a || !Number.isFinite(timeMs(a.time))) return undefined;
  const out: DeliveryAnswer = { time: inertText(a.time, MAX_WORD) };
  const code = Number(a.statusCode);
  if (a.statusCode !== undefined && Number.isInteger(code) && code >= 100 && code <= 999) out.statusCode = code;
  if (a.excerpt !== undefined && a.excerpt !== '') out.excerpt = inertText(a.excerpt, MAX_EXCERPT);
  return out;
}

function inertRefusal(r: AddressRefusal | undefined): AddressRefusal | undefined {
  if (!r || !Number.isFinite(timeMs(r.time))) return undefined;
  return {
    time: inertText(r.time, MAX_WORD),
    host: inertText(r.host, MAX_REFUSAL_TEXT),
    address: inertText(r.address, MAX_REFUSAL_TEXT),
    message: inertText(r.message, MAX_REFUSAL_TEXT),
  };
}

/** The later of two (a tie keeps the first: the status's, so an unchanged merge writes nothing). */
function later<T extends { time: string }>(a: T | undefined, b: T | undefined): T | undefined {
  if (!a) return b;
  if (!b) return a;
  return timeMs(b.time) > timeMs(a.time) ? b : a;
}

/**
 * An age as the status shows it, coarse enough that a backlog that waits does not rewrite the
 * status every round: to 10 s under ten minutes, to the minute under an hour, then to 10 minutes.
 */
export function roundedAge(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const step = s < 600 ? 10 : s < 3600 ? 60 : 600;
  return formatDuration(Math.floor(s / step) * step * 1000);
}

const PAUSE_ORDER = { auto: 3, admin: 2, settings: 1 } as const;

export function mergeDelivery(reported: readonly ReportedDelivery[], previous?: DestinationDelivery): MergedDelivery {
  let lastSuccess = inertAnswer(previous?.lastSuccess);
  let lastFailure = inertAnswer(previous?.lastFailure);
  let addressRefused = inertRefusal(previous?.addressRefused);
  let delivered = 0;
  let failed = 0;
  let deadLettered = 0;
  let sharedBacklog: number | undefined;
  let ownBacklog: number | undefined;
  let oldestSeconds: number | undefined;
  let open = 0;
  let halfOpen = 0;
  let pausedBy: MergedDelivery['pausedBy'];
  let pausedSince: string | undefined;
  for (const r of reported) {
    lastSuccess = later(lastSuccess, inertAnswer(r.lastSuccess));
    lastFailure = later(lastFailure, inertAnswer(r.lastFailure));
    addressRefused = later(addressRefused, inertRefusal(r.addressRefused));
    delivered += count(r.deliveredLastHour);
    failed += count(r.failedLastHour);
    deadLettered += count(r.deadLetteredLastHour);
    if (typeof r.backlog === 'number' && Number.isFinite(r.backlog)) {
      const n = count(r.backlog);
      if (r.backlogShared) sharedBacklog = Math.max(sharedBacklog ?? 0, n);
      else ownBacklog = (ownBacklog ?? 0) + n;
    }
    if (typeof r.oldestPendingSeconds === 'number' && Number.isFinite(r.oldestPendingSeconds))
      oldestSeconds = Math.max(oldestSeconds ?? 0, r.oldestPendingSeconds);
    if (r.circuit === 'open') open++;
    else if (r.circuit === 'half-open') halfOpen++;
    if (r.paused && r.pausedBy && PAUSE_ORDER[r.pausedBy] > (pausedBy ? PAUSE_ORDER[pausedBy] : 0)) {
      pausedBy = r.pausedBy;
      pausedSince = typeof r.pausedSince === 'string' ? inertText(r.pausedSince, MAX_WORD) : undefined;
    } else if (r.paused && !pausedBy) pausedBy = 'settings';
  }
  const delivery: MergedDeliveryStatus = {
    deliveredLastHour: delivered,
    failedLastHour: failed,
    deadLetteredLastHour: deadLettered,
  };
  // Like the hour's counts, the minutes are only what the replicas report now.
  const minutes = sumDeliveryMinutes(reported.map((r) => r.minutes));
  if (minutes) delivery.minutes = minutes;
  if (lastSuccess) delivery.lastSuccess = lastSuccess;
  if (lastFailure) delivery.lastFailure = lastFailure;
  // Both kinds in one merge only while replicas of two versions or settings report: the larger wins.
  const backlog =
    sharedBacklog === undefined
      ? ownBacklog
      : ownBacklog === undefined
        ? sharedBacklog
        : Math.max(sharedBacklog, ownBacklog);
  if (backlog !== undefined) delivery.backlog = backlog;
  // Nothing waits: 0s (a gauge read between two measurements may still hold the last age).
  if (oldestSeconds !== undefined && backlog !== undefined)
    delivery.oldestPendingAge = roundedAge(backlog > 0 ? oldestSeconds : 0);
  if (addressRefused) delivery.addressRefused = addressRefused;
  return {
    delivery,
    replicas: reported.length,
    open,
    halfOpen,
    ...(pausedBy ? { pausedBy } : {}),
    ...(pausedBy && pausedSince ? { pausedSince } : {}),
  };
}

/** The merged circuit: open on any replica, else half-open on any, else closed. */
export function mergedCircuit(m: MergedDelivery): CircuitStateName {
  return m.open > 0 ? 'open' : m.halfOpen > 0 ? 'half-open' : 'closed';
}

/** The `CircuitOpen` condition of what the replicas reported (column Circuit shows its reason). */
export function circuitCondition(m: MergedDelivery): ConditionState {
  const of = `of ${m.replicas} ingester replica(s)`;
  if (m.open > 0)
    return {
      status: 'True',
      reason: 'Open',
      message: `the receiver failed: the circuit is open on ${m.open} ${of}; events wait in the queue and a probe is sent after circuitBreaker.openFor (status.delivery.lastFailure says what the receiver answered)`,
    };
  if (m.halfOpen > 0)
    return {
      status: 'True',
      reason: 'HalfOpen',
      message: `the circuit is half-open on ${m.halfOpen} ${of}: the next request is a probe, whose answer closes it or opens it again`,
    };
  return { status: 'False', reason: 'Closed', message: `the circuit is closed on every one ${of}: delivering` };
}

/** The `Paused` condition when a replica holds a runtime pause (the admin API, auto-pause); undefined otherwise. */
export function runtimePauseCondition(m: MergedDelivery): ConditionState | undefined {
  const since = m.pausedSince ? ` since ${m.pausedSince}` : '';
  if (m.pausedBy === 'auto')
    return {
      status: 'True',
      reason: 'AutoPaused',
      message: `the receiver failed continuously for autoPause.after: paused${since}, events held; resume with intake destination resume (the admin API), once the receiver is fixed`,
    };
  if (m.pausedBy === 'admin')
    return {
      status: 'True',
      reason: 'PausedByAdmin',
      message: `paused through the ingesters' admin API${since}: events held until a resume there`,
    };
  return undefined;
}

/** A comparable form: keys sorted at every level, updatedTime left out. */
export function deliveryFingerprint(d: DestinationDelivery | MergedDeliveryStatus | undefined): string {
  if (!d) return '';
  const { updatedTime: _ignored, ...rest } = d as DestinationDelivery;
  return stableStringify(rest) ?? '';
}
