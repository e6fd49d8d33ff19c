import {
  checkMapping,
  compileMapping,
  DEFAULT_MAPPING_LIMITS,
  MappingError,
  runMappingTests,
} from '../../../../api/mapping/engine.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { PRESET_NAMES } from '../../../../api/mapping/presets.js';
import { routeSchema, validateRoute } from '../../../../api/route.js';
import { ROOT } from '../../../support/paths.js';

const limits = { ...DEFAULT_MAPPING_LIMITS, timeoutMs: 300 };
const failure = async (expression: string): Promise<MappingError> => {
  try {
    await compileMapping({ expression }, limits).evaluate({});
  } catch (err) {
    return err as MappingError;
  }
  throw new Error('the expression did not fail');
};

describe('compileMapping', () => {
  it('reports a syntax error with its JSONata code and position', () => {
    expect(() => compileMapping({ expression: '{"x": foo' })).toThrow(
      expect.objectContaining({ code: 'S0203', position: 9 }),
    );
  });

  it('refuses an unknown preset, naming the known ones', () => {
    expect(() => compileMapping({ preset: 'nope' })).toThrow(/unknown preset "nope"; known: alertmanager/);
  });

  it('always returns an array, one event or many', async () => {
    expect((await compileMapping({ expression: '{"source": a}' }).evaluate({ a: 'x' })).items).toEqual([
      { source: 'x' },
    ]);
    expect((await compileMapping({ expression: 'items.{"source": $}' }).evaluate({ items: ['a', 'b'] })).items).toEqual(
      [{ source: 'a' }, { source: 'b' }],
    );
    expect((await compileMapping({ expression: 'nothing' }).evaluate({})).items).toEqual([]);
  });
});

describe('evaluation errors', () => {
  const failing = async (expression: string, payload: unknown): Promise<MappingError> => {
    try {
      await compileMapping({ expression }, limits).evaluate(payload);
    } catch (err) {
      return MappingError.from(err);
    }
    throw new Error('the expression did not fail');
  };

  it.each([
    ['$number(password)', { password: 'hunter2' }, 'D3030', 'Unable to cast value to a number: (a string)'],
    ['password < 1', { password: 'hunter2' }, 'T2009', 'The values (a string) and 1 either side of operator "<"'],
    ['$toMillis(secret.at)', { secret: { at: 'hunter2' } }, 'D3110', 'ISO 8601 formatted timestamp. Given (a string)'],
    ['{ $: 1 }', { password: { hunter2: 1 } }, 'T1003', 'must evaluate to a string; got: (an object or array)'],
  ])('never quote a value of the payload: %s', async (expression, payload, code, text) => {
    const err = await failing(expression, payload);
    expect(err.code).toBe(code);
    expect(err.describe()).toContain(text);
    expect(err.describe()).not.toContain('hunter2');
  });

  it("keep a compile error's text, which quotes the expression", () => {
    expect(() => compileMapping({ expression: '{"x": foo' })).toThrow(/Expected "}" before end of expression/);
  });
});

