import type { Route } from '../../../../api/route.js';
import { RouteTable } from '../../../../ingester/routing/route-table.js';

const DESTINATIONS = [
  { name: 'am', default: true },
  { name: 'tickets', default: false },
  { name: 'pager', default: false },
];

const route = (extra: Partial<Route>): Route => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name: 'demo',
  namespace: 'ns',
  credentials: [{ username: 'u', secret: { plain: 'p' } }],
  ...extra,
});

const build = (r: Route) =>
  RouteTable.build([{ source: '#0', route: r }], { allowPlaintext: true, destinations: DESTINATIONS });

const event = { severity: 5, source: 'db', signature: 's', custom_info: {} };

describe('RouteTable with routing rules', () => {
  it('compiles the rules once, unmatched events going to the integration’s destinations', () => {
    const { table, skipped } = build(
      route({
        destinations: ['tickets'],
        rules: [{ match: { severity: { min: 'critical' } }, destinations: ['pager'] }],
      }),
    );
    expect(skipped).toEqual([]);
    const entry = table.webhook('demo');
    expect(entry?.rules?.destinationsOf(event)).toEqual(['pager']);
    expect(entry?.rules?.destinationsOf({ ...event, severity: 1 })).toEqual(['tickets']);
  });

  it('sends unmatched events to the platform’s defaults when the integration names none', () => {
    const { table } = build(route({ rules: [{ match: { source: { equals: 'x' } }, destinations: ['pager'] }] }));
    expect(table.webhook('demo')?.rules?.destinationsOf(event)).toEqual(['am']);
  });

  it('has no rules for an integration without them (a field read per event)', () => {
    expect(build(route({})).table.webhook('demo')?.rules).toBeUndefined();
    expect(build(route({ rules: [] })).table.webhook('demo')?.rules).toBeUndefined();
  });

  it('skips a route whose rule names a destination this ingester does not have, saying which', () => {
    const { table, skipped } = build(
      route({ rules: [{ destinations: ['pager'] }, { name: 'chats', destinations: ['chat', 'pager'] }] }),
    );
    expect(table.webhook('demo')).toBeUndefined();
    expect(skipped).toEqual([
      { source: '#0', reason: 'rules[1] (rule chats): unknown destination chat (configured: am, tickets, pager)' },
    ]);
  });
});
