/**
 * The ingester in Kubernetes mode reads its route Secrets a page at a time and asks for the next
 * page as soon as the current one's continue token has arrived (kube/api-client.ts): against the
 * real API server, which writes a list's metadata before its items, every route of a list of
 * several pages is published, whatever page it came in, and an unusable document in one of them
 * is skipped without losing its neighbours.
 */
import { jest } from '@jest/globals';
import { postEvent, type Proc } from './support/cluster.js';
import { apiKeyRoute, createSecrets, routeSecret, webhookRoute } from './support/route-secrets.js';
import { operatorSuite } from './support/suite.js';
import { waitFor } from '../support/waiting.js';
import { ROUTE_LABEL, ROUTE_SECRET_KEY } from '../../api/route.js';

jest.setTimeout(180_000);

/** Integrations and as many API keys: 1,100 route Secrets, three pages of 500. */
const INTEGRATIONS = 550;

const suite = operatorSuite('team-pages');
const [team] = suite.tenants;
let ingester: Proc;

const basic = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

async function gauge(name: string): Promise<number> {
  const text = await (await fetch(`${ingester.adminUrl}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))) sum += Number(m[1]);
  return sum;
}

beforeAll(async () => {
  const secrets = [];
  for (let i = 0; i < INTEGRATIONS; i++) {
    secrets.push(routeSecret(`route-hook-${i}`, webhookRoute(`${team}-hook-${i}`, team, `u${i}`, `pw-${i}`)));
    secrets.push(routeSecret(`route-key-${i}`, apiKeyRoute(`key-${i}`, team)));
  }
  secrets.push({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'route-broken', labels: { [ROUTE_LABEL]: 'true' } },
    data: { [ROUTE_SECRET_KEY]: Buffer.from('{"not": "a route"').toString('base64') },
  });
  await createSecrets(suite.core, suite.system, secrets);
  ingester = await suite.startIngester();
  await waitFor('the ingester ready', async () => (await fetch(`${ingester.adminUrl}/readyz`)).ok, 60_000, 100);
});

it('publishes every route of a list of several pages, and skips only the unusable document', async () => {
  expect(await gauge('intake_routes')).toBe(2 * INTEGRATIONS);
  // One integration from each page (Secrets are listed by name).
  for (const i of [0, 137, 274, 411, 549])
    expect(await postEvent(ingester.url, `${team}-hook-${i}`, basic(`u${i}`, `pw-${i}`))).toBe(200);
  expect(await postEvent(ingester.url, `${team}-hook-3`, basic('u3', 'wrong'))).toBe(401);
});
