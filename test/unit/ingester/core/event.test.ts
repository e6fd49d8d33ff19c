import { IntakeError } from '../../../../ingester/core/errors.js';
import { parseEvents } from '../../../../ingester/core/event.js';

const ctx = { integration: 'demo', namespace: 'default', receivedAtMs: Date.UTC(2026, 0, 1) };
const parse = (body: unknown, max = 1000) => parseEvents(body, max, ctx);
function errorsOf(body: unknown, max = 1000) {
  try {
    parse(body, max);
  } catch (err) {
    return (err as IntakeError).fieldErrors;
  }
  throw new Error('expected a validation error');
}

describe('parseEvents', () => {
  it.each([
    [0, 0],
    [5, 5],
    ['3', 3],
    [' 4 ', 4],
    ['clear', 0],
    ['Indeterminate', 1],
    ['WARNING', 2],
    ['minor', 3],
    ['Major', 4],
    ['critical', 5],
  ])('reads severity %p as %i', (severity, expected) => {
    expect(parse({ source: 's', severity })[0]?.severity).toBe(expected);
  });

  it.each([[6], [-1], [2.5], ['6'], ['severe'], [null], [true], [[1]]])('rejects severity %p', (severity) => {
    expect(errorsOf({ source: 's', severity })).toEqual([
      { index: 0, field: 'severity', message: expect.stringMatching(/0\.\.5/) },
    ]);
  });

  it('derives the signature from source:class:type when absent, keeps it when given', () => {
    expect(parse({ source: 's', severity: 1, class: 'c', type: 't' })[0]?.signature).toBe('s:c:t');
    expect(parse({ source: 's', severity: 1, signature: 'x' })[0]?.signature).toBe('x');
  });

  it('reads agent_time as epoch seconds or milliseconds, number or string; defaults to the receive time', () => {
    expect(parse({ source: 's', severity: 1, agent_time: 1767225600 })[0]?.agent_time).toBe('2026-01-01T00:00:00.000Z');
    expect(parse({ source: 's', severity: 1, agent_time: '1767225600000' })[0]?.agent_time).toBe(
      '2026-01-01T00:00:00.000Z',
    );
    expect(parse({ source: 's', severity: 1 })[0]?.agent_time).toBe('2026-01-01T00:00:00.000Z');
  });

  it.each([['yesterday'], [-5], [0], ['1e9'], [{}]])('rejects agent_time %p', (agent_time) => {
    expect(errorsOf({ source: 's', severity: 1, agent_time })?.[0]?.field).toBe('agent_time');
  });

  it('keeps unknown fields under custom_info, merged with a given custom_info', () => {
    const [e] = parse({ source: 's', severity: 1, region: 'eu', custom_info: { team: 'x' } });
    expect(e?.custom_info).toEqual({ team: 'x', region: 'eu' });
  });

  it('refuses unknown fields nested deeper than 32 levels', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 40; i++) deep = { d: deep };
    expect(errorsOf({ source: 's', severity: 1, extra: deep })?.[0]).toMatchObject({
      field: 'extra',
      message: expect.stringMatching(/deeper/),
    });
  });

  it('keeps an unknown field of 31 nested objects or arrays, and refuses 32', () => {
    const nest = (levels: number, wrap: (v: unknown) => unknown): unknown => {
      let v: unknown = 'leaf';
      for (let i = 0; i < levels; i++) v = wrap(v);
      return v;
    };
    for (const wrap of [(v: unknown) => ({ d: v }), (v: unknown) => [1, v]]) {
      expect(parse({ source: 's', severity: 1, extra: nest(31, wrap) })[0]?.custom_info.extra).toEqual(nest(31, wrap));
      expect(errorsOf({ source: 's', severity: 1, extra: nest(32, wrap) })?.[0]).toMatchObject({ field: 'extra' });
      expect(errorsOf({ source: 's', severity: 1, custom_info: { x: nest(32, wrap) } })?.[0]).toMatchObject({
        field: 'custom_info.x',
      });
    }
  });

  it('requires source and severity, and caps string lengths', () => {
    expect(errorsOf({})).toEqual([
      { index: 0, field: 'source', message: 'is required' },
      { index: 0, field: 'severity', message: 'is required' },
    ]);
    expect(errorsOf({ source: '', severity: 1 })?.[0]).toMatchObject({ field: 'source', message: 'must not be empty' });
    expect(errorsOf({ source: 's', severity: 1, type: 'x'.repeat(257) })?.[0]).toMatchObject({
      field: 'type',
      message: 'must be at most 256 characters',
    });
    expect(errorsOf({ source: 's', severity: 1, description: 5 })?.[0]).toMatchObject({
      field: 'description',
      message: 'must be string',
    });
  });

  it('bounds the batch: not empty, not past the limit, objects only', () => {
    expect(errorsOf([])?.[0]?.message).toMatch(/empty/);
    expect(errorsOf([{}, {}, {}], 2)?.[0]?.message).toMatch(/at most 2/);
    expect(errorsOf('text')?.[0]?.message).toMatch(/JSON object/);
    expect(errorsOf([1])?.[0]).toMatchObject({ index: 0, field: '', message: 'must be object' });
  });

  it('lists at most 100 problems but says how many there were', () => {
    let err: IntakeError | undefined;
    try {
      parse(Array.from({ length: 150 }, () => ({ source: 's' })));
    } catch (e) {
      err = e as IntakeError;
    }
    expect(err?.fieldErrors).toHaveLength(100);
    expect(err?.message).toMatch(/150 problems .*first 100/);
  });
});
