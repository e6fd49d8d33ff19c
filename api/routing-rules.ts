/**
 * Routing rules of a WebhookIntegration: an ordered list, each a match on the normalized event and
 * the destinations it sends to, or `drop`. Alertmanager's route semantics: the first rule that
 * matches decides, unless it says `continue: true` (then the next ones are tried too and the
 * destinations add up). An event no rule matches goes to the integration's destinations (else the
 * platform's defaults). The shape is checked by the route schema and the CRD; what a schema cannot
 * say (a regular expression that does not compile, min above max, a rule with nothing to do) is
 * checked here, by the operator, the standalone settings file and every ingester alike.
 *
 * Rules are compiled once per route (routing/route-table.ts); evaluating one is a few comparisons,
 * never JSONata. A tenant writes the regular expressions, so each must be one V8's linear-time
 * engine can run, and a match that backtracks too long is finished by it (safe-regex.ts): none
 * runs in exponential time, though a match can still cost up to V8's backtrack bound plus a
 * linear pass: the ingester decides once per event at acceptance and charges that to the tenant's
 * namespace, running rules with a regex in its mapping workers (ingester/routing/rule-decisions.ts).
 */
import { compileLinear } from './safe-regex.js';

/** The event's severity scale, by name (ingester/core/event.ts SEVERITY_NAMES; a test keeps them equal). */
export const RULE_SEVERITIES = ['clear', 'indeterminate', 'warning', 'minor', 'major', 'critical'] as const;
export type RuleSeverity = (typeof RULE_SEVERITIES)[number];

/** Exactly one of the three. */
export interface FieldMatch {
  equals?: string;
  in?: string[];
  /** Anchored at both ends, as Alertmanager's matchers: `crit.*` matches `critical`, not `supercritical`. */
  regex?: string;
}

export interface RuleMatch {
  /** Inclusive range; either end may be left open. */
  severity?: { min?: RuleSeverity; max?: RuleSeverity };
  source?: FieldMatch;
  class?: FieldMatch;
  type?: FieldMatch;
  manager?: FieldMatch;
  signature?: FieldMatch;
  /** Mapped labels, by key: a string, number or boolean value compared as text; any other (or none) never matches. */
  customInfo?: Record<string, FieldMatch>;
}

export interface RoutingRule {
  /** Shown in dry runs and metrics; absent: the rule's index. */
  name?: string;
  /** Every condition given must hold; absent or empty: every event. */
  match?: RuleMatch;
  destinations?: string[];
  /** The event is delivered nowhere further (only to what earlier `continue` rules gave it). */
  drop?: boolean;
  /** After this rule matched, the next rules are tried too. */
  continue?: boolean;
}

/** The fields of the normalized event a rule reads. */
export interface RoutableEvent {
  severity: number;
  source: string;
  signature: string;
  type?: string;
  manager?: string;
  class?: string;
  custom_info: Record<string, unknown>;
}

export const FIELDS = ['source', 'class', 'type', 'manager', 'signature'] as const;
type Field = (typeof FIELDS)[number];

/** A rule's label in messages, metrics and dry runs: its name, else its index. */
export const ruleLabel = (rule: RoutingRule, index: number): string => rule.name ?? String(index);

/**
 * What a schema cannot check, each problem naming the rule (its index and name) and the field, in
 * the route document's terms: `/rules/2/match/source/regex (rule pages): ...`.
 */
export function ruleProblems(rules: readonly RoutingRule[]): string[] {
  const problems: string[] = [];
  const names = new Set<string>();
  rules.forEach((rule, i) => {
    const at = (field: string, problem: string): void => {
      problems.push(`/rules/${i}${field}${rule.name !== undefined ? ` (rule ${rule.name})` : ''} ${problem}`);
    };
    if (rule.name !== undefined) {
      if (names.has(rule.name)) at('/name', `repeats the name of an earlier rule`);
      names.add(rule.name);
    }
    const sends = (rule.destinations?.length ?? 0) > 0;
    if (rule.drop === true && sends) at('/drop', 'cannot be set with destinations: a rule either sends or drops');
    else if (rule.drop === true && rule.continue === true)
      at('/continue', 'cannot be set with drop: a dropped event is not matched further');
    else if (rule.drop !== true && !sends) at('', 'must name destinations or set drop: true');
    const match = rule.match ?? {};
    const { min, max } = match.severity ?? {};
    if (min !== undefined && max !== undefined && RULE_SEVERITIES.indexOf(min) > RULE_SEVERITIES.indexOf(max))
      at('/match/severity', `min (${min}) is above max (${max})`);
    const fieldProblem = (path: string, m: FieldMatch): void => {
      const given = (['equals', 'in', 'regex'] as const).filter((k) => m[k] !== undefined);
      if (given.length !== 1) {
        at(path, 'must have exactly one of equals, in, regex');
        return;
      }
      if (m.regex !== undefined) {
        try {
          compileLinear(m.regex);
        } catch (err) {
          at(`${path}/regex`, (err as Error).message);
        }
      }
    };
    for (const f of FIELDS) if (match[f]) fieldProblem(`/match/${f}`, match[f]);
    for (const [key, m] of Object.entries(match.customInfo ?? {})) fieldProblem(`/match/customInfo/${key}`, m);
  });
  return problems;
}

