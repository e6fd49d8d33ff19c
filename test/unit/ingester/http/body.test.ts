import { jsonDepthExceeds, parseJsonBody } from '../../../../ingester/http/body.js';
import { IntakeError } from '../../../../ingester/core/errors.js';
import { jsonSyntaxError } from '../../../../ingester/http/json-syntax.js';
import { seededRandom } from '../../../support/seeded-random.js';

const nested = (depth: number, inner = '1'): string => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;

describe('JSON nesting (limits.maxJsonDepth)', () => {
  it('counts objects and arrays, not brackets inside strings', () => {
    expect(jsonDepthExceeds(Buffer.from(nested(64)), 64)).toBe(false);
    expect(jsonDepthExceeds(Buffer.from(nested(65)), 64)).toBe(true);
    expect(jsonDepthExceeds(Buffer.from(`{"a":"${'['.repeat(200)}\\"${'{'.repeat(200)}"}`), 64)).toBe(false);
    expect(jsonDepthExceeds(Buffer.from(`[{"a":[{"b":${nested(61)}}]}]`), 64)).toBe(true);
  });

  it('agrees with a byte-by-byte scan on 3,000 generated texts, escapes and unterminated strings included', () => {
    // The scan as first written: every byte, a backslash inside a string skips the next one.
    const byteByByte = (raw: Uint8Array, maxDepth: number): boolean => {
      let depth = 0;
      let inString = false;
      for (let i = 0; i < raw.length; i++) {
        const c = raw[i] as number;
        if (inString) {
          if (c === 0x5c) i++;
          else if (c === 0x22) inString = false;
        } else if (c === 0x22) inString = true;
        else if (c === 0x7b || c === 0x5b) {
          if (++depth > maxDepth) return true;
        } else if (c === 0x7d || c === 0x5d) depth--;
      }
      return false;
    };
    const random = seededRandom(7);
    const PIECES = ['[', ']', '{', '}', '"', '\\', '\\\\', '\\"', 'a', ':', ',', 'é', '1'];
    let deep = 0;
    for (let n = 0; n < 3000; n++) {
      const text = Array.from(
        { length: 1 + Math.floor(random() * 40) },
        () => PIECES[Math.floor(random() * PIECES.length)],
      ).join('');
      const raw = Buffer.from(text);
      const expected = byteByByte(raw, 3);
      if (expected) deep++;
      expect([text, jsonDepthExceeds(raw, 3)]).toEqual([text, expected]);
    }
    expect(deep).toBeGreaterThan(100);
  });

  it('a body nested deeper is a 400 JSON_TOO_DEEP naming the setting, before it is parsed', () => {
    let err: unknown;
    try {
      parseJsonBody('application/json', Buffer.from(`{"host":"x","deep":${nested(300_000)}}`), 64);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(IntakeError);
    expect(err).toMatchObject({
      statusCode: 400,
      code: 'JSON_TOO_DEEP',
      message: expect.stringContaining('limits.maxJsonDepth'),
    });
    expect(parseJsonBody('application/json', Buffer.from(`{"deep":${nested(60)}}`), 64)).toHaveProperty('deep');
  });
});

describe('a body that is not JSON', () => {
  const refusal = (body: string): IntakeError => {
    try {
      parseJsonBody('application/json', Buffer.from(body));
    } catch (err) {
      return err as IntakeError;
    }
    throw new Error('parsed');
  };

  it.each([
    ['password=hunter2', 'hunter2', 0],
    ['{"user":"admin","password":hunter2}', 'hunter2', 27],
    [`${'x'.repeat(40)}password=hunter2${'y'.repeat(40)}`, 'hunter2', 0],
    ['{"a":tru} hunter2', 'hunter2', 8],
    ['[1,] hunter2', 'hunter2', 3],
    ['{"secret":"hunter2"} {', 'hunter2', 21],
  ])('never quotes the body: %j', (body, marker, position) => {
    const err = refusal(body);
    expect(err).toMatchObject({ statusCode: 400, code: 'INVALID_JSON' });
    expect(JSON.stringify(err.toBody())).not.toContain(marker);
    expect(err.message).toContain(`at position ${position} (line 1, column ${position + 1})`);
  });

  it('says what is wrong, and where, in lines and columns', () => {
    expect(refusal('{"source": ').message).toBe(
      'the body is not valid JSON: the body ends too early at position 11 (line 1, column 12)',
    );
    expect(refusal('{\n  "a": "b\nc"\n}').message).toBe(
      'the body is not valid JSON: a control character (such as a line break) inside a string; escape it at position 11 (line 2, column 10)',
    );
    expect(refusal("{'source':'a'}").message).toMatch(/expected a property name in double quotes at position 1 /);
    expect(refusal('{"a":1} x').message).toMatch(/more after the JSON value .* at position 8 /);
    expect(refusal('{"a":"\\q"}').message).toMatch(/an invalid escape sequence in a string at position 7 /);
    expect(refusal('[1e]').message).toMatch(/expected a digit in the number's exponent at position 3 /);
    expect(refusal('{"__proto__":{"admin":true}}').message).toMatch(/forbidden key/);
    expect(refusal('prototype constructor').message).toMatch(/expected a JSON value .* at position 0 /);
  });

  it('finds an error exactly where JSON.parse refuses a text, at the position V8 names (5,000 texts mutated from valid JSON)', () => {
    const valid = JSON.stringify({
      source: 'web-01',
      severity: -2.5e-3,
      tags: ['a', 'b\u00e9\n', { deep: [true, false, null, 0, 10, 1.5e10] }],
      text: 'quote " backslash \\ unicode \u2603 \ud83d\ude00',
    });
    const alphabet = [
      '{',
      '}',
      '[',
      ']',
      '"',
      ',',
      ':',
      '\\',
      'e',
      '-',
      '+',
      '.',
      '0',
      '1',
      ' ',
      '\n',
      't',
      'u',
      '\u0001',
    ];
    let seed = 42;
    const random = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    let refused = 0;
    for (let k = 0; k < 5000; k++) {
      let text = valid;
      for (let m = 0, edits = 1 + random(3); m < edits; m++) {
        const at = random(text.length + 1);
        const c = alphabet[random(alphabet.length)] as string;
        const op = random(3);
        text = text.slice(0, at) + (op === 0 ? '' : c) + text.slice(op === 1 ? at : at + 1);
      }
      let v8: string | undefined;
      try {
        JSON.parse(text);
      } catch (err) {
        v8 = (err as Error).message;
        refused++;
      }
      const found = jsonSyntaxError(text);
      expect({ text, found: found !== undefined }).toEqual({ text, found: v8 !== undefined });
      // Where V8 names a position, it is the same one.
      const v8Position = /at position (\d+)/.exec(v8 ?? '')?.[1];
      if (v8Position !== undefined) expect({ text, at: found?.position }).toEqual({ text, at: Number(v8Position) });
    }
    expect(refused).toBeGreaterThan(2500);
  });
});
