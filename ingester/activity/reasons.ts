/**
 * A refusal's reason, from the error catalogue's code (core/errors.ts): the few words a platform
 * team reads in `status.activity.refusalsLastHour`. Codes without an entry here are their own
 * reason, lower-cased (SIGNATURE_INVALID -> signature_invalid): a new kind of refusal is counted
 * under its own name without a change here (api/activity.ts: reasons are an open set).
 */
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
