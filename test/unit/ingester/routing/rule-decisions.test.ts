import { jest } from '@jest/globals';
import {
  MappingBusy,
  MappingError,
  type ExpressionRunner,
  type MappingResult,
} from '../../../../api/mapping/engine.js';
import { evaluateRulesTask, RULES_TASK } from '../../../../api/routing-rules-task.js';
import { CompiledRules, type RoutingRule } from '../../../../api/routing-rules.js';
import { IntakeError, rateLimited } from '../../../../ingester/core/errors.js';
import type { NormalisedEvent } from '../../../../ingester/core/event.js';
import { decideHere, RouteDecider, type RuleCpu } from '../../../../ingester/routing/rule-decisions.js';
import type { RouteEntry } from '../../../../ingester/routing/route-table.js';

const LIMITS = {
  timeoutMs: 500,
  maxDepth: 100,
  maxSequence: 1000,
  maxStringLength: 1000,
  maxOutputBytes: 1000,
  maxEvents: 10,
};

const entryOf = (rules: RoutingRule[]): RouteEntry =>
  ({
    kind: 'WebhookIntegration',
    name: 'hooks',
    namespace: 'team-a',
    destinations: ['tickets'],
    rules: new CompiledRules(rules, ['tickets']),
  }) as unknown as RouteEntry;

const event = (n: number, extra: Record<string, unknown> = {}): NormalisedEvent =>
  ({
    id: `e${n}`,
    namespace: 'team-a',
    integration: 'hooks',
    severity: n % 2 === 0 ? 5 : 2,
    source: `web-${n}`,
    signature: `s${n}`,
    custom_info: { team: 'payments', big: 'x'.repeat(1000), ...extra },
  }) as unknown as NormalisedEvent;

const PLAIN: RoutingRule[] = [
  { name: 'pages', match: { severity: { min: 'critical' } }, destinations: ['pager'] },
  { name: 'quiet', match: { source: { equals: 'web-3' } }, drop: true },
];
const WITH_REGEX: RoutingRule[] = [
  {
    name: 'web',
    match: { source: { regex: 'web-[0-9]+' }, customInfo: { team: { in: ['payments'] } } },
    destinations: ['pager'],
  },
];

/** A CPU account that records charges and refuses once `budgetMs` is spent. */
function account(budgetMs = Infinity): RuleCpu & { charged: number; settled: number[] } {
  const a = {
    charged: 0,
    settled: [] as number[],
    chargeRulesCpu: (_e: RouteEntry, ms: number) => {
      a.charged += ms;
      return a.charged > budgetMs
        ? rateLimited(429, {
            scope: 'namespace',
            namespace: 'team-a',
            name: 'team-a',
            resource: 'mappingCpuMillis',
            perSecond: 1,
            burst: 1,
            replicas: 1,
            requested: 1,
            retryAfterSeconds: 1,
            field: 'f',
          })
        : undefined;
    },
    reserveMappingCpu: () => (used: number) => void a.settled.push(used),
  };
  return a;
}

