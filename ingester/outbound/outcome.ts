/**
 * What one outgoing request came to, in one vocabulary for every sender (destinations, remote
 * write), classified the way at-least-once senders do it (Prometheus' remote write and notifier):
 * 2xx accepted (a destination's delivery, remote write's send); network errors, a missed deadline, 408, 429 and 5xx worth a retry, after the
 * receiver's Retry-After when it gave one; any other answer final (a 4xx will not change when sent
 * again, and a redirect is not followed: the URL is wrong).
 */
import { inertText } from '../../common/sender-text.js';

export type Outcome =
  /** status and headers are absent when nothing had to be sent (an Alertmanager batch with no alert). */
  | { kind: 'accepted'; status?: number; headers?: Readonly<Record<string, string | string[] | undefined>> }
  | { kind: 'retry'; reason: string; error: string; status?: number; retryAfterMs?: number }
  | { kind: 'reject'; reason: string; error: string; status?: number };

/**
 * Reasons besides `http_<status>`: `timeout` (no complete answer within the deadline), `network`
 * (refused, reset, TLS), `credentials` (a credential file could not be read), `aborted` (the
 * sender is shutting down), `invalid_request` (a request that cannot be built, e.g. a bad header),
 * `address_refused` (the address guard refused the receiver's address: guarded-connect.ts).
 */
export type FailureReason =
  'timeout' | 'network' | 'credentials' | 'aborted' | 'invalid_request' | 'address_refused' | `http_${number}`;

/** The receiver's answer text is kept for the dead letter and the log, but never more than this. */
export const MAX_ERROR_TEXT = 512;

export function classify(
  status: number,
  text: string,
  headers: Readonly<Record<string, string | string[] | undefined>>,
): Outcome {
  if (status >= 200 && status < 300) return { kind: 'accepted', status, headers };
  // The receiver's own text, read later in dead letters and logs: inert (common/sender-text.ts).
  const error = `HTTP ${status}${text ? `: ${inertText(text.slice(0, MAX_ERROR_TEXT), MAX_ERROR_TEXT)}` : ''}`;
  const reason = `http_${status}`;
  if (status === 408 || status === 429 || status >= 500) {
    const retryAfter = headers['retry-after'];
    const ms = parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
    return { kind: 'retry', reason, error, status, ...(ms !== undefined ? { retryAfterMs: ms } : {}) };
  }
  return { kind: 'reject', reason, error, status };
}

/** Retry-After as delay-seconds or an HTTP-date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, nowMs = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
