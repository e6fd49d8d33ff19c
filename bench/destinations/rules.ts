/**
 * What routing rules cost per event: CompiledRules.evaluate (what the outbox's hand-off and each
 * bus consumer call per event) for 1, 10 and 50 rules, against the same loop with no rules (the
 * integration's destinations, a field read). Each rule matches on a mix of what rules can say
 * (severity, equality, a set, an anchored regular expression, a custom_info label); the events
 * match none of them (every rule is tried: the worst case) or the last one. With the bus, a
 * consumer also parses each stored event of an integration that has rules: that is measured too.
 *
 * A micro-benchmark: run pinned, `taskset -c 1 node dist/bench/destinations/rules.js` after
 * `make bench-build`; it prints ns/event, the median of BENCH_RULES_ROUNDS rounds (default 7).
 */
import { CompiledRules, type RoutingRule, type RoutableEvent } from '../../api/routing-rules.js';
import { destinationEvent } from './destination-events.js';

const ROUNDS = Number(process.env.BENCH_RULES_ROUNDS ?? 7);
const EVENTS_PER_ROUND = 200_000;

/** Rule i: one of five shapes, none of which the bench events match unless `last` makes the last one match everything. */
function rule(i: number, matchAll: boolean): RoutingRule {
  if (matchAll) return { name: `r${i}`, destinations: ['tickets'] };
  const shapes: RoutingRule['match'][] = [
    { severity: { min: 'critical' }, source: { equals: `db-${i}` } },
    { type: { in: [`Disk${i}`, `Cpu${i}`, `Memory${i}`] } },
    { source: { regex: `web-${i}-[0-9]+` } },
    { customInfo: { team: { equals: `team-${i}` } } },
    { class: { regex: `(net|storage)-${i}.*` }, severity: { max: 'warning' } },
  ];
  return { name: `r${i}`, match: shapes[i % shapes.length], destinations: [`d${i % 4}`] };
}

const rulesOf = (n: number, lastMatches: boolean): RoutingRule[] =>
  Array.from({ length: n }, (_, i) => rule(i, lastMatches && i === n - 1));

const events: RoutableEvent[] = Array.from({ length: 1024 }, (_, n) => {
  const e = destinationEvent(n) as Omit<RoutableEvent, 'custom_info'>;
  return { ...e, class: 'infra', custom_info: { team: `payments`, shard: n % 7 } };
});
const stored = events.map((e) => Buffer.from(JSON.stringify({ id: 'x', namespace: 'ns', integration: 'i', ...e })));

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

/** ns per event of `route`, the median of the rounds (the first round warms up and is not counted). */
function measure(route: (i: number) => readonly string[]): number {
  const rounds: number[] = [];
  let sink = 0;
  for (let r = 0; r <= ROUNDS; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < EVENTS_PER_ROUND; i++) sink += route(i & 1023).length;
    const ns = Number(process.hrtime.bigint() - start) / EVENTS_PER_ROUND;
    if (r > 0) rounds.push(ns);
  }
  if (sink < 0) console.log(sink);
  return median(rounds);
}

const defaults = ['tickets'];
const rows: Array<[string, number]> = [];
rows.push(['no rules (the integration’s destinations)', measure(() => defaults)]);
for (const n of [1, 10, 50]) {
  const none = new CompiledRules(rulesOf(n, false), defaults);
  rows.push([`${n} rule(s), none matches`, measure((i) => none.destinationsOf(events[i] as RoutableEvent))]);
  const last = new CompiledRules(rulesOf(n, true), defaults);
  rows.push([`${n} rule(s), the last matches`, measure((i) => last.destinationsOf(events[i] as RoutableEvent))]);
}
const ten = new CompiledRules(rulesOf(10, false), defaults);
rows.push([
  'bus consumer: parse the stored event + 10 rules',
  measure((i) => ten.destinationsOf(JSON.parse((stored[i] as Buffer).toString()) as RoutableEvent)),
]);

console.log(`routing rules, ns/event (median of ${ROUNDS} rounds of ${EVENTS_PER_ROUND} events)`);
for (const [what, ns] of rows) console.log(`${what.padEnd(48)} ${ns.toFixed(1).padStart(8)}`);
