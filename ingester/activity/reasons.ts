/**
 * A refusal's reason, from the error catalogue's code (core/errors.ts): the few words a platform
 * team reads in `status.activity.refusalsLastHour`. Codes without an entry here are their own
 * reason, lower-cased (NOT_FOUND -> not_found): a new kind of refusal is counted under its own
 * name without a change here (api/activity.ts: reasons are an open set).
 */
import { AuthRefusal, type AuthFailureReason, type IntakeError } from '../core/errors.js';

const REASONS: Readonly<Record<string, string>> = {
  UNAUTHORIZED: 'unauthorized',
  SUSPENDED: 'suspended',
  INVALID_BODY: 'invalid',
  INVALID_JSON: 'invalid',
  JSON_TOO_DEEP: 'invalid',
  BAD_HEADER: 'invalid',
  BAD_REQUEST: 'invalid',
  INVALID_IDEMPOTENCY_KEY: 'invalid',
  UNSUPPORTED_MEDIA_TYPE: 'invalid',
  METHOD_NOT_ALLOWED: 'invalid',
  PAYLOAD_TOO_LARGE: 'too_large',
  MAPPING_FAILED: 'mapping',
  DEAD_LETTER_FAILED: 'mapping',
  MAPPING_BUSY: 'mapping',
  RATE_LIMITED: 'rate_limited',
  MAPPING_CPU_LIMITED: 'rate_limited',
  SERIES_LIMIT: 'series_limit',
  SINK_FAILED: 'sink_unavailable',
  UNAVAILABLE: 'unavailable',
  INTERNAL: 'internal',
};

export function reasonOf(code: string): string {
  return REASONS[code] ?? code.toLowerCase();
}

/**
 * A signed sender's 401 says nothing of why (docs/signatures.md), but whoever runs the
 * integration needs to know whether the signature is absent, wrong or stale: these reasons are
 * recorded as the authenticator named them (as intake_auth_failures_total counts them). Basic's
 * `missing` and `invalid` stay `unauthorized`.
 */
const SIGNATURE_REASONS: ReadonlySet<AuthFailureReason> = new Set([
  'signature_missing',
  'signature_invalid',
  'timestamp_out_of_range',
]);

/** The reason a refusal is recorded under: the code's, or a signature failure's own. */
export function refusalReason(err: IntakeError): string {
  if (err instanceof AuthRefusal && err.code === 'UNAUTHORIZED' && SIGNATURE_REASONS.has(err.reason)) return err.reason;
  return reasonOf(err.code);
}