describe('routing decisions at acceptance', () => {
  it('decides once per event, as the compiled rules do, and charges the time to the namespace', async () => {
    const entry = entryOf(PLAIN);
    const events = [0, 1, 2, 3].map((n) => event(n));
    const cpu = account();
    const decisions = await decideHere(entry, events, cpu);
    expect(decisions).toEqual(events.map((e) => entry.rules?.evaluate(e)));
    expect(decisions?.map((d) => d.destinations)).toEqual([['pager'], ['tickets'], ['pager'], []]);
    expect(decisions?.[3]?.droppedBy).toBe('quiet');
    expect(cpu.charged).toBeGreaterThanOrEqual(0);
  });

  it('answers nothing for an integration without rules (its destinations are read at delivery)', async () => {
    const entry = { ...entryOf(PLAIN), rules: undefined } as RouteEntry;
    expect(await decideHere(entry, [event(1)], account())).toBeUndefined();
  });

  it('gives the thread back between slices, and stops with the refusal once the namespace is over its budget', async () => {
    const entry = entryOf(PLAIN);
    const events = Array.from({ length: 50 }, (_, n) => event(n));
    // Another task's turns, counted on the same queue the slices yield to (a timer would need a
    // millisecond to pass, which 50 short slices need not take).
    let turns = 0;
    let ticking = setImmediate(function tick() {
      turns++;
      ticking = setImmediate(tick);
    });
    // A zero-length slice: every event is a slice of its own.
    const decided = await decideHere(entry, events, account(), 0);
    clearImmediate(ticking);
    expect(decided).toHaveLength(50);
    expect(turns).toBeGreaterThan(0);
    await expect(decideHere(entry, events, account(0), 0)).rejects.toMatchObject({
      code: 'MAPPING_CPU_LIMITED',
      statusCode: 429,
    });
  });

  it('runs rules without a regular expression here, never in a worker', async () => {
    const runner: ExpressionRunner = { run: jest.fn() as unknown as ExpressionRunner['run'] };
    const decider = new RouteDecider({ cpu: account(), runner, limits: LIMITS });
    const decisions = await decider.decide(entryOf(PLAIN), [event(0)]);
    expect(decisions?.[0]?.destinations).toEqual(['pager']);
    expect(runner.run).not.toHaveBeenCalled();
  });

  it("runs rules with a regular expression in the mapping workers, as the namespace's, paying what they used", async () => {
    const calls: Array<{ source: string; payload: unknown; tenant?: string }> = [];
    const runner: ExpressionRunner = {
      run: async (source, _limits, json, options): Promise<MappingResult> => {
        calls.push({ source, payload: JSON.parse(Buffer.from(json).toString('utf8')), tenant: options?.tenant });
        const answer = evaluateRulesTask(source, Buffer.from(json).toString('utf8'));
        return { items: JSON.parse(answer.json) as unknown[], cpuMs: 7, outputBytes: answer.json.length };
      },
    };
    const cpu = account();
    const entry = entryOf(WITH_REGEX);
    const events = [event(1), event(2, { team: 'search' })];
    const decisions = await new RouteDecider({ cpu, runner, limits: LIMITS }).decide(entry, events);
    expect(decisions).toEqual(events.map((e) => entry.rules?.evaluate(e)));
    expect(calls).toHaveLength(1);
    expect(calls[0]?.tenant).toBe('team-a');
    expect(calls[0]?.source.startsWith(RULES_TASK)).toBe(true);
    // Only what the rules read goes to the worker: custom_info's other labels stay here.
    expect((calls[0]?.payload as Array<{ custom_info: unknown }>)[0]?.custom_info).toEqual({ team: 'payments' });
    expect(cpu.settled).toEqual([7]);
  });

  it('answers 503 MAPPING_BUSY when the workers are full, and 422 ROUTING_RULES_FAILED past the time limit', async () => {
    const cpu = account();
    const busy: ExpressionRunner = { run: () => Promise.reject(new MappingBusy('full', 3)) };
    const failed = await new RouteDecider({ cpu, runner: busy, limits: LIMITS })
      .decide(entryOf(WITH_REGEX), [event(1)])
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(IntakeError);
    expect(failed).toMatchObject({ code: 'MAPPING_BUSY', statusCode: 503 });
    const slow: ExpressionRunner = {
      run: () =>
        Promise.reject(Object.assign(new MappingError('D1012', 'Expression evaluation timeout'), { cpuMs: 520 })),
    };
    await expect(
      new RouteDecider({ cpu, runner: slow, limits: LIMITS }).decide(entryOf(WITH_REGEX), [event(1)]),
    ).rejects.toMatchObject({ code: 'ROUTING_RULES_FAILED', statusCode: 422 });
    expect(cpu.settled).toEqual([0, 520]);
  });
});
