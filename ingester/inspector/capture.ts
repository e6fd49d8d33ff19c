/**
 * What the inspector keeps of one answered request (api/inspector.ts): its headers without
 * secrets, its body cut to the cap, the events it became and where each goes. Built once the
 * answer is sent, off the sender's path.
 */
import { randomBytes } from 'node:crypto';
import { isSecretHeader, type CapturedRequest, type CapturedRouting } from '../../api/inspector.js';
import { inertText } from '../../common/sender-text.js';
import type { NormalisedEvent } from '../core/event.js';
import type { IntakeError } from '../core/errors.js';
import type { RuleDecision } from '../../api/routing-rules.js';
import type { RouteEntry } from '../routing/route-table.js';
import type { InspectorSettings } from './settings.js';

export interface AnsweredRequest {
  entry: RouteEntry;
  receivedAtMs: number;
  remoteAddress: string;
  status: number;
  refusal: IntakeError | null;
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The body as read (Content-Encoding undone); absent when it was never read. */
  body: Buffer | undefined;
  /** The events the body was mapped to; absent when it never got that far. */
  events: readonly NormalisedEvent[] | undefined;
  /**
   * Each event's routing as its rules decided when the request was accepted (the decision the
   * hand-off carried, charged to the namespace then); absent: no rules, or not decided.
   */
  decisions?: readonly RuleDecision[] | undefined;
}

/** Header values kept at most (a header is not a body: one long value would take a capture's room). */
const MAX_HEADER_CHARS = 1024;
const MAX_HEADERS = 64;

/** A capture id sorts by time across replicas: the time in base 36, then randomness. */
export function captureId(nowMs: number): string {
  return `${nowMs.toString(36).padStart(9, '0')}-${randomBytes(6).toString('hex')}`;
}

export function captureOf(
  r: AnsweredRequest,
  s: Pick<InspectorSettings, 'maxBodyBytes' | 'maxEventsBytes'>,
): CapturedRequest {
  const body = r.body ?? Buffer.alloc(0);
  const cut = body.length > s.maxBodyBytes;
  const captured: CapturedRequest = {
    id: captureId(r.receivedAtMs),
    namespace: r.entry.namespace,
    integration: r.entry.name,
    receivedAt: new Date(r.receivedAtMs).toISOString(),
    remoteAddress: r.remoteAddress,
    status: r.status,
    headers: keptHeaders(r.headers, r.entry),
    body: (cut ? body.subarray(0, s.maxBodyBytes) : body).toString('utf8'),
    bodyTruncated: cut,
    bodyBytes: body.length,
  };
  if (r.refusal) captured.refusal = { code: r.refusal.code, message: inertText(r.refusal.message, 512) };
  if (r.events) Object.assign(captured, eventsWithin(r.entry, r.events, r.decisions, s.maxEventsBytes));
  return captured;
}

/** The events and their routing, as many of them (in order) as fit in maxEventsBytes. */
function eventsWithin(
  entry: RouteEntry,
  all: readonly NormalisedEvent[],
  decisions: readonly RuleDecision[] | undefined,
  maxBytes: number,
): Pick<CapturedRequest, 'events' | 'routing' | 'eventsTruncated'> {
  const events: NormalisedEvent[] = [];
  let used = 0;
  for (const e of all) {
    used += Buffer.byteLength(JSON.stringify(e));
    if (used > maxBytes) break;
    events.push(e);
  }
  // Never evaluated again here: the decision was made (and paid for) once, at acceptance.
  const routing: CapturedRouting[] = events.map((_, i) => {
    const r = decisions?.[i] ?? { matched: [], destinations: entry.destinations };
    return {
      matched: [...r.matched],
      destinations: [...r.destinations],
      ...(r.droppedBy !== undefined ? { droppedBy: r.droppedBy } : {}),
    };
  });
  return { events, routing, ...(events.length < all.length ? { eventsTruncated: true } : {}) };
}

/** Every header but credentials, signatures, cookies and the route's own signature headers; values bounded. */
function keptHeaders(headers: AnsweredRequest['headers'], entry: RouteEntry): Record<string, string> {
  // Its timestamp and message id headers are kept: they prove nothing without the secret, and they explain a refusal.
  const signatureHeader = entry.signature?.rule.header;
  const kept: Record<string, string> = {};
  let n = 0;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || isSecretHeader(name) || name === signatureHeader) continue;
    if (n++ >= MAX_HEADERS) break;
    const text = Array.isArray(value) ? value.join(', ') : value;
    kept[name] = inertText(text, MAX_HEADER_CHARS);
  }
  return kept;
}
