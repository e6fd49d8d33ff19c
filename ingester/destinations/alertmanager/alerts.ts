/**
 * Events as Alertmanager alerts (docs/design.md §5). The labels are the event's identity, so
 * Alertmanager groups and deduplicates them; the annotations carry the rest (Alertmanager simply
 * overwrites annotations with the latest value). One alert state per (namespace, integration,
 * signature) is kept in the durable store, because Alertmanager keeps alerts in memory only and
 * must be sent them again and again, as Prometheus does.
 *
 * - severity > 0 fires the alert; `startsAt` is the event time of the first firing event.
 * - severity 0 (clear) resolves the alert with the same signature (`endsAt` = now).
 * - A new severity changes the labels, so it is a new alert; the old one is resolved.
 * - An event older than the last one applied to its signature changes nothing (at-least-once
 *   delivery may reorder a clear and the event it clears).
 */
import { hash } from 'node:crypto';
import type { NormalisedEvent } from '../../core/event.js';

/** What Alertmanager's POST /api/v2/alerts takes, one element of the array. */
export interface PostableAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
}

export interface AlertState {
  /** Identity digest (namespace, integration, signature). */
  key: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  /** Set once cleared: the alert is sent as resolved until the retention ends, then forgotten. */
  resolvedAt?: string;
  /** The alert this one replaced when the severity changed; sent as resolved for the retention. */
  replaced?: { labels: Record<string, string>; annotations: Record<string, string>; startsAt: string; endedAt: string };
  /** Event time (ms) and id of the last event applied. */
  lastEventAtMs: number;
  lastEventId: string;
  /** When intake last applied an event to it (ms): resolveAfter counts from here. */
  lastSeenMs?: number;
}

export interface Timing {
  resendIntervalMs: number;
  resolvedRetentionMs: number;
}

/** Firing alerts carry endsAt = now + 4 resend intervals, as Prometheus does: two lost sends do not resolve them. */
export const ENDS_AT_INTERVALS = 4;

export function alertKey(e: Pick<NormalisedEvent, 'namespace' | 'integration' | 'signature'>): string {
  return hash('sha256', `${e.namespace}\n${e.integration}\n${e.signature}`, 'hex');
}

export function labelsOf(e: NormalisedEvent): Record<string, string> {
  const alertname = e.type || e.class || 'IntakeEvent';
  const { signature, source, integration, namespace } = e;
  const severity: string = e.severity_name;
  // The common case in one literal (one object shape, no per-event array): every label has a value.
  if (signature !== '' && source !== '' && severity !== '' && integration !== '' && namespace !== '')
    return { alertname, signature, source, severity, integration, namespace };
  // Alertmanager treats an empty label value as an absent label; leave it out rather than send it.
  const labels: Record<string, string> = { alertname };
  if (signature !== '') labels.signature = signature;
  if (source !== '') labels.source = source;
  if (severity !== '') labels.severity = severity;
  if (integration !== '') labels.integration = integration;
  if (namespace !== '') labels.namespace = namespace;
  return labels;
}

export function annotationsOf(e: NormalisedEvent): Record<string, string> {
  const a: Record<string, string> = { event_id: e.id, agent_time: e.agent_time, received_at: e.received_at };
  for (const field of [
    'description',
    'manager',
    'agent_location',
    'external_id',
    'source_id',
    'class',
    'type',
  ] as const) {
    const value = e[field];
    if (value) a[field] = value;
  }
  if (hasKeys(e.custom_info)) a.custom_info = JSON.stringify(e.custom_info);
  return a;
}

/** Whether an object has an own enumerable key (without building the array of them). */
function hasKeys(o: Record<string, unknown>): boolean {
  for (const k in o) if (Object.hasOwn(o, k)) return true;
  return false;
}

/**
 * The state after `e`, and whether anything changed. Applying the same event twice (a redelivery)
 * or an older one changes nothing. `key`: the event's alertKey, when the caller has it already.
 */
