import { canonicalJson, eventId, idSourceOf } from '../../../../ingester/core/event-id.js';
import { IntakeError } from '../../../../ingester/core/errors.js';
import { parseEvents } from '../../../../ingester/core/event.js';

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
});
