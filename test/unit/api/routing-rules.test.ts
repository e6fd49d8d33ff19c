import { validateRoute, RouteValidationError } from '../../../api/route.js';
import { CompiledRules, RULE_SEVERITIES, ruleProblems, type RoutingRule } from '../../../api/routing-rules.js';
import { compileLinear } from '../../../api/safe-regex.js';
import { SEVERITY_NAMES } from '../../../ingester/core/event.js';

const event = (over: Partial<Parameters<CompiledRules['evaluate']>[0]> = {}) => ({
  severity: 2,
  source: 'db-1',
  signature: 'sig-1',
  type: 'disk',
  manager: 'zabbix',
  class: 'infra',
  custom_info: { team: 'payments', shard: 3, paged: true, nested: { a: 1 } } as Record<string, unknown>,
  ...over,
});

const rules = (list: RoutingRule[], defaults = ['default']) => new CompiledRules(list, defaults);

describe('routing rules', () => {
  it('name the same severities as the event', () => {
    expect([...RULE_SEVERITIES]).toEqual([...SEVERITY_NAMES]);
  });

  it('match a severity range, inclusive, either end open', () => {
    const r = rules([{ match: { severity: { min: 'major', max: 'critical' } }, destinations: ['pager'] }]);
    expect(r.destinationsOf(event({ severity: 4 }))).toEqual(['pager']);
    expect(r.destinationsOf(event({ severity: 5 }))).toEqual(['pager']);
    expect(r.destinationsOf(event({ severity: 3 }))).toEqual(['default']);
    const below = rules([{ match: { severity: { max: 'warning' } }, destinations: ['low'] }]);
    expect(below.destinationsOf(event({ severity: 0 }))).toEqual(['low']);
    expect(below.destinationsOf(event({ severity: 3 }))).toEqual(['default']);
  });

  it.each([
    ['source', { equals: 'db-1' }, { equals: 'db-2' }],
    ['class', { in: ['app', 'infra'] }, { in: ['app'] }],
    ['type', { regex: 'di.k' }, { regex: 'dis' }],
    ['manager', { regex: 'zab.*|nagios' }, { regex: 'nagios' }],
    ['signature', { equals: 'sig-1' }, { in: ['sig-2'] }],
  ] as const)('match %s by equality, set or regular expression', (field, yes, no) => {
    expect(rules([{ match: { [field]: yes }, destinations: ['x'] }]).destinationsOf(event())).toEqual(['x']);
    expect(rules([{ match: { [field]: no }, destinations: ['x'] }]).destinationsOf(event())).toEqual(['default']);
  });

  it('anchor regular expressions at both ends, as Alertmanager does', () => {
    const r = rules([{ match: { source: { regex: 'db' } }, destinations: ['x'] }]);
    expect(r.destinationsOf(event({ source: 'db' }))).toEqual(['x']);
    expect(r.destinationsOf(event({ source: 'db-1' }))).toEqual(['default']);
    expect(r.destinationsOf(event({ source: 'my-db' }))).toEqual(['default']);
  });

  it('never match an absent field', () => {
    const { type: _t, ...noType } = event();
    expect(rules([{ match: { type: { regex: '.*' } }, destinations: ['x'] }]).destinationsOf(noType)).toEqual([
      'default',
    ]);
  });

  it('match custom_info labels: strings, and numbers and booleans as text; objects and absent keys never', () => {
    const r = (key: string, m: object) =>
      rules([{ match: { customInfo: { [key]: m } }, destinations: ['x'] }]).destinationsOf(event());
    expect(r('team', { equals: 'payments' })).toEqual(['x']);
    expect(r('shard', { in: ['3', '4'] })).toEqual(['x']);
    expect(r('paged', { equals: 'true' })).toEqual(['x']);
    expect(r('nested', { regex: '.*' })).toEqual(['default']);
    expect(r('missing', { regex: '.*' })).toEqual(['default']);
    expect(r('toString', { regex: '.*' })).toEqual(['default']);
  });

  it('require every condition of a match', () => {
    const r = rules([
      { match: { severity: { min: 'major' }, customInfo: { team: { equals: 'payments' } } }, destinations: ['x'] },
    ]);
    expect(r.destinationsOf(event({ severity: 5 }))).toEqual(['x']);
    expect(r.destinationsOf(event({ severity: 5, custom_info: { team: 'search' } }))).toEqual(['default']);
    expect(r.destinationsOf(event({ severity: 1 }))).toEqual(['default']);
  });

  it('stop at the first match unless it says continue; continued destinations add up', () => {
    const list: RoutingRule[] = [
      { name: 'audit', match: { class: { equals: 'infra' } }, destinations: ['audit'], continue: true },
      { name: 'pages', match: { severity: { min: 'critical' } }, destinations: ['pager', 'audit'] },
      { name: 'rest', destinations: ['tickets'] },
      { name: 'never', destinations: ['never'] },
    ];
    expect(rules(list).evaluate(event({ severity: 5 }))).toEqual({
      matched: ['audit', 'pages'],
      destinations: ['audit', 'pager'],
    });
    expect(rules(list).evaluate(event({ severity: 1 }))).toEqual({
      matched: ['audit', 'rest'],
      destinations: ['audit', 'tickets'],
    });
    expect(rules(list).evaluate(event({ class: 'app', severity: 1 }))).toEqual({
      matched: ['rest'],
      destinations: ['tickets'],
    });
  });

  it('a continue rule alone decides when nothing after it matches (not the defaults)', () => {
    const r = rules([{ match: { source: { equals: 'db-1' } }, destinations: ['a'], continue: true }]);
    expect(r.destinationsOf(event())).toEqual(['a']);
  });

  it('drop: delivered nowhere further, reported by the rule (name, else index)', () => {
    const r = rules([
      { match: { type: { equals: 'disk' } }, destinations: ['audit'], continue: true },
      { match: { severity: { max: 'indeterminate' } }, drop: true },
      { destinations: ['x'] },
    ]);
    expect(r.evaluate(event({ severity: 1 }))).toEqual({
      matched: ['0', '1'],
      destinations: ['audit'],
      droppedBy: '1',
    });
    expect(r.evaluate(event({ severity: 1, type: 'cpu' }))).toEqual({
      matched: ['1'],
      destinations: [],
      droppedBy: '1',
    });
    expect(r.evaluate(event({ severity: 3 })).destinations).toEqual(['audit', 'x']);
  });

  it('no match: the defaults given (the integration’s destinations, else the platform’s)', () => {
    const r = rules([{ match: { source: { equals: 'other' } }, destinations: ['x'] }], ['am', 'hook']);
    expect(r.evaluate(event())).toEqual({ matched: [], destinations: ['am', 'hook'] });
    expect(r.reachable).toEqual(['am', 'hook', 'x']);
  });

  it('refuse what a schema cannot see, naming the rule and the field', () => {
    expect(
      ruleProblems([
        { name: 'ok', destinations: ['a'] },
        { name: 'bad-re', match: { source: { regex: '(' } }, destinations: ['a'] },
        { match: { customInfo: { team: { regex: '(a)\\1' } } }, destinations: ['a'] },
        { name: 'both', match: { class: { equals: 'a', regex: 'b' } }, destinations: ['a'] },
        { name: 'nothing' },
        { name: 'drop-and-send', drop: true, destinations: ['a'] },
        { name: 'drop-continue', drop: true, continue: true },
        { name: 'range', match: { severity: { min: 'critical', max: 'minor' } }, drop: true },
        { name: 'ok', destinations: ['a'] },
        { name: 'escape', match: { source: { regex: 'a)|(?:b' } }, destinations: ['a'] },
      ]),
    ).toEqual([
      expect.stringMatching(/^\/rules\/1\/match\/source\/regex \(rule bad-re\) is not a valid regular expression/),
      expect.stringMatching(/^\/rules\/2\/match\/customInfo\/team\/regex cannot be matched in linear time/),
      '/rules/3/match/class (rule both) must have exactly one of equals, in, regex',
      '/rules/4 (rule nothing) must name destinations or set drop: true',
      '/rules/5/drop (rule drop-and-send) cannot be set with destinations: a rule either sends or drops',
      '/rules/6/continue (rule drop-continue) cannot be set with drop: a dropped event is not matched further',
      '/rules/7/match/severity (rule range) min (critical) is above max (minor)',
      '/rules/8/name (rule ok) repeats the name of an earlier rule',
      expect.stringMatching(/^\/rules\/9\/match\/source\/regex \(rule escape\) is not a valid regular expression/),
    ]);
    expect(() => rules([{ match: { source: { regex: '[' } }, destinations: ['a'] }])).toThrow(/rules\/0\/match/);
  });

  it('the route document refuses a bad rule, by schema and by check, naming the rule and field', () => {
    const route = (rules: unknown) => ({
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'WebhookIntegration',
      name: 'x',
      namespace: 'ns',
      credentials: [{ username: 'u', secret: { plain: 'p' } }],
      rules,
    });
    expect(() => validateRoute(route([{ match: { source: { regex: 'a+' } }, destinations: ['a'] }]))).not.toThrow();
    const problems = (doc: unknown): string[] => {
      try {
        validateRoute(doc);
        return [];
      } catch (err) {
        return (err as RouteValidationError).problems;
      }
    };
    expect(problems(route([{ match: { source: { regex: '(?=a)a' } }, destinations: ['a'] }]))).toEqual([
      expect.stringMatching(/^\/rules\/0\/match\/source\/regex cannot be matched in linear time/),
    ]);
    expect(problems(route([{ match: { severity: { min: 'huge' } }, destinations: ['a'] }]))[0]).toMatch(
      /^\/rules\/0\/match\/severity\/min must be equal to one of the allowed values/,
    );
    expect(problems(route([{ match: { source: { regex: 'x'.repeat(257) } }, destinations: ['a'] }]))[0]).toMatch(
      /^\/rules\/0\/match\/source\/regex must NOT have more than 256 characters/,
    );
  });
});

describe('regular expressions of rules', () => {
  it('run in linear time: a pattern that backtracks catastrophically elsewhere answers at once', () => {
    const re = compileLinear('(a+)+b');
    const start = process.hrtime.bigint();
    expect(re.test('a'.repeat(100_000))).toBe(false);
    // Backtracking alone takes longer than the age of the universe here; past V8's bound the
    // linear-time engine finishes it in milliseconds.
    expect(Number(process.hrtime.bigint() - start) / 1e6).toBeLessThan(2000);
  });

  it('are bounded in length', () => {
    expect(() => compileLinear('a'.repeat(257))).toThrow(/longer than 256/);
  });
});