export function applyEvent(
  prev: AlertState | undefined,
  e: NormalisedEvent,
  nowMs: number,
  key?: string,
): { next: AlertState | undefined; changed: boolean } {
  const eventAtMs = Date.parse(e.agent_time);
  if (prev && (prev.lastEventId === e.id || eventAtMs < prev.lastEventAtMs)) return { next: prev, changed: false };
  if (e.severity === 0) {
    // A clear for a signature with no firing alert has nothing to resolve.
    if (!prev || prev.resolvedAt) return { next: prev, changed: false };
    return {
      next: {
        ...prev,
        resolvedAt: isoString(nowMs),
        lastEventAtMs: eventAtMs,
        lastEventId: e.id,
        lastSeenMs: nowMs,
      },
      changed: true,
    };
  }
  const labels = labelsOf(e);
  const annotations = annotationsOf(e);
  const firingSameAlert = prev && !prev.resolvedAt && sameLabels(prev.labels, labels);
  const next: AlertState = {
    key: prev?.key ?? key ?? alertKey(e),
    labels,
    annotations,
    // An event time ahead of this machine's clock would put startsAt in the future.
    startsAt: firingSameAlert ? prev.startsAt : isoString(Math.min(eventAtMs, nowMs)),
    lastEventAtMs: eventAtMs,
    lastEventId: e.id,
    lastSeenMs: nowMs,
  };
  if (prev && !prev.resolvedAt && !firingSameAlert) {
    next.replaced = {
      labels: prev.labels,
      annotations: prev.annotations,
      startsAt: prev.startsAt,
      endedAt: isoString(nowMs),
    };
  } else if (prev?.replaced && firingSameAlert) {
    next.replaced = prev.replaced;
  }
  return { next, changed: true };
}

/** The alerts to send for a state now (empty once everything in it is past the retention). */
export function alertsOf(s: AlertState, nowMs: number, t: Timing): PostableAlert[] {
  const out: PostableAlert[] = [];
  if (s.replaced && nowMs - Date.parse(s.replaced.endedAt) < t.resolvedRetentionMs) {
    out.push({
      labels: s.replaced.labels,
      annotations: s.replaced.annotations,
      startsAt: s.replaced.startsAt,
      endsAt: s.replaced.endedAt,
    });
  }
  if (s.resolvedAt) {
    if (nowMs - Date.parse(s.resolvedAt) < t.resolvedRetentionMs)
      out.push({
        labels: s.labels,
        annotations: s.annotations,
        startsAt: s.startsAt,
        endsAt: endsAfterStart(s.startsAt, s.resolvedAt),
      });
  } else {
    out.push({
      labels: s.labels,
      annotations: s.annotations,
      startsAt: s.startsAt,
      endsAt: isoString(nowMs + ENDS_AT_INTERVALS * t.resendIntervalMs),
    });
  }
  return out;
}

/**
 * A firing alert no event has confirmed for `resolveAfterMs` (a source that never sends clears),
 * resolved now; undefined when it is not due (or resolveAfter is off).
 */
export function expire(s: AlertState, nowMs: number, resolveAfterMs: number): AlertState | undefined {
  if (resolveAfterMs <= 0 || s.resolvedAt || nowMs - (s.lastSeenMs ?? s.lastEventAtMs) < resolveAfterMs)
    return undefined;
  return {
    ...s,
    resolvedAt: new Date(nowMs).toISOString(),
    annotations: { ...s.annotations, resolved_by: `resolveAfter: no event for ${Math.round(resolveAfterMs / 1000)}s` },
  };
}

/** Whether the state can be forgotten: resolved and past the retention, nothing replaced still to send. */
export function isSpent(s: AlertState, nowMs: number, t: Timing): boolean {
  return s.resolvedAt !== undefined && alertsOf(s, nowMs, t).length === 0;
}

/**
 * A time (ms) as an ISO string, the last two remembered: the alerts of one batch are stamped with
 * the same few times (their events' startsAt, the batch's endsAt, taken in turn), so most calls
 * skip building and formatting a Date. (With one remembered, startsAt and endsAt took turns at
 * evicting each other: two Dates an alert, 5% of the ingester's CPU from the outbox.)
 */
let lastIsoMs = Number.NaN;
let lastIso = '';
let olderIsoMs = Number.NaN;
let olderIso = '';
function isoString(ms: number): string {
  if (ms === lastIsoMs) return lastIso;
  if (ms === olderIsoMs) return olderIso;
  olderIsoMs = lastIsoMs;
  olderIso = lastIso;
  lastIso = new Date(ms).toISOString();
  lastIsoMs = ms;
  return lastIso;
}

/** Alertmanager refuses endsAt before startsAt (a clear stamped earlier than the firing event's time). */
function endsAfterStart(startsAt: string, endsAt: string): string {
  return Date.parse(endsAt) < Date.parse(startsAt) ? startsAt : endsAt;
}

function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}
