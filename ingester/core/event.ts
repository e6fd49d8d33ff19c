/**
 * Event validation and normalisation (the README's HTTP contract; docs/design.md §4). The JSON Schema checks shapes and
 * lengths; the code below turns severity names and epoch times into their canonical form.
 */
import { Ajv } from 'ajv';
import { asBatch, ErrorCollector, fieldErrors } from './batch.js';
import { eventId, type IdSource } from './event-id.js';
import type { FieldError } from './errors.js';

export const SEVERITY_NAMES = ['clear', 'indeterminate', 'warning', 'minor', 'major', 'critical'] as const;

/** Documented string fields and their length caps (characters). */
export const EVENT_STRING_FIELDS: Record<string, number> = {
  signature: 1024,
  source: 1024,
  source_id: 1024,
  external_id: 1024,
  agent_location: 1024,
  type: 256,
  manager: 1024,
  class: 256,
  description: 65536,
};

/** Unknown fields are kept, but not arbitrarily deep: JSON.stringify downstream recurses. */
export const MAX_CUSTOM_DEPTH = 32;

/** RFC 3339 date-time ("2026-11-22T20:43:01.316853583Z", "...+02:00"; also ISO 8601 "+0200" as PagerDuty writes it). */
const RFC3339 =
  '^\\s*[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:?[0-9]{2})\\s*$';

const caseInsensitive = (word: string): string => [...word].map((c) => `[${c}${c.toUpperCase()}]`).join('');

export const eventSchema = {
  type: 'object',
  required: ['source', 'severity'],
  properties: {
    ...Object.fromEntries(
      Object.entries(EVENT_STRING_FIELDS).map(([name, max]) => [name, { type: 'string', maxLength: max }]),
    ),
    source: { type: 'string', minLength: 1, maxLength: EVENT_STRING_FIELDS.source },
    // An integer 0..5, or a string: a digit 0..5 or a severity name. if/then/else rather than
    // anyOf: with allErrors, anyOf builds an error object for each branch that fails before the
    // one that holds, on every valid event (an if's failure builds none). One message per field
    // either way (FIELD_MESSAGES).
    severity: {
      if: { type: 'integer' },
      then: { minimum: 0, maximum: 5 },
      else: { type: 'string', pattern: `^\\s*([0-5]|${SEVERITY_NAMES.map(caseInsensitive).join('|')})\\s*$` },
    },
    // A positive number, or a string: epoch seconds or milliseconds, or an RFC 3339 date-time.
    agent_time: {
      if: { type: 'number' },
      then: { exclusiveMinimum: 0 },
      else: { type: 'string', pattern: `(?:^\\s*[0-9]{1,16}(\\.[0-9]{1,9})?\\s*$)|(?:${RFC3339})` },
    },
    custom_info: { type: 'object' },
  },
} as const;

const FIELD_MESSAGES: Record<string, string> = {
  severity: `must be an integer 0..5, a numeric string, or one of ${SEVERITY_NAMES.join(', ')} (any case)`,
  agent_time:
    'must be Unix epoch time in seconds or milliseconds (a positive number or numeric string), or an RFC 3339 date-time',
  custom_info: 'must be an object',
};

const ajv = new Ajv({ allErrors: true, strict: false });
const validateShape = ajv.compile(eventSchema);

const KNOWN_FIELDS = new Set([...Object.keys(EVENT_STRING_FIELDS), 'severity', 'agent_time', 'custom_info']);

export interface NormalisedEvent {
  id: string;
  integration: string;
  namespace: string;
  received_at: string;
  signature: string;
  source: string;
  severity: number;
  severity_name: (typeof SEVERITY_NAMES)[number];
  agent_time: string;
  source_id?: string;
  external_id?: string;
  agent_location?: string;
  type?: string;
  manager?: string;
  class?: string;
  description?: string;
  custom_info: Record<string, unknown>;
}

export interface EventContext {
  integration: string;
  namespace: string;
  receivedAtMs: number;
  /** From the Idempotency-Key header (event-id.ts); content-derived ids when absent. */
  idSource?: IdSource;
  /** Each item's JSON.stringify, when a mapping already made it (its content id reuses it). */
  itemTexts?: readonly string[];
}

/** Validates a whole request; throws a 400 listing every problem, or returns every event normalised. */
export function parseEvents(body: unknown, maxEvents: number, ctx: EventContext): NormalisedEvent[] {
  const items = asBatch(body, maxEvents, 'event');
  const collector = new ErrorCollector();
  const out: NormalisedEvent[] = [];
  // One receive time for the whole request, formatted once (also every event's default agent_time).
  const receivedAt = isoTime(ctx.receivedAtMs);
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as Record<string, unknown>;
    if (!validateShape(item)) {
      collector.add(fieldErrors(i, validateShape.errors, FIELD_MESSAGES));
      continue;
    }
    const result = normalise(item, i, ctx, receivedAt);
    if ('errors' in result) collector.add(result.errors);
    else if (collector.count === 0) out.push(result.event);
  }
  collector.throwIfAny('event', items.length);
  return out;
}

