/**
 * One namespace's routing rules never change where another's events go: each integration's rules
 * are compiled into its own route entry, and a rule can name only the destinations this ingester
 * has (the platform's), never another namespace's integration or anything of its own.
 */
import type { Route } from '../../../../api/route.js';
import { RouteTable } from '../../../../ingester/routing/route-table.js';

const DESTINATIONS = [
  { name: 'am', default: true },
  { name: 'a-sink', default: false },
  { name: 'b-pager', default: false },
  { name: 'b-tickets', default: false },
];

const route = (name: string, namespace: string, extra: Partial<Route> = {}): Route => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace,
  credentials: [{ username: name, secret: { plain: 'p' } }],
  ...extra,
});

/** A's rules would drop B's events, or take every event to A's receiver, if they applied to B's. */
const hostileA = route('hn-a', 'team-a', {
  destinations: ['a-sink'],
  rules: [
    { name: 'drop-b', match: { source: { regex: 'b-.*' } }, drop: true },
    { name: 'catch-all', destinations: ['a-sink'] },
  ],
});
const ownB = route('hn-b', 'team-b', {
  destinations: ['b-tickets'],
  rules: [{ name: 'pages', match: { severity: { min: 'critical' } }, destinations: ['b-pager'] }],
});

const build = (...routes: Route[]) =>
  RouteTable.build(
    routes.map((r, i) => ({ source: `#${i}`, route: r })),
    { allowPlaintext: true, destinations: DESTINATIONS },
  );

const event = (source: string, severity: number) => ({ severity, source, signature: 's', custom_info: {} });

describe("routing rules: one namespace's never change another's", () => {
  it("B's events go where B's rules say, whatever A's rules match, in either order", () => {
    for (const routes of [
      [hostileA, ownB],
      [ownB, hostileA],
    ]) {
      const { table, skipped } = build(...routes);
      expect(skipped).toEqual([]);
      const b = table.webhook('hn-b')?.rules;
      expect(b?.evaluate(event('b-1', 5))).toEqual({ matched: ['pages'], destinations: ['b-pager'] });
      expect(b?.evaluate(event('b-2', 2))).toEqual({ matched: [], destinations: ['b-tickets'] });
      // A's own rules hold for A's events alone.
      const a = table.webhook('hn-a')?.rules;
      expect(a?.evaluate(event('b-1', 5))).toEqual({ matched: ['drop-b'], destinations: [], droppedBy: 'drop-b' });
      expect(a?.evaluate(event('web-1', 2)).destinations).toEqual(['a-sink']);
    }
  });

  it("B without rules keeps its destinations beside A's rules", () => {
    const { table } = build(hostileA, route('plain-b', 'team-b', { destinations: ['b-tickets'] }));
    const b = table.webhook('plain-b');
    expect(b?.rules).toBeUndefined();
    expect(b?.destinations).toEqual(['b-tickets']);
  });

  it.each([
    ["another namespace's integration", 'hn-b'],
    ["another namespace's integration, qualified", 'team-b/hn-b'],
    ['a destination qualified by another namespace', 'team-b/b-pager'],
    ['a destination this ingester does not have', 'team-b-pager'],
  ])("refuses a rule naming %s, and publishes B's route regardless", (_, named) => {
    const a = route('hn-a', 'team-a', { rules: [{ name: 'steal', destinations: [named] }] });
    const { table, skipped } = build(a, ownB);
    expect(table.webhook('hn-a')).toBeUndefined();
    expect(skipped).toEqual([
      {
        source: '#0',
        // A name qualified by a namespace is a team's own destination (a Destination resource): only the route's namespace's.
        reason: named.includes('/')
          ? `rules[0] (rule steal): destinations of another namespace: ${named}`
          : `rules[0] (rule steal): unknown destination ${named} (configured: am, a-sink, b-pager, b-tickets)`,
      },
    ]);
    expect(table.webhook('hn-b')?.rules?.destinationsOf(event('b-1', 5))).toEqual(['b-pager']);
  });
});
