/** Shared rules for request bodies that hold one item or an array of items. */
import type { ErrorObject } from 'ajv';
import { invalidBatch, type FieldError } from './errors.js';

/** At most this many field errors are reported for one request; the message says how many exist. */
export const MAX_REPORTED_ERRORS = 100;

/** Normalises a body to a non-empty array within `max` items, or throws a 400 naming the problem. */
export function asBatch(body: unknown, max: number, noun: string): unknown[] {
  if (Array.isArray(body)) {
    if (body.length === 0)
      throw invalidBatch(noun, [{ field: '', message: `the array is empty; send 1 to ${max} ${noun}s` }], 0);
    if (body.length > max) {
      throw invalidBatch(
        noun,
        [{ field: '', message: `the array holds ${body.length} ${noun}s; at most ${max} are accepted per request` }],
        body.length,
      );
    }
    return body;
  }
  if (body === null || typeof body !== 'object') {
    throw invalidBatch(
      noun,
      [{ field: '', message: `the body must be a JSON object (one ${noun}) or an array of them` }],
      1,
    );
  }
  return [body];
}

/** Turns ajv errors into field errors with dotted paths ("tags.env", "severity"). */
export function fieldErrors(
  index: number,
  errors: readonly ErrorObject[] | null | undefined,
  messages: Record<string, string> = {},
): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  for (const e of errors ?? []) {
    let field = e.instancePath.slice(1).replace(/\//g, '.');
    if (e.keyword === 'required')
      field = field ? `${field}.${e.params.missingProperty}` : String(e.params.missingProperty);
    if (e.keyword === 'additionalProperties')
      field = field ? `${field}.${e.params.additionalProperty}` : String(e.params.additionalProperty);
    const top = field.split('.')[0] ?? field;
    // anyOf produces one error per branch; one clear message per field is more useful.
    if (seen.has(field)) continue;
    seen.add(field);
    const message = e.keyword === 'required' ? 'is required' : (messages[top] ?? describe(e));
    out.push({ index, field, message });
  }
  return out;
}

function describe(e: ErrorObject): string {
  switch (e.keyword) {
    case 'additionalProperties':
      return 'is not a known field';
    case 'maxLength':
      return `must be at most ${e.params.limit} characters`;
    case 'minLength':
      return 'must not be empty';
    default:
      return e.message ?? 'is invalid';
  }
}

/** Collects per-item errors, stopping the report (not the check) past MAX_REPORTED_ERRORS. */
export class ErrorCollector {
  readonly errors: FieldError[] = [];
  count = 0;
  add(list: FieldError[]): void {
    this.count += list.length;
    for (const e of list) if (this.errors.length < MAX_REPORTED_ERRORS) this.errors.push(e);
  }
  throwIfAny(noun: string, total: number): void {
    if (this.count > 0) throw invalidBatch(noun, this.errors, total, this.count);
  }
}
