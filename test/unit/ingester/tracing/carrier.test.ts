import {
  boundedTracestate,
  carrierFrom,
  carrierHeaders,
  carrierOfText,
  carrierText,
  MAX_TRACESTATE_CHARS,
  parseTraceparent,
} from '../../../../ingester/tracing/carrier.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('parseTraceparent', () => {
  it('reads version 00 with its sampled flag', () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: false });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-03`)?.sampled).toBe(true);
  });

  it('reads a later version, ignoring the fields it adds', () => {
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-what-comes-next`)).toEqual({
      traceId: TRACE,
      spanId: SPAN,
      sampled: true,
    });
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with more fields', `00-${TRACE}-${SPAN}-01-extra`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['a newline inside', `00-${TRACE}-${SPAN}-01\n`],
    ['far too long', `01-${TRACE}-${SPAN}-01-${'a'.repeat(300)}`],
  ])('refuses %s', (_what, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });
});

describe('boundedTracestate', () => {
  it('passes a tracestate on as it is', () => {
    expect(boundedTracestate('congo=t61rcWkgMzE, rojo=00f067aa0ba902b7')).toBe(
      'congo=t61rcWkgMzE, rojo=00f067aa0ba902b7',
    );
  });

  it('drops one that is too long, has too many members or is not printable', () => {
    expect(boundedTracestate(`a=${'x'.repeat(MAX_TRACESTATE_CHARS)}`)).toBeUndefined();
    expect(boundedTracestate(Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(','))).toBeUndefined();
    expect(boundedTracestate(Array.from({ length: 32 }, (_, i) => `k${i}=v`).join(','))).toBeDefined();
    expect(boundedTracestate('a=b\r\nx-injected: 1')).toBeUndefined();
    expect(boundedTracestate('')).toBeUndefined();
  });
});

describe('carriers', () => {
  const traceparent = `00-${TRACE}-${SPAN}-01`;

  it('come from headers with a valid traceparent only; a repeated one is none', () => {
    const headers: Record<string, string | string[]> = { traceparent, tracestate: 'a=1' };
    expect(carrierFrom((n) => headers[n])).toEqual({ traceparent, tracestate: 'a=1' });
    expect(carrierFrom((n) => ({ traceparent })[n])).toEqual({ traceparent });
    expect(carrierFrom((n) => ({ traceparent: 'nonsense', tracestate: 'a=1' })[n])).toBeUndefined();
    expect(carrierFrom((n) => ({ traceparent: [traceparent, traceparent] })[n])).toBeUndefined();
  });

  it('become headers, and a stored text that reads back the same', () => {
    const c = { traceparent, tracestate: 'a=1, b=2' };
    expect(carrierHeaders(c)).toEqual({ traceparent, tracestate: 'a=1, b=2' });
    expect(carrierHeaders({ traceparent })).toEqual({ traceparent });
    expect(carrierOfText(carrierText(c))).toEqual(c);
    expect(carrierOfText(carrierText({ traceparent }))).toEqual({ traceparent });
    expect(carrierOfText(null)).toBeUndefined();
    expect(carrierOfText('garbage')).toBeUndefined();
  });
});
