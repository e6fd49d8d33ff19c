/**
 * What one tenant's expression can do to others in the same process, and the
 * bounds on what a mapping produces. The operator runs tenants' mapping tests through checkMapping
 * in its own process: the nagios checks below are exactly its path.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { BUILTIN_FUNCTIONS } from '../../../../api/mapping/builtins.js';
import {
  checkMapping,
  compileMapping,
  DEFAULT_MAPPING_LIMITS,
  MappingError,
  measureOutput,
} from '../../../../api/mapping/engine.js';

const nagiosChecked = () =>
  checkMapping({
    preset: 'nagios',
    tests: [
      {
        input: { notification_type: 'PROBLEM', host: 'web-9', service: 'HTTP', state: 'critical' },
        expect: { severity: 5, signature: 'nagios:web-9:HTTP' },
      },
    ],
  });

describe('built-in functions are read-only', () => {
  it('lists every function jsonata binds in its static frame', () => {
    const source = readFileSync(createRequire(import.meta.url).resolve('jsonata'), 'utf8');
    const bound = [...source.matchAll(/staticFrame\.bind\('(\w+)'/g)].map((m) => m[1]);
    expect(bound.length).toBeGreaterThan(60);
    expect([...BUILTIN_FUNCTIONS].sort()).toEqual([...bound, 'now', 'millis'].sort());
  });

  it.each([
    ['$ ~> |$uppercase|function($x){"OK"}|'],
    ['$ ~> |$lowercase|function($x){"clear"}|'],
    ['$ ~> |[$uppercase, $lowercase, $lookup]|{"implementation": 1}, ["signature"]|'],
    ['$ ~> |$now|function(){"1970"}|'],
  ])('%s fails, and changes no other mapping', async (hostile) => {
    const err = await compileMapping({ expression: hostile })
      .evaluate({ any: 1 })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(MappingError);
    expect(await nagiosChecked()).toBeUndefined();
    expect(
      (
        await compileMapping({
          expression: '[$lowercase("MAJOR"), $uppercase("web"), $lookup({"a": 1}, "a")]',
        }).evaluate({})
      ).items,
    ).toEqual(['major', 'WEB', 1]);
    expect((await compileMapping({ expression: '$now()' }).evaluate({})).items[0]).toMatch(/^20\d\d-/);
  });

  it('a transform of a copy the expression made itself still works', async () => {
    const out = await compileMapping({ expression: '$ ~> |alerts|{"seen": true}|' }).evaluate({ alerts: [{ a: 1 }] });
    expect(out.items).toEqual([{ alerts: [{ a: 1, seen: true }] }]);
  });
});

describe('V8 limits have their own codes', () => {
  it('a stack overflow is INTAKE_STACK_LIMIT, a string too long INTAKE_STRING_LIMIT', () => {
    expect(MappingError.from(new RangeError('Maximum call stack size exceeded')).code).toBe('INTAKE_STACK_LIMIT');
    expect(MappingError.from(new RangeError('Invalid string length')).code).toBe('INTAKE_STRING_LIMIT');
    expect(MappingError.from(new RangeError('Maximum call stack size exceeded')).guardrail).toBe(true);
  });
});

describe('the output of a mapping is bounded', () => {
  const limits = { ...DEFAULT_MAPPING_LIMITS, maxOutputBytes: 10_000, maxEvents: 5 };

  it('in events (mapping.maxEvents)', () => {
    expect(() => measureOutput([1, 2, 3, 4, 5, 6], limits)).toThrow(
      expect.objectContaining({ code: 'INTAKE_EVENT_LIMIT', message: expect.stringContaining('mapping.maxEvents') }),
    );
  });

  it('in bytes (mapping.maxOutputBytes), stopping at the first event past it', () => {
    const big = 'k'.repeat(4000);
    let serialised = 0;
    const counting = { toJSON: () => (serialised++, big) };
    expect(() => measureOutput([counting, counting, counting, counting, counting], limits)).toThrow(
      expect.objectContaining({
        code: 'INTAKE_OUTPUT_LIMIT',
        message: expect.stringMatching(/10000 bytes \(mapping\.maxOutputBytes\) at event 3 of 5/),
      }),
    );
    expect(serialised).toBe(3);
  });

  it('counts UTF-8 bytes of the JSON, and returns each event as JSON', () => {
    const { bytes, parts } = measureOutput([{ a: 'é' }, 1], limits);
    expect(parts).toEqual(['{"a":"é"}', '1']);
    expect(bytes).toBe(Buffer.byteLength('[{"a":"é"},1]'));
  });

  it('applies to presets too (the alertmanager preset copies groupKey into every event)', async () => {
    const body = {
      receiver: 'r',
      groupKey: 'g'.repeat(3000),
      alerts: Array.from({ length: 5 }, (_, i) => ({ status: 'firing', labels: { alertname: `a${i}` } })),
    };
    const err = await compileMapping({ preset: 'alertmanager' }, { ...limits, maxEvents: 100 })
      .evaluate(body)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toMatchObject({ code: 'INTAKE_OUTPUT_LIMIT' });
    const ok = await compileMapping(
      { preset: 'alertmanager' },
      { ...limits, maxEvents: 100, maxOutputBytes: 1 << 20 },
    ).evaluate(body);
    expect(ok.items).toHaveLength(5);
    expect(ok.outputBytes).toBe(Buffer.byteLength(JSON.stringify(ok.items)));
    expect(ok.cpuMs).toBeGreaterThanOrEqual(0);
  });
});
