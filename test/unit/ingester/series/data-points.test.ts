import { IntakeError } from '../../../../ingester/core/errors.js';
import { parseDataPoints } from '../../../../ingester/series/data-points.js';

const ok = { metric: 'm', data: 1, source: 's' };
function errorsOf(body: unknown) {
  try {
    parseDataPoints(body, 10000);
  } catch (err) {
    return (err as IntakeError).fieldErrors;
  }
  throw new Error('expected a validation error');
}

describe('parseDataPoints', () => {
  it.each([
    [1.5, 1.5],
    ['42', 42],
    [' -3e2 ', -300],
    ['.5', 0.5],
  ])('reads data %p as %p', (data, value) => {
    expect(parseDataPoints({ ...ok, data }, 1)[0]?.value).toBe(value);
  });

  it.each([['NaN'], ['Infinity'], ['0x10'], [''], [null], [true], ['1e999']])('rejects data %p', (data) => {
    expect(errorsOf({ ...ok, data })?.[0]?.field).toBe('data');
  });

  it('names a field by its path, cut to 128 characters, and never quotes a value', () => {
    const key = `password=hunter2${'k'.repeat(10_000)}`;
    const errors = errorsOf([
      { ...ok, [key]: 'x' },
      { ...ok, tags: { [key]: { v: 'secret-value' } } },
    ]);
    // The tag name is too long (field tags) and its value is not a tag value (field tags.<name>).
    expect(errors?.map((e) => [e.index, e.field.length, e.field.endsWith('…')])).toEqual([
      [0, 128, true],
      [1, 4, false],
      [1, 128, true],
    ]);
    expect(errors?.[0]?.field.startsWith('password=hunter2k')).toBe(true);
    expect(JSON.stringify(errors)).not.toContain('secret-value');
  });

  it('caps the label text of one point, naming the limit', () => {
    const tags = { a: 'x'.repeat(1000), b: 'y'.repeat(1000) };
    expect(errorsOf({ ...ok, tags: { ...tags, c: 'z'.repeat(100) } })?.[0]).toMatchObject({
      field: 'tags',
      message: expect.stringMatching(/total 2105 characters; the limit is 2048/),
    });
    expect(parseDataPoints({ ...ok, tags }, 1)).toHaveLength(1);
    expect(parseDataPoints({ ...ok, tags: { a: 'x'.repeat(1000) } }, 1, { maxLabelChars: 1010 })).toHaveLength(1);
  });

  it.each([[Infinity], ['9999999999999999'], [Date.now() / 1000 + 3600]])(
    'refuses time %p: not finite or more than 5 minutes ahead',
    (time) => {
      expect(errorsOf({ ...ok, time })?.[0]?.field).toBe('time');
    },
  );

  it('accepts time up to 5 minutes ahead', () => {
    expect(parseDataPoints({ ...ok, time: Date.now() / 1000 + 240 }, 1)).toHaveLength(1);
  });

  it('stringifies tag values and reads time', () => {
    const [p] = parseDataPoints({ ...ok, tags: { n: 1, b: true, s: 'x' }, time: 1767225600 }, 1);
    expect(p?.tags).toEqual({ n: '1', b: 'true', s: 'x' });
    expect(p?.timeMs).toBe(1767225600000);
  });

  it.each([
    ['utc_offset', 'UTC+1'],
    ['utc_offset', 'GMT+25:00'],
    ['tags', { a: { nested: 1 } }],
    ['tags', 'env=prod'],
    ['metric', ''],
    ['metric', 'm'.repeat(201)],
    ['source', 3],
    ['unknown_field', 'x'],
  ])('rejects %s = %p', (field, value) => {
    expect(errorsOf({ ...ok, [field]: value })?.[0]?.field).toMatch(new RegExp(`^${field}`));
  });

  it('accepts a valid utc_offset', () => {
    expect(parseDataPoints({ ...ok, utc_offset: 'GMT-05:30' }, 1)).toHaveLength(1);
  });

  it('rejects more than 32 tags', () => {
    const tags = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`t${i}`, 'v']));
    expect(errorsOf({ ...ok, tags })?.[0]?.field).toBe('tags');
  });
});
