import { jsonDepthExceeds, parseJsonBody } from '../../../../ingester/http/body.js';
import { IntakeError } from '../../../../ingester/core/errors.js';

const nested = (depth: number, inner = '1'): string => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;

describe('JSON nesting (limits.maxJsonDepth)', () => {
  it('counts objects and arrays, not brackets inside strings', () => {
    expect(jsonDepthExceeds(Buffer.from(nested(64)), 64)).toBe(false);
    expect(jsonDepthExceeds(Buffer.from(nested(65)), 64)).toBe(true);
    expect(jsonDepthExceeds(Buffer.from(`{"a":"${'['.repeat(200)}\\"${'{'.repeat(200)}"}`), 64)).toBe(false);
    expect(jsonDepthExceeds(Buffer.from(`[{"a":[{"b":${nested(61)}}]}]`), 64)).toBe(true);
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
