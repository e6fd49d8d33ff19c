/**
 * Routing rules evaluated at acceptance: once per event, in the request's own pipeline, before
 * the hand-off. The decision then travels with the event (a bus message's subject names its
 * destinations, an outbox row is one destination's), so no consumer parses or evaluates an event
 * again, and none does it on the tenant's behalf without charging it.
 *
 * What rules cost is the namespace's, charged to its CPU budget (the one its mapping spends,
 * limits/tenant-limiter.ts):
 *   - rules of comparisons only (severity, equality, sets) cost a few comparisons an event: they
 *     run here, on the request's thread, timed and charged after each slice;
 *   - rules with a regular expression may cost up to V8's backtrack bound plus a linear pass over
 *     the value per pattern, which a tenant controls (50 rules on 8 KiB labels: ~100 ms an event):
 *     they run in the mapping workers (api/routing-rules-task.ts), as a custom expression does: the
 *     namespace reserves the worst case (the mapping time limit) before the task is queued, within
 *     its share of the workers, and pays what it used. The request's thread never runs them.
 * A namespace without the budget is refused (429/503 MAPPING_CPU_LIMITED, Retry-After), workers
 * full 503 MAPPING_BUSY, rules past the time limit 422 ROUTING_RULES_FAILED; in every case nothing
 * of the request was handed off yet, so nothing is lost.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import {
  MappingBusy,
  MappingError,
  type ExpressionRunner,
  type MappingLimits,
} from '../../api/mapping/mapping-model.js';
import { decisionsOf, rulesTaskPayload, rulesTaskSource, type RulesTaskAnswer } from '../../api/routing-rules-task.js';
import type { RuleDecision } from '../../api/routing-rules.js';
import { mappingBusy, routingRulesFailed, type LimitError } from '../core/errors.js';
import type { NormalisedEvent } from '../core/event.js';
import type { RouteEntry } from './route-table.js';

/** Where the namespace's CPU is charged (limits/tenant-limiter.ts). */
export interface RuleCpu {
  /** Charges time used on this thread; answers the refusal once the namespace is over its budget. */
  chargeRulesCpu(entry: RouteEntry, cpuMs: number): LimitError | undefined;
  /** Reserves a worker task's worst case, or throws the refusal; the result settles what it used. */
  reserveMappingCpu(entry: RouteEntry): (usedMs: number) => void;
}

export interface RouteDeciderOptions {
  cpu?: RuleCpu;
  /** The mapping workers; without them every rule set runs here. */
  runner?: ExpressionRunner;
  /** The workers' limits for one request's rules (the mapping's: mapping.timeoutMs of CPU time). */
  limits: MappingLimits;
}

/** How long rules run on this thread before it is given back to other requests and the time charged. */
export const RULE_SLICE_MS = 5;

export class RouteDecider {
  constructor(private readonly o: RouteDeciderOptions) {}

  /**
   * The rules' decision for each event, in order; undefined when the integration has no rules (its
   * events go to its destinations, read when they are delivered). Throws the refusal otherwise.
   */
  async decide(entry: RouteEntry, events: readonly NormalisedEvent[]): Promise<RuleDecision[] | undefined> {
    const rules = entry.rules;
    if (!rules) return undefined;
    if (rules.usesRegex && this.o.runner && events.length > 0) return this.inWorker(entry, events, this.o.runner);
    return decideHere(entry, events, this.o.cpu);
  }

  private async inWorker(
    entry: RouteEntry,
    events: readonly NormalisedEvent[],
    runner: ExpressionRunner,
  ): Promise<RuleDecision[]> {
    const rules = entry.rules as NonNullable<RouteEntry['rules']>;
    const settle = this.o.cpu?.reserveMappingCpu(entry);
    const limits = { ...this.o.limits, maxEvents: events.length, maxOutputBytes: Number.MAX_SAFE_INTEGER };
    try {
      const result = await runner.run(rulesTaskSource(rules), limits, rulesTaskPayload(rules, events), {
        tenant: entry.namespace,
      });
      settle?.(result.cpuMs);
      return decisionsOf(result.items as unknown as RulesTaskAnswer);
    } catch (err) {
      if (err instanceof MappingBusy) {
        settle?.(0);
        throw mappingBusy(err.message, err.retryAfterSeconds);
      }
      const e = MappingError.from(err);
      settle?.(e.cpuMs ?? 0);
      throw routingRulesFailed(
        `the routing rules of integration ${entry.name} could not decide for this request's ${events.length} event(s): ${e.describe()}; nothing was accepted (make the rules' regular expressions cheaper, or send fewer events a request)`,
      );
    }
  }
}

/**
 * The rules evaluated on this thread, a slice at a time: after each slice the time is charged and
 * the thread goes back to other requests; a namespace over its budget is refused before the next.
 */
export async function decideHere(
  entry: RouteEntry,
  events: readonly NormalisedEvent[],
  cpu: Pick<RuleCpu, 'chargeRulesCpu'> | undefined,
  sliceMs = RULE_SLICE_MS,
): Promise<RuleDecision[] | undefined> {
  const rules = entry.rules;
  if (!rules) return undefined;
  const decisions = new Array<RuleDecision>(events.length);
  let sliceStart = performance.now();
  for (let i = 0; i < events.length; i++) {
    decisions[i] = rules.evaluate(events[i] as NormalisedEvent);
    const now = performance.now();
    if (now - sliceStart < sliceMs || i === events.length - 1) continue;
    const refusal = cpu?.chargeRulesCpu(entry, now - sliceStart);
    if (refusal) throw refusal;
    await nextTurn();
    sliceStart = performance.now();
  }
  cpu?.chargeRulesCpu(entry, performance.now() - sliceStart);
  return decisions;
}

/** The destinations of each decision, as the sinks take them. */
export const destinationsOf = (decisions: readonly RuleDecision[]): (readonly string[])[] =>
  decisions.map((d) => d.destinations);
