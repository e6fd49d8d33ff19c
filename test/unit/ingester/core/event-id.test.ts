import { canonicalJson, canonicalJsonByHand, eventId, idSourceOf } from '../../../../ingester/core/event-id.js';
import { IntakeError } from '../../../../ingester/core/errors.js';
import { parseEvents } from '../../../../ingester/core/event.js';
import { compileMapping } from '../../../../api/mapping/engine.js';
import { seededRandom } from '../../../support/seeded-random.js';

const ctx = { integration: 'demo', namespace: 'default', receivedAtMs: Date.UTC(2026, 10, 22) };

describe('event ids', () => {
  it('gives the same content the same id whatever the key order or the time received', () => {
    const a = parseEvents({ source: 's', severity: 2, x: { b: 1, a: 2 } }, 10, ctx)[0];
    const b = parseEvents({ x: { a: 2, b: 1 }, severity: 2, source: 's' }, 10, {
      ...ctx,
      receivedAtMs: ctx.receivedAtMs + 60_000,
    })[0];
    expect(a?.id).toBe(b?.id);
    expect(a?.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('gives different content, another integration or another namespace different ids', () => {
    const item = { source: 's', severity: 2 };
    const ids = new Set([
      eventId('default', 'demo', { kind: 'content' }, 0, item),
      eventId('default', 'demo', { kind: 'content' }, 0, { ...item, severity: 3 }),
      eventId('default', 'other', { kind: 'content' }, 0, item),
      eventId('team-b', 'demo', { kind: 'content' }, 0, item),
    ]);
    expect(ids.size).toBe(4);
  });

  it('derives ids from the Idempotency-Key and the index in the batch, not from the content', () => {
    const key = idSourceOf('order-42');
    const first = parseEvents(
      [
        { source: 'a', severity: 1 },
        { source: 'a', severity: 1 },
      ],
      10,
      { ...ctx, idSource: key },
    );
    const retry = parseEvents(
      [
        { source: 'changed', severity: 5 },
        { source: 'a', severity: 1 },
      ],
      10,
      { ...ctx, idSource: key },
    );
    expect(first[0]?.id).not.toBe(first[1]?.id);
    expect(retry.map((e) => e.id)).toEqual(first.map((e) => e.id));
    expect(eventId('default', 'demo', key, 0, {})).not.toBe(eventId('default', 'demo', idSourceOf('order-43'), 0, {}));
  });

  it.each([[''], [' '], ['a b'], ['x'.repeat(257)], [['k1', 'k2']], ['caf\u00e9']])(
    'refuses Idempotency-Key %j with a 400 naming the header',
    (value) => {
      let thrown: unknown;
      try {
        idSourceOf(value as string);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(IntakeError);
      expect((thrown as IntakeError).statusCode).toBe(400);
      expect((thrown as IntakeError).toBody().errors?.[0]?.field).toBe('Idempotency-Key');
    },
  );

  it('writes canonical JSON with keys sorted at every level', () => {
    expect(canonicalJson({ b: [{ d: 1, c: null }], a: 'x' })).toBe('{"a":"x","b":[{"c":null,"d":1}]}');
  });

  it.each([
    [
      'keys that look like array indices',
      '{"10":1,"9":2,"a":{"2":[1],"1":null}}',
      '{"10":1,"9":2,"a":{"1":null,"2":[1]}}',
    ],
    ['a __proto__ key', '{"b":1,"__proto__":{"y":1,"x":2}}', '{"__proto__":{"x":2,"y":1},"b":1}'],
    ['keys already sorted, nested', '{"a":{"b":[{"c":1,"d":"é"}]},"e":true}', '{"a":{"b":[{"c":1,"d":"é"}]},"e":true}'],
    // U+1F600 is the surrogate pair D83D DE00: before U+FF5A in UTF-16, after it by code point.
    ['keys sorted by UTF-16 code units', '{"é":1,"z":2,"Z":3,"😀":4,"ｚ":5}', '{"Z":3,"z":2,"é":1,"😀":4,"ｚ":5}'],
  ])('writes %s in canonical order', (_what, body, canonical) => {
    expect(canonicalJson(JSON.parse(body))).toBe(canonical);
  });

  it('writes null where a member is undefined, as the form written by hand does', () => {
    const value = { b: undefined, a: [undefined, { d: undefined, c: 1 }] };
    expect(canonicalJson(value)).toBe('{"a":[null,{"c":1,"d":null}],"b":null}');
    expect(canonicalJson(value)).toBe(canonicalJsonByHand(value));
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('agrees with the form written by hand on 2,000 generated values', () => {
    // A small deterministic generator (no dependency): objects in random key order, some sorted,
    // index-like and __proto__ keys, arrays, strings with escapes, numbers, nulls, undefined.
    const random = seededRandom(42);
    let byHand = 0;
    let reused = 0;
    const KEYS = ['a', 'b', 'z', 'A', '0', '1', '10', '9', '__proto__', 'é', 'key with "quotes"', 'source', 'labels'];
    const gen = (depth: number): unknown => {
      const r = random();
      if (depth > 3 || r < 0.3)
        return [null, 0, -1.5, 1e21, 'x', 'line\nbreak "q"', true, undefined][Math.floor(random() * 8)];
      if (r < 0.5) return Array.from({ length: Math.floor(random() * 4) }, () => gen(depth + 1));
      const keys = KEYS.filter(() => random() < 0.4);
      if (random() < 0.5) keys.sort();
      // Built by JSON.parse so that __proto__ is an own member, as in a parsed body.
      const obj = JSON.parse(`{${keys.map((k) => `${JSON.stringify(k)}:0`).join(',')}}`) as Record<string, unknown>;
      for (const k of keys) Object.defineProperty(obj, k, { value: gen(depth + 1), enumerable: true, writable: true });
      return obj;
    };
    for (let i = 0; i < 2000; i++) {
      const value = gen(0);
      const json = canonicalJsonByHand(value);
      expect(canonicalJson(value)).toBe(json);
      if (/"(?:[0-9]+|__proto__)":/.test(json)) byHand++;
      // Given the item's JSON.stringify (as a mapping measured it), the id is the same: the text
      // is used only when it already is the canonical form.
      const id = eventId('default', 'demo', { kind: 'content' }, 0, value);
      expect(eventId('default', 'demo', { kind: 'content' }, 0, value, JSON.stringify(value) ?? 'null')).toBe(id);
      if (JSON.stringify(value) === json) reused++;
    }
    // Both roads are taken.
    expect(reused).toBeGreaterThan(200);
    expect(reused).toBeLessThan(1800);
    // The generator does reach the keys that need the longer road.
    expect(byHand).toBeGreaterThan(200);
  });

  it("gives a native preset's events the ids they get without the mapping's texts", async () => {
    const startsAt = '2026-11-26T10:00:00Z';
    const body = {
      receiver: 'intake',
      groupKey: '{}:{alertname="HighCPU"}',
      alerts: [1, 2, 3].map((i) => ({
        status: i === 2 ? 'resolved' : 'firing',
        labels: { alertname: 'HighCPU', instance: `web-${i}`, severity: 'critical' },
        annotations: { summary: `CPU on web-${i}` },
        startsAt,
        endsAt: startsAt,
        fingerprint: `f${i}`,
      })),
    };
    const result = await compileMapping({ preset: 'alertmanager' }).evaluate(body);
    expect(result.texts).toHaveLength(3);
    const withTexts = parseEvents(result.items, 10, { ...ctx, itemTexts: result.texts });
    expect(withTexts.map((e) => e.id)).toEqual(parseEvents(result.items, 10, ctx).map((e) => e.id));
  });
});