describe('guardrails', () => {
  it('stops infinite recursion at the time limit (D1012)', async () => {
    const err = await failure('($f := function($n){$f($n+1)}; $f(0))');
    expect(err.code).toBe('D1012');
    expect(err.guardrail).toBe(true);
  });

  it('reports a guardrail hit inside $eval as the guardrail (D1012, D2014), not as an error of $eval (D3121)', async () => {
    const runaway = await failure('$eval("($f := function($n){$f($n+1)}; $f(0))")');
    expect(runaway.code).toBe('D1012');
    expect(runaway.guardrail).toBe(true);
    // $eval within $eval: wrapped twice.
    expect((await failure('$eval("$eval(\\"$count([1..1e9])\\")")')).code).toBe('D2014');
  });

  it('keeps D3121 for an ordinary error inside $eval, saying what it was without quoting the payload', async () => {
    let err: MappingError | undefined;
    try {
      await compileMapping({ expression: '$eval("$number(password)")' }, limits).evaluate({ password: 'hunter2' });
    } catch (e) {
      err = MappingError.from(e);
    }
    expect(err?.code).toBe('D3121');
    expect(err?.guardrail).toBe(false);
    expect(err?.describe()).toContain('D3030');
    expect(err?.describe()).not.toContain('hunter2');
  });

  it('stops deep non-tail recursion at the depth limit (D1011)', async () => {
    expect((await failure('($f := function($n){ $n = 0 ? 0 : 1 + $f($n-1)}; $f(100000))')).code).toBe('D1011');
  });

  it('refuses a huge range before allocating it (D2014, D2015)', async () => {
    expect((await failure('$count([1..1e9])')).code).toBe('D2014');
    expect((await failure('$count([1..5000000])')).code).toBe('D2015');
  });

  it('stops string doubling at the string limit', async () => {
    const err = await failure('($f := function($s){$f($s & $s)}; $f("ab"))');
    expect(err.code).toBe('INTAKE_STRING_LIMIT');
    expect(err.guardrail).toBe(true);
  });

  it('counts only evaluation time: concurrent evaluations that interleave do not time out', async () => {
    const expression = '$sum([1..5000].($ * 2))';
    const probe = compileMapping({ expression }, limits);
    for (let i = 0; i < 3; i++) await probe.evaluate({});
    const t0 = performance.now();
    for (let i = 0; i < 5; i++) await probe.evaluate({});
    const one = (performance.now() - t0) / 5;
    // The limit is sized from this machine's speed so that n evaluations run together take about
    // three times it: each stays far under the limit, the wall clock goes well past it.
    const n = Math.max(24, Math.ceil(30 / one));
    const budget = { ...limits, timeoutMs: Math.max(5, Math.round((n * one) / 3)) };
    const m = compileMapping({ expression }, budget);
    const started = performance.now();
    const results = await Promise.all(Array.from({ length: n }, () => m.evaluate({})));
    expect(results.every((r) => r.items[0] === 25_005_000)).toBe(true);
    expect(performance.now() - started).toBeGreaterThan(budget.timeoutMs);
  });

  it('lets timers run while a long evaluation is cut into slices', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    await failure('($f := function($n){$f($n+1)}; $f(0))');
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(3);
  });
});

describe('mapping tests', () => {
  const spec = { expression: '{"source": host, "severity": up ? 0 : 5}' };

  it('pass when every expected field matches (others are not compared)', async () => {
    expect(
      await runMappingTests({ ...spec, tests: [{ input: { host: 'a', up: true }, expect: { severity: 0 } }] }),
    ).toBeUndefined();
  });

  it('report the first difference', async () => {
    const problem = await runMappingTests({
      ...spec,
      tests: [{ input: { host: 'a', up: false }, expect: [{ source: 'a', severity: 0 }] }],
    });
    expect(problem).toBe('tests[0]: event 0: severity: expected 0, got 5');
  });

  it('report a wrong number of events', async () => {
    expect(await runMappingTests({ ...spec, tests: [{ input: {}, expect: [{}, {}] }] })).toBe(
      'tests[0]: expected 2 event(s), the mapping produced 1',
    );
  });

  it('checkMapping describes a compile error by code and position', async () => {
    expect(await checkMapping({ expression: '{"x": foo' })).toBe('S0203 at 9: Expected "}" before end of expression');
  });
});

describe('the route contract', () => {
  const route = (mapping: unknown) => ({
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'WebhookIntegration',
    name: 'am',
    namespace: 'default',
    credentials: [{ username: 'u', secret: { plain: 'p' } }],
    mapping,
  });

  it('accepts a preset or an expression, with tests', () => {
    expect(() => validateRoute(route({ preset: 'alertmanager' }))).not.toThrow();
    expect(() =>
      validateRoute(
        route({ expression: '{"source": "x", "severity": 1}', tests: [{ input: {}, expect: { severity: 1 } }] }),
      ),
    ).not.toThrow();
  });

  it('rejects both at once, or neither', () => {
    expect(() => validateRoute(route({ preset: 'alertmanager', expression: 'x' }))).toThrow(/mapping/);
    expect(() => validateRoute(route({}))).toThrow(/mapping/);
  });

  it('lists exactly the shipped presets', () => {
    const mapping = (
      routeSchema as unknown as { definitions: { mapping: { properties: { preset: { enum: string[] } } } } }
    ).definitions.mapping;
    expect(mapping.properties.preset.enum).toEqual(PRESET_NAMES);
  });

  it('the WebhookIntegration CRD lists exactly the shipped presets too', () => {
    const crd = parse(readFileSync(join(ROOT, 'crds', 'intake.dev_webhookintegrations.yaml'), 'utf8')) as {
      spec: { versions: Array<{ schema: { openAPIV3Schema: Record<string, unknown> } }> };
    };
    for (const version of crd.spec.versions) {
      const spec = version.schema.openAPIV3Schema as {
        properties: { spec: { properties: { mapping: { properties: { preset: { enum: string[] } } } } } };
      };
      expect(spec.properties.spec.properties.mapping.properties.preset.enum).toEqual(PRESET_NAMES);
    }
  });
});
