/**
 * Event ids that survive retries (docs/design.md §5). The id is the JetStream `Nats-Msg-Id`, so a
 * sender's retry of a request (after a 503, a timeout or a lost response) is stored once.
 *
 * The rule:
 * - with an `Idempotency-Key` request header: SHA-256 over [namespace, integration, "key", the
 *   header value, the event's index in the batch]. The same key with the same batch gives the same
 *   ids, whatever the body; a new key gives new ids even for identical content.
 * - without it: SHA-256 over [namespace, integration, "content", the item as sent, in canonical
 *   JSON (object keys sorted, no whitespace)]. Consequence: two identical items within the bus's
 *   duplicate window are stored once. A sender that repeats identical events on purpose sends an
 *   `Idempotency-Key` (or a field that differs, such as `agent_time`).
 * Namespace and integration are part of every id, so one tenant can never suppress another's
 * events by reusing its keys or content. Ids are base64url, 43 characters.
 */
import { hash } from 'node:crypto';
import { invalidIdempotencyKey } from './errors.js';

/** Visible ASCII only (RFC 9110 field values without spaces/controls), and not unbounded. */
const KEY_PATTERN = /^[\x21-\x7e]{1,256}$/;

export type IdSource = { kind: 'key'; key: string } | { kind: 'content' };

/** Reads the Idempotency-Key header: absent means content ids; malformed is a 400 naming it. */
export function idSourceOf(header: string | string[] | undefined): IdSource {
  if (header === undefined) return { kind: 'content' };
  const value = Array.isArray(header) ? header : [header];
  const key = value.length === 1 ? (value[0] as string).trim() : '';
  if (!KEY_PATTERN.test(key)) {
    const message = 'must be given once, 1..256 visible ASCII characters';
    throw invalidIdempotencyKey(message);
  }
  return { kind: 'key', key };
}

export function eventId(
  namespace: string,
  integration: string,
  source: IdSource,
  index: number,
  item: unknown,
): string {
  const text =
    source.kind === 'key'
      ? JSON.stringify([namespace, integration, 'key', source.key, index])
      : `${JSON.stringify([namespace, integration, 'content'])}${canonicalJson(item)}`;
  // The one-shot digest (UTF-8, as Hash.update hashed the string): no Hash object per event.
  return hash('sha256', text, 'base64url');
}

/** JSON with object keys sorted at every level, so key order in the body does not change the id. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    if (i > 0) out += ',';
    out += `${JSON.stringify(k)}:${canonicalJson(obj[k])}`;
  }
  return `${out}}`;
}
