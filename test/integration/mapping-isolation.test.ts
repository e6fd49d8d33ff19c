/**
 * The operator runs tenants' spec.mapping.tests in its own process: a
 * tenant's expression that rewrites a JSONata built-in must not change another tenant's preset
 * there, and one that runs a single endless built-in call must not hold the operator.
 */
import { jest } from '@jest/globals';
import { apply, uniqueName, webhookReady as ready } from './support/cluster.js';
import { operatorSuite } from './support/suite.js';
import { waitFor } from '../support/waiting.js';

jest.setTimeout(180_000);

const suite = operatorSuite('team-hostile', 'team-nagios');
const [teamA, teamB] = suite.tenants;

const resource = (namespace: string, name: string, mapping: string) => `apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: ${name}, namespace: ${namespace}}
spec:
  name: ${name}
  mapping:
${mapping.replace(/^/gm, '    ')}
`;

const NAGIOS_TESTS = `preset: nagios
tests:
  - input: {notification_type: PROBLEM, host: web-9, service: HTTP, state: CRITICAL}
    expect: {severity: 5}
  - input: {notification_type: PROBLEM, host: web-9, service: HTTP, state: critical}
    expect: {severity: 5}`;

beforeAll(async () => {
  await suite.startOperator();
});

it("a tenant's test that rewrites $uppercase fails for that tenant and leaves another tenant's nagios preset intact", async () => {
  const rewrite = uniqueName('rewrite');
  await apply(
    resource(
      teamA,
      rewrite,
      `expression: '$ ~> |$uppercase|function($x){"OK"}|'
tests:
  - input: {a: 1}
    expect: {a: 1}`,
    ),
  );
  const condition = await waitFor('the hostile mapping is judged', async () => ready(teamA, rewrite), 30_000);
  expect(condition).toMatchObject({ status: 'False', reason: 'InvalidMapping' });

  const nagios = uniqueName('nagios');
  await apply(resource(teamB, nagios, NAGIOS_TESTS));
  const published = await waitFor('the nagios preset is judged', async () => ready(teamB, nagios), 30_000);
  expect(published).toMatchObject({ status: 'True' });
});

it('a test running one endless built-in call is stopped at the limit while the operator goes on', async () => {
  const pad = uniqueName('pad');
  await apply(
    resource(
      teamA,
      pad,
      `expression: '[1..100000].$pad("", 4000000, "x")'
tests:
  - input: {a: 1}
    expect: {a: 1}`,
    ),
  );
  const nagios = uniqueName('nagios');
  await apply(resource(teamB, nagios, NAGIOS_TESTS));
  const started = Date.now();
  const other = await waitFor('the other tenant is published', async () => ready(teamB, nagios), 60_000);
  expect(other).toMatchObject({ status: 'True' });
  const stopped = await waitFor('the endless test is stopped', async () => ready(teamA, pad), 60_000);
  expect(stopped).toMatchObject({
    status: 'False',
    reason: 'InvalidMapping',
    message: expect.stringContaining('D1012'),
  });
  // Before: the operator's event loop was held for about 13 s.
  expect(Date.now() - started).toBeLessThan(30_000);
});
