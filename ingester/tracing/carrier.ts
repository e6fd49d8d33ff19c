/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) as intake carries it: the `traceparent`
 * and `tracestate` a sender gave, or the ones of intake's own spans, checked and bounded here with
 * no OpenTelemetry code loaded, so the bus and the outbox can carry them whether or not this
 * replica exports traces.
 */

/** The two headers of a span's context, as sent on a request and kept with queued events. */
export interface TraceCarrier {
  readonly traceparent: string;
  readonly tracestate?: string;
}

/** A traceparent taken apart. */
export interface ParsedTraceparent {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

/**
 * A tracestate longer than this is dropped (the specification lets a vendor drop it whole, and
 * recommends propagating at least 512 characters): a sender cannot make every span, bus message
 * and outbox row of its events arbitrarily larger.
 */
export const MAX_TRACESTATE_CHARS = 512;
/** The specification's limit on a tracestate's list members. */
const MAX_TRACESTATE_MEMBERS = 32;

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
/** Printable ASCII only: the value goes into message headers and outgoing requests as it is. */
const PRINTABLE = /^[\x20-\x7e]*$/;

/**
 * The traceparent's parts, or undefined when it is not one (then the request starts a trace of
 * its own, as the specification says). Version 00 has exactly four fields; a later version may
 * add fields after them, which are ignored; version ff is invalid.
 */
export function parseTraceparent(value: string | undefined): ParsedTraceparent | undefined {
  if (value === undefined || value.length < 55 || value.length > 256) return undefined;
  const m = TRACEPARENT.exec(value);
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string?];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

/** The tracestate to pass on, or undefined: absent, too long, too many members or not printable. */
export function boundedTracestate(value: string | undefined): string | undefined {
  if (value === undefined || value.length === 0 || value.length > MAX_TRACESTATE_CHARS) return undefined;
  if (!PRINTABLE.test(value)) return undefined;
  let members = 1;
  for (let i = value.indexOf(','); i >= 0; i = value.indexOf(',', i + 1))
    if (++members > MAX_TRACESTATE_MEMBERS) return undefined;
  return value;
}

/** A header's single value (a repeated traceparent is no traceparent: the specification says to ignore it). */
function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? undefined : value;
}

/** The carrier of a message's or request's headers, when they hold a valid traceparent. */
export function carrierFrom(get: (name: string) => string | string[] | undefined): TraceCarrier | undefined {
  const traceparent = single(get('traceparent'));
  if (!parseTraceparent(traceparent)) return undefined;
  const tracestate = boundedTracestate(single(get('tracestate')));
  return tracestate === undefined
    ? { traceparent: traceparent as string }
    : { traceparent: traceparent as string, tracestate };
}

/** The headers to send for a carrier. */
export function carrierHeaders(c: TraceCarrier): Record<string, string> {
  return c.tracestate === undefined
    ? { traceparent: c.traceparent }
    : { traceparent: c.traceparent, tracestate: c.tracestate };
}

/** One text for a store's column: traceparent, then a newline and the tracestate (never in a header value). */
export function carrierText(c: TraceCarrier): string {
  return c.tracestate === undefined ? c.traceparent : `${c.traceparent}\n${c.tracestate}`;
}

/** carrierText read back; undefined for null, empty or a text that is not one. */
export function carrierOfText(text: string | null | undefined): TraceCarrier | undefined {
  if (!text) return undefined;
  const cut = text.indexOf('\n');
  const traceparent = cut < 0 ? text : text.slice(0, cut);
  return carrierFrom((name) => (name === 'traceparent' ? traceparent : cut < 0 ? undefined : text.slice(cut + 1)));
}