function normalise(
  raw: Record<string, unknown>,
  index: number,
  ctx: EventContext,
  receivedAt: string,
): { event: NormalisedEvent } | { errors: FieldError[] } {
  const agentTimeMs = raw.agent_time === undefined ? ctx.receivedAtMs : epochToMs(raw.agent_time as number | string);
  if (!Number.isFinite(agentTimeMs) || agentTimeMs > MAX_TIME_MS || agentTimeMs < 0) {
    return { errors: [{ index, field: 'agent_time', message: 'is out of range (before 1970 or after year 9999)' }] };
  }
  const custom = collectCustomInfo(raw);
  if (custom.tooDeep) {
    return { errors: [{ index, field: custom.tooDeep, message: `nests deeper than ${MAX_CUSTOM_DEPTH} levels` }] };
  }
  const severity = parseSeverity(raw.severity as number | string);
  const event: NormalisedEvent = {
    id: eventId(ctx.namespace, ctx.integration, ctx.idSource ?? CONTENT_IDS, index, raw, ctx.itemTexts?.[index]),
    integration: ctx.integration,
    namespace: ctx.namespace,
    received_at: receivedAt,
    signature: (raw.signature as string | undefined) ?? `${raw.source}:${raw.class ?? ''}:${raw.type ?? ''}`,
    source: raw.source as string,
    severity,
    severity_name: SEVERITY_NAMES[severity] as NormalisedEvent['severity_name'],
    agent_time: raw.agent_time === undefined ? receivedAt : new Date(agentTimeMs).toISOString(),
    custom_info: custom.info,
  };
  for (const field of OPTIONAL_STRINGS) {
    const value = raw[field];
    if (typeof value === 'string') event[field] = value;
  }
  return { event };
}

const CONTENT_IDS: IdSource = { kind: 'content' };

/**
 * The ISO 8601 form of a time in milliseconds, the last one remembered: requests received in the
 * same millisecond (several, under load) share their receive time, and formatting a Date cost
 * about a microsecond of each single-event request.
 */
function isoTime(ms: number): string {
  if (ms !== lastIsoMs) {
    lastIso = new Date(ms).toISOString();
    lastIsoMs = ms;
  }
  return lastIso;
}
let lastIsoMs = Number.NaN;
let lastIso = '';

const OPTIONAL_STRINGS = [
  'source_id',
  'external_id',
  'agent_location',
  'type',
  'manager',
  'class',
  'description',
] as const;

const MAX_TIME_MS = Date.UTC(9999, 11, 31);
/** Values this large as seconds would be past year 5000: they are milliseconds. */
const MILLISECONDS_THRESHOLD = 1e11;

export function epochToMs(value: number | string): number {
  if (typeof value === 'string' && value.includes('-')) return Date.parse(value.trim().toUpperCase());
  const n = typeof value === 'number' ? value : Number(value.trim());
  return n >= MILLISECONDS_THRESHOLD ? n : n * 1000;
}

export function parseSeverity(value: number | string): number {
  if (typeof value === 'number') return value;
  const trimmed = value.trim();
  const byName = SEVERITY_NAMES.indexOf(trimmed.toLowerCase() as (typeof SEVERITY_NAMES)[number]);
  return byName >= 0 ? byName : Number(trimmed);
}

/** Unknown fields go under custom_info (merged with a custom_info object the sender gave). */
function collectCustomInfo(raw: Record<string, unknown>): { info: Record<string, unknown>; tooDeep?: string } {
  // A null-prototype object: a key named __proto__ stays a plain key and cannot pollute anything.
  const info: Record<string, unknown> = { __proto__: null } as unknown as Record<string, unknown>;
  const given = raw.custom_info as Record<string, unknown> | undefined;
  if (given) for (const key of Object.keys(given)) info[key] = given[key];
  // for-in over a parsed body's own keys (JSON.parse gives plain objects): no array of keys per event.
  for (const key in raw) if (!KNOWN_FIELDS.has(key) && Object.hasOwn(raw, key)) info[key] = raw[key];
  for (const key in info) {
    if (depthExceeds(info[key], MAX_CUSTOM_DEPTH - 1))
      return { info, tooDeep: given && key in given ? `custom_info.${key}` : key };
  }
  return { info };
}

/**
 * Whether `value` nests objects and arrays `limit` levels deep or more below it. Recursive, but
 * never deeper than `limit` (32): a hostile body cannot overflow the stack here. Called for every
 * member of every event's custom_info, so it allocates nothing.
 */
function depthExceeds(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (limit <= 0) return true;
  if (Array.isArray(value)) {
    for (const child of value as unknown[]) if (depthExceeds(child, limit - 1)) return true;
    return false;
  }
  const obj = value as Record<string, unknown>;
  for (const key in obj) if (Object.hasOwn(obj, key) && depthExceeds(obj[key], limit - 1)) return true;
  return false;
}
