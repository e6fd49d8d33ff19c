/**
 * The ingester in Kubernetes mode updates its routing table route by route: a rotated password,
 * a new integration or a deleted one changes only that route's entries (intake_routes_placed_total
 * grows by the routes changed, not by the whole table), and the change is accepted within a
 * couple of seconds. Route Secrets are written directly, as the operator writes them.
 */
import { jest } from '@jest/globals';
import { postEvent, type Proc } from './support/cluster.js';
import { apiKeyRoute, createSecrets, replaceRoute, routeSecret, webhookRoute } from './support/route-secrets.js';
import { operatorSuite } from './support/suite.js';
import { waitFor } from '../support/waiting.js';

jest.setTimeout(120_000);

const ROUTES = 150;
/** Far above what a route change takes here (milliseconds), far below a rebuild of every route. */
const PROPAGATION_BOUND_MS = 5000;

const suite = operatorSuite('team-routes');
const [team] = suite.tenants;
let ingester: Proc;

const basic = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** Sum of a counter's samples on the admin port. */
async function counter(name: string): Promise<number> {
  const text = await (await fetch(`${ingester.adminUrl}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))) sum += Number(m[1]);
  return sum;
}

/** Milliseconds until `check` holds, polled every 20 ms; fails past the bound. */
async function timeUntil(what: string, check: () => Promise<boolean>): Promise<number> {
  const started = performance.now();
  await waitFor(what, check, PROPAGATION_BOUND_MS, 20);
  return performance.now() - started;
}

beforeAll(async () => {
  const secrets = [];
  for (let i = 0; i < ROUTES; i++) {
    secrets.push(routeSecret(`route-hook-${i}`, webhookRoute(`${team}-hook-${i}`, team, `u${i}`, `old-${i}`)));
    secrets.push(routeSecret(`route-key-${i}`, apiKeyRoute(`key-${i}`, team)));
  }
  await createSecrets(suite.core, suite.system, secrets);
  ingester = await suite.startIngester();
  await waitFor('every route published', async () => (await counter('intake_routes')) === 2 * ROUTES, 20_000);
});

it('a rotated password replaces only that route, accepted and the old one refused within the bound', async () => {
  const name = `${team}-hook-7`;
  expect(await postEvent(ingester.url, name, basic('u7', 'old-7'))).toBe(200);
  const placed = await counter('intake_routes_placed_total');

  await replaceRoute(suite.core, suite.system, 'route-hook-7', webhookRoute(name, team, 'u7', 'new-7'));
  const ms = await timeUntil(
    'new password accepted, old one refused',
    async () =>
      (await postEvent(ingester.url, name, basic('u7', 'new-7'))) === 200 &&
      (await postEvent(ingester.url, name, basic('u7', 'old-7'))) === 401,
  );
  expect(ms).toBeLessThan(PROPAGATION_BOUND_MS);
  // Only the rotated route was placed again, not the other 2 * ROUTES - 1.
  await new Promise((r) => setTimeout(r, 300));
  expect((await counter('intake_routes_placed_total')) - placed).toBeLessThanOrEqual(2);
  // Its neighbours are untouched and still answer.
  expect(await postEvent(ingester.url, `${team}-hook-8`, basic('u8', 'old-8'))).toBe(200);
});

it('a new and a deleted integration change only their own entries', async () => {
  const placed = await counter('intake_routes_placed_total');
  await createSecrets(suite.core, suite.system, [
    routeSecret('route-hook-new', webhookRoute(`${team}-hook-new`, team, 'unew', 'pw-new')),
  ]);
  await suite.core.deleteNamespacedSecret({ name: 'route-hook-9', namespace: suite.system });
  await timeUntil(
    'new one accepted, deleted one refused',
    async () =>
      (await postEvent(ingester.url, `${team}-hook-new`, basic('unew', 'pw-new'))) === 200 &&
      (await postEvent(ingester.url, `${team}-hook-9`, basic('u9', 'old-9'))) === 401,
  );
  await new Promise((r) => setTimeout(r, 300));
  expect((await counter('intake_routes_placed_total')) - placed).toBeLessThanOrEqual(2);
  expect(await counter('intake_routes')).toBe(2 * ROUTES);
  expect(await postEvent(ingester.url, `${team}-hook-10`, basic('u10', 'old-10'))).toBe(200);
});