/** Where the rules send one event. */
export interface RuleDecision {
  /** The rules that matched, by label, in order (empty: none; the defaults were used). */
  matched: string[];
  /** Where it goes; empty when dropped (or when nothing is configured). */
  destinations: readonly string[];
  /** The label of the drop rule that stopped it, when one did. */
  droppedBy?: string;
}

type Test = (e: RoutableEvent) => boolean;

/** Rules compiled once per route: evaluate is a loop over closures, nothing is parsed per event. */
export class CompiledRules {
  private readonly compiled: ReadonlyArray<{
    label: string;
    test: Test;
    destinations: readonly string[];
    drop: boolean;
    continue: boolean;
  }>;
  /** Every destination any rule or the defaults can send to. */
  readonly reachable: readonly string[];
  /**
   * Whether any rule matches by regular expression: then one event may cost up to V8's backtrack
   * bound plus a linear pass per pattern, and the ingester evaluates the rules in its mapping
   * workers (routing-rules-task.ts); otherwise a few comparisons each, on the request's thread.
   */
  readonly usesRegex: boolean;
  /** The custom_info keys the rules read (all that a worker needs of an event's labels). */
  readonly customInfoKeys: readonly string[];

  /** `defaults`: where events that match no rule go (the integration's destinations, else the platform's). */
  constructor(
    readonly rules: readonly RoutingRule[],
    readonly defaults: readonly string[],
  ) {
    const problems = ruleProblems(rules);
    if (problems.length > 0) throw new Error(`rules: ${problems.join('; ')}`);
    this.compiled = rules.map((r, i) => ({
      label: ruleLabel(r, i),
      test: compileMatch(r.match ?? {}),
      destinations: [...(r.destinations ?? [])],
      drop: r.drop === true,
      continue: r.continue === true,
    }));
    this.reachable = [...new Set([...defaults, ...this.compiled.flatMap((r) => r.destinations)])];
    const matches = rules.map((r) => r.match ?? {});
    const fieldMatches = matches.flatMap((m) => [...FIELDS.map((f) => m[f]), ...Object.values(m.customInfo ?? {})]);
    this.usesRegex = fieldMatches.some((f) => f?.regex !== undefined);
    this.customInfoKeys = [...new Set(matches.flatMap((m) => Object.keys(m.customInfo ?? {})))];
  }

  get size(): number {
    return this.compiled.length;
  }

  evaluate(e: RoutableEvent): RuleDecision {
    const matched: string[] = [];
    let destinations: string[] | undefined;
    for (const rule of this.compiled) {
      if (!rule.test(e)) continue;
      matched.push(rule.label);
      if (rule.drop) return { matched, destinations: destinations ?? [], droppedBy: rule.label };
      if (destinations === undefined) destinations = [...rule.destinations];
      else for (const d of rule.destinations) if (!destinations.includes(d)) destinations.push(d);
      if (!rule.continue) break;
    }
    return { matched, destinations: destinations ?? this.defaults };
  }

  /** The destinations alone (the delivery path). */
  destinationsOf(e: RoutableEvent): readonly string[] {
    return this.evaluate(e).destinations;
  }
}

function compileMatch(m: RuleMatch): Test {
  const tests: Test[] = [];
  if (m.severity?.min !== undefined) {
    const min = RULE_SEVERITIES.indexOf(m.severity.min);
    tests.push((e) => e.severity >= min);
  }
  if (m.severity?.max !== undefined) {
    const max = RULE_SEVERITIES.indexOf(m.severity.max);
    tests.push((e) => e.severity <= max);
  }
  for (const f of FIELDS) {
    const fm = m[f];
    if (!fm) continue;
    const test = compileField(fm);
    const field: Field = f;
    tests.push((e) => {
      const v = e[field];
      return v !== undefined && test(v);
    });
  }
  for (const [key, fm] of Object.entries(m.customInfo ?? {})) {
    const test = compileField(fm);
    tests.push((e) => {
      const v = Object.hasOwn(e.custom_info, key) ? e.custom_info[key] : undefined;
      if (typeof v === 'string') return test(v);
      if (typeof v === 'number' || typeof v === 'boolean') return test(String(v));
      return false;
    });
  }
  if (tests.length === 0) return () => true;
  if (tests.length === 1) return tests[0] as Test;
  return (e) => {
    for (const t of tests) if (!t(e)) return false;
    return true;
  };
}

function compileField(m: FieldMatch): (v: string) => boolean {
  if (m.equals !== undefined) {
    const want = m.equals;
    return (v) => v === want;
  }
  if (m.in !== undefined) {
    const set = new Set(m.in);
    return (v) => set.has(v);
  }
  const re = compileLinear(m.regex as string);
  return (v) => re.test(v);
}
