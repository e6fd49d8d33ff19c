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

/**
 * `itemJson`, when given, must be JSON.stringify(item) (a mapping measured its output that way):
 * the native presets write their events in canonical form, so it is the id's text as it is.
 */
export function eventId(
  namespace: string,
  integration: string,
  source: IdSource,
  index: number,
  item: unknown,
  itemJson?: string,
): string {
  const text =
    source.kind === 'key'
      ? JSON.stringify([namespace, integration, 'key', source.key, index])
      : `${contentPrefix(namespace, integration)}${canonicalJson(item, itemJson)}`;
  // The one-shot digest (UTF-8, as Hash.update hashed the string): no Hash object per event.
  return hash('sha256', text, 'base64url');
}

/** `JSON.stringify([namespace, integration, "content"])`, the last one remembered (a request's events share it). */
function contentPrefix(namespace: string, integration: string): string {
  if (namespace !== prefixNamespace || integration !== prefixIntegration) {
    prefix = JSON.stringify([namespace, integration, 'content']);
    prefixNamespace = namespace;
    prefixIntegration = integration;
  }
  return prefix;
}
let prefixNamespace: string | undefined;
let prefixIntegration: string | undefined;
let prefix = '';

/**
 * JSON with object keys sorted at every level, so key order in the body does not change the id.
 * `valueJson`, when given, must be JSON.stringify(value); it is returned when that already is the
 * canonical form, instead of serialising the value again.
 *
 * One native JSON.stringify does the writing (built by hand, the string cost about 10 µs for an
 * Alertmanager alert's event, a tenth of a storm's CPU): parts already in canonical order (plain
 * objects with sorted keys, as Alertmanager's labels come) are used as they are, the rest is
 * copied with its keys sorted. Keys that look like array indices (which JavaScript objects order
 * first, by number) and `__proto__` cannot be copied that way, and take the longer road.
 */
export function canonicalJson(value: unknown, valueJson?: string): string {
  const copy = canonicalCopy(value);
  if (copy === CANNOT_COPY) return canonicalJsonByHand(value);
  // No copy was needed: JSON.stringify(value), when the caller has it, is the canonical form.
  if (copy === value && valueJson !== undefined) return valueJson;
  return JSON.stringify(copy) ?? 'null';
}

const CANNOT_COPY = Symbol('cannot copy');
const INDEX_LIKE = /^(?:0|[1-9][0-9]*)$/;

/** `value`, or a copy whose JSON.stringify is the canonical form (CANNOT_COPY when no copy can be). */
function canonicalCopy(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || stringifiesCanonically(value)) return value;
  if (Array.isArray(value)) {
    const out: unknown[] = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) {
      const c = canonicalCopy(value[i]);
      if (c === CANNOT_COPY) return CANNOT_COPY;
      out[i] = c;
    }
    return out;
  }
  const obj = value as Record<string, unknown>;
  const keys = sortedKeys(obj);
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    if (k === '__proto__' || INDEX_LIKE.test(k)) return CANNOT_COPY;
    const v = obj[k];
    // The canonical form writes null where JSON.stringify would leave a member out.
    const c = v === undefined || typeof v === 'function' || typeof v === 'symbol' ? null : canonicalCopy(v);
    if (c === CANNOT_COPY) return CANNOT_COPY;
    out[k] = c;
  }
  return out;
}

/** Keys sorted by hand below this many (insertion), by Array.prototype.sort from it on. */
const FEW_KEYS = 16;

/**
 * Object.keys(obj) in the order Array.prototype.sort() gives strings (by UTF-16 code units, as
 * `<` compares them). The few keys of an event are sorted by insertion: the default sort, which
 * converts and compares through a generic path, took about as long as the rest of the id's
 * canonical form on a single event.
 */
function sortedKeys(obj: object): string[] {
  const keys = Object.keys(obj);
  if (keys.length >= FEW_KEYS) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i] as string;
    let j = i - 1;
    for (; j >= 0 && (keys[j] as string) > key; j--) keys[j + 1] = keys[j] as string;
    keys[j + 1] = key;
  }
  return keys;
}

/** True when JSON.stringify(value) already is the canonical form: plain objects with sorted keys, nothing it leaves out. */
function stringifiesCanonically(value: object): boolean {
  if (Array.isArray(value)) {
    // An element JSON.stringify cannot write (undefined, a function) is null in both forms.
    for (const v of value as unknown[])
      if (typeof v === 'object' && v !== null && !stringifiesCanonically(v)) return false;
    return true;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  let previous: string | undefined;
  const obj = value as Record<string, unknown>;
  for (const k in obj) {
    // Sorted as Array.prototype.sort() sorts strings (by UTF-16 code units); index-like keys,
    // which objects list first, fail this unless they happen to be in that order too.
    if (previous !== undefined && !(previous < k)) return false;
    previous = k;
    const v = obj[k];
    if (typeof v === 'object') {
      if (v !== null && !stringifiesCanonically(v)) return false;
    } else if (v === undefined || typeof v === 'function' || typeof v === 'symbol') return false;
  }
  return true;
}

/** The canonical form written out piece by piece (any value). */
export function canonicalJsonByHand(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJsonByHand).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = sortedKeys(obj);
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    if (i > 0) out += ',';
    out += `${JSON.stringify(k)}:${canonicalJsonByHand(obj[k])}`;
  }
  return `${out}}`;
}
