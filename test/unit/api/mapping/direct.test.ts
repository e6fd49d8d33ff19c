/**
 * api/mapping/direct.ts: the simplest expressions evaluated without JSONata's interpreter must give
 * exactly JSONata's events, or leave the payload to JSONata. Each case runs both ways.
 */
import {
  compileCached,
  DEFAULT_MAPPING_LIMITS,
  evaluateHere,
  type MappingLimits,
} from '../../../../api/mapping/engine.js';
import { directMapping } from '../../../../api/mapping/direct.js';

const limits: MappingLimits = { ...DEFAULT_MAPPING_LIMITS };

/** JSONata's events as JSON text, or its error code. */
async function viaJsonata(source: string, body: unknown, l = limits): Promise<string> {
  try {
    return JSON.stringify((await evaluateHere(compileCached(source, l), body, l)).items);
  } catch (err) {
    return `error ${(err as { code?: string }).code}`;
  }
}

const direct = (source: string, l = limits) => directMapping(compileCached(source, l), l);

const BENCH = '{"source": host, "severity": level, "class": "cpu", "type": "high", "description": msg}';

describe('direct evaluation of the simplest expressions', () => {
  const same: Array<[string, unknown]> = [
    [BENCH, { host: 'web-1', level: 'critical', msg: 'CPU above 95%' }],
    [BENCH, { host: 'web-1' }],
    [BENCH, {}],
    [BENCH, { host: null, level: 0, msg: false }],
    [BENCH, { host: { name: 'web-1', tags: ['a', 'b'] }, level: 'x', msg: 'y' }],
    [BENCH, { host: 'é "quoted"\n', level: '\u2028', msg: '💥' }],
    ['{"a": x.y.z, "b": x.y}', { x: { y: { z: 1 } } }],
    ['{"a": x.y.z}', { x: { y: 'not an object' } }],
    ['{"a": x.y.z}', { x: null }],
    ['{"a": x.y.z}', { x: 5 }],
    ['{"n": 1.5, "m": -2, "t": true, "f": false, "z": null, "s": "text"}', { anything: 1 }],
    ['{"outer": {"inner": host, "k": "v"}, "empty": {"none": missing}}', { host: 'h' }],
    ['{"2": a, "1": b, "x": c, "0": d}', { a: 1, b: 2, c: 3, d: 4 }],
    ['{"__proto__": a, "b": b}', { a: { polluted: true }, b: 2 }],
    ['{"a": constructor, "b": toString, "c": hasOwnProperty}', {}],
    ['{"a": `with space`, "b": `a.b`}', { 'with space': 1, 'a.b': 2 }],
    ['{"a": __proto__}', JSON.parse('{"__proto__": {"x": 1}}')],
  ];
  it.each(same)('%s on %j: the events JSONata gives', async (source, body) => {
    const fn = direct(source);
    expect(fn).toBeDefined();
    const items = fn?.(body);
    expect(items).toBeDefined();
    expect(JSON.stringify(items)).toBe(await viaJsonata(source, body));
    // Without a prototype, as JSONata's objects.
    expect(Object.getPrototypeOf(items?.[0])).toBeNull();
  });

  const handedBack: Array<[string, unknown, string]> = [
    [BENCH, [{ host: 'a' }, { host: 'b' }], 'a body that is an array'],
    [BENCH, 'a string', 'a body that is not an object'],
    [BENCH, { host: ['web-1'], level: 'x' }, 'an array value (a singleton JSONata unwraps)'],
    [BENCH, { host: [], level: 'x' }, 'an empty array value'],
    ['{"a": x.y}', { x: [{ y: 1 }, { y: 2 }] }, 'an array on the way (JSONata maps over it)'],
  ];
  it.each(handedBack)('%s on %j: left to JSONata (%s)', async (source, body) => {
    const fn = direct(source);
    expect(fn).toBeDefined();
    expect(fn?.(body)).toBeUndefined();
    // And JSONata still answers it (whatever it answers).
    expect(await viaJsonata(source, body)).not.toBe('');
  });

  it('leaves a string past maxStringLength to JSONata, which refuses it', async () => {
    const short: MappingLimits = { ...limits, maxStringLength: 4 };
    const fn = direct('{"a": s}', short);
    expect(fn?.({ s: 'abcd' })).toEqual([{ a: 'abcd' }]);
    expect(fn?.({ s: 'abcde' })).toBeUndefined();
    // JSONata checks what each node gives, not the strings inside an object a path copies.
    expect(JSON.stringify(fn?.({ s: { t: 'abcde' } }))).toBe(
      await viaJsonata('{"a": s}', { s: { t: 'abcde' } }, short),
    );
    expect(direct('{"a": s.t}', short)?.({ s: 'abcde' })).toBeUndefined();
    expect(await viaJsonata('{"a": s}', { s: 'abcde' }, short)).toBe('error INTAKE_STRING_LIMIT');
    // A literal past it: the expression is not direct at all.
    expect(direct('{"a": "abcdef"}', short)).toBeUndefined();
  });

  it.each([
    ['host', 'a path alone'],
    ['[{"a": host}]', 'an array constructor'],
    ['{"a": host[0]}', 'a predicate'],
    ['{"a": $.host}', 'a variable'],
    ['{"a": host & "!"}', 'an operator'],
    ['{"a": $uppercase(host)}', 'a function'],
    ['{"a": host ? 1 : 2}', 'a condition'],
    ['{"a": *}', 'a wildcard'],
    ['{"a": 1, "a": 2}', 'a key given twice (D1009)'],
    ['{"_jsonata_lambda": 1}', 'a key JSONata keeps for itself (D1013)'],
    ['{"a" & "b": 1}', 'a key that is not a literal'],
    ['{"a": host}.a', 'a path after the object'],
    ['items{"a": host}', 'a grouping'],
  ])('%s is not direct (%s)', (source) => {
    expect(direct(source)).toBeUndefined();
  });

  it('is not direct under a depth limit JSONata could reach', () => {
    expect(direct(BENCH, { ...limits, maxDepth: 3 })).toBeUndefined();
  });
});
