/**
 * Routing rules evaluated in a mapping worker (api/mapping/mapping-worker.ts), for rules whose
 * regular expressions a tenant can make cost milliseconds an event (routing-rules.ts usesRegex):
 * there they take their turn beside the tenants' expressions, within the namespace's share of the
 * workers and its CPU time limit, instead of on the thread every tenant's requests share.
 *
 * A task is an ordinary worker task whose `source` starts with RULES_TASK (no JSONata source can:
 * it begins with a NUL) followed by the rules and their defaults as JSON; its payload is the
 * events, cut down to the fields rules read. It answers one decision per event, in order.
 */
import { CompiledRules, type RoutableEvent, type RoutingRule, type RuleDecision } from './routing-rules.js';

export const RULES_TASK = '\u0000routing-rules\u0000';

const sources = new WeakMap<CompiledRules, string>();

/** The worker task's source for these rules (made once per compiled rules). */
export function rulesTaskSource(rules: CompiledRules): string {
  let source = sources.get(rules);
  if (source === undefined) {
    source = RULES_TASK + JSON.stringify({ rules: rules.rules, defaults: rules.defaults });
    sources.set(rules, source);
  }
  return source;
}

/** The events as the task's payload: only what the rules read of each (custom_info: their keys). */
export function rulesTaskPayload(rules: CompiledRules, events: readonly RoutableEvent[]): Uint8Array {
  const keys = rules.customInfoKeys;
  const slim = events.map((e) => {
    const custom_info: Record<string, unknown> = {};
    for (const k of keys) if (Object.hasOwn(e.custom_info, k)) custom_info[k] = e.custom_info[k];
    return {
      severity: e.severity,
      source: e.source,
      signature: e.signature,
      type: e.type,
      manager: e.manager,
      class: e.class,
      custom_info,
    };
  });
  return Buffer.from(JSON.stringify(slim));
}

/** Rules compiled in this worker, by task source: a few routes' worth, recompiled when evicted. */
const compiled = new Map<string, CompiledRules>();
const COMPILED_KEPT = 256;

/**
 * The task's answer: the distinct decisions, and for each event, in order, the index of its own
 * (most events of a request share a few decisions: a short answer to send back and read).
 */
export type RulesTaskAnswer = [distinct: RuleDecision[], of: number[]];

/** The decision of each event, from the task's answer. */
export function decisionsOf(answer: RulesTaskAnswer): RuleDecision[] {
  const [distinct, of] = answer;
  return of.map((i) => distinct[i] as RuleDecision);
}

/** In the worker: each event's decision, as the JSON of a RulesTaskAnswer. */
export function evaluateRulesTask(source: string, json: string): { json: string; count: number } {
  let rules = compiled.get(source);
  if (!rules) {
    const spec = JSON.parse(source.slice(RULES_TASK.length)) as { rules: RoutingRule[]; defaults: string[] };
    rules = new CompiledRules(spec.rules, spec.defaults);
    if (compiled.size >= COMPILED_KEPT) compiled.clear();
    compiled.set(source, rules);
  }
  const events = JSON.parse(json) as RoutableEvent[];
  const distinct: RuleDecision[] = [];
  const known = new Map<string, number>();
  const of = events.map((e) => {
    const decision = (rules as CompiledRules).evaluate(e);
    const key = JSON.stringify(decision);
    let index = known.get(key);
    if (index === undefined) {
      index = distinct.push(decision) - 1;
      known.set(key, index);
    }
    return index;
  });
  const answer: RulesTaskAnswer = [distinct, of];
  return { json: JSON.stringify(answer), count: events.length };
}
