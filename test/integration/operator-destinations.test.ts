/**
 * spec.destinations against a real kube-apiserver: the CRD's validation, the operator checking
 * the names against its --destinations before it publishes a route, and an ingester configured
 * with those destinations serving the route.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import type { V1Secret } from '@kubernetes/client-node';
import { apply, kubectl, postEvent, type Proc, runIntake, webhookReady } from './support/cluster.js';
import { operatorSuite } from './support/suite.js';
import { waitFor } from '../support/waiting.js';

jest.setTimeout(60_000);

const suite = operatorSuite('team-dest');
const { system, core } = suite;
const [team] = suite.tenants;
let ingester: Proc;
const dir = mkdtempSync(join(tmpdir(), 'intake-it-dest-'));

const webhook = (name: string, spec: string) => `apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: ${name}, namespace: ${team}}
spec: ${spec}
`;
const readyOf = (name: string) => webhookReady(team, name);
/** The route document the operator published for an integration, if any. */
const routeOf = async (name: string): Promise<Record<string, unknown> | undefined> => {
  const secrets = await core.listNamespacedSecret({ namespace: system, labelSelector: 'intake.dev/route=true' });
  const routes = secrets.items.map(
    (s: V1Secret) =>
      JSON.parse(Buffer.from(s.data?.['route.json'] ?? '', 'base64').toString('utf8')) as Record<string, unknown>,
  );
  return routes.find((r) => r.name === name && r.namespace === team);
};

beforeAll(async () => {
  await suite.startOperator(['--destinations', 'alertmanager,tickets']);
  // The ingesters' side of the same names (nothing listens on port 9: delivery is not tested here).
  const config = join(dir, 'intake.yaml');
  writeFileSync(
    config,
    `authThrottle: {failures: 1000000, window: 1m, block: 1s}
spool: {path: ${join(dir, 'spool')}}
destinations:
  - {name: alertmanager, default: true, alertmanager: {urls: ['http://127.0.0.1:9']}}
  - {name: tickets, http: {url: 'http://127.0.0.1:9/hooks'}}
`,
  );
  ingester = await suite.startIngester(['--config', config]);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('WebhookIntegration spec.destinations', () => {
  it('gives Ready=False UnknownDestination for a name the ingesters do not have, and publishes no route', async () => {
    await apply(webhook('paging', '{destinations: [alertmanager, pager]}'));
    const ready = await waitFor(
      'UnknownDestination',
      async () => {
        const r = await readyOf('paging');
        return r?.reason === 'UnknownDestination' ? r : undefined;
      },
      5000,
    );
    expect(ready).toMatchObject({
      status: 'False',
      message: 'spec.destinations: unknown destination pager (configured: alertmanager, tickets)',
    });
    expect(await routeOf('paging')).toBeUndefined();
  });

  it('publishes the route with its destinations once the names are fixed', async () => {
    await apply(webhook('paging', '{destinations: [alertmanager, tickets]}'));
    await waitFor('Ready=True', async () => (await readyOf('paging'))?.status === 'True', 5000);
    expect((await routeOf('paging'))?.destinations).toEqual(['alertmanager', 'tickets']);
  });

  it('has its route served by an ingester configured with those destinations', async () => {
    const secret = await waitFor(
      'credentials',
      () => core.readNamespacedSecret({ namespace: team, name: 'intake-webhook-paging' }).catch(() => undefined),
      5000,
    );
    const authorization = Buffer.from(secret.data?.authorization ?? '', 'base64').toString('utf8');
    await waitFor('event accepted', async () => (await postEvent(ingester.url, 'paging', authorization)) === 200, 5000);
    expect(ingester.output()).not.toMatch(/route skipped|unknown destination/);
  });

  it('keeps the published route when a destination becomes unknown', async () => {
    await apply(webhook('paging', '{destinations: [chat]}'));
    await waitFor('UnknownDestination', async () => (await readyOf('paging'))?.reason === 'UnknownDestination', 5000);
    expect((await routeOf('paging'))?.destinations).toEqual(['alertmanager', 'tickets']);
  });

  it('publishes no destinations for an integration that names none (the ingesters use their defaults)', async () => {
    await apply(webhook('defaults', '{}'));
    await waitFor('Ready=True', async () => (await readyOf('defaults'))?.status === 'True', 5000);
    expect(await routeOf('defaults')).not.toHaveProperty('destinations');
  });

  it('is refused by the API server when a name is not a destination name, or is repeated', async () => {
    const badName = await kubectl(['apply', '-f', '-'], webhook('bad', '{destinations: [Tickets_1]}'));
    expect(badName.code).not.toBe(0);
    expect(badName.stderr).toContain('spec.destinations[0]');
    const repeated = await kubectl(['apply', '-f', '-'], webhook('bad', '{destinations: [tickets, tickets]}'));
    expect(repeated.code).not.toBe(0);
    expect(repeated.stderr).toMatch(/spec\.destinations\[1\]: Duplicate value/);
  });
});

describe('WebhookIntegration spec.rules', () => {
  it('is refused by the API server, naming the rule and the field, when a rule is malformed', async () => {
    const neither = await kubectl(
      ['apply', '-f', '-'],
      webhook('ruled', '{rules: [{destinations: [tickets]}, {name: x}]}'),
    );
    expect(neither.code).not.toBe(0);
    expect(neither.stderr).toContain('spec.rules[1]');
    expect(neither.stderr).toContain('a rule must name destinations or set drop to true (not both)');
    const two = await kubectl(
      ['apply', '-f', '-'],
      webhook('ruled', "{rules: [{match: {source: {equals: a, regex: 'b.*'}}, destinations: [tickets]}]}"),
    );
    expect(two.code).not.toBe(0);
    expect(two.stderr).toMatch(/spec\.rules\[0\]\.match\.source: Too many: 2: must have at most 1 items?/);
    const severity = await kubectl(
      ['apply', '-f', '-'],
      webhook('ruled', '{rules: [{match: {severity: {min: huge}}, drop: true}]}'),
    );
    expect(severity.code).not.toBe(0);
    expect(severity.stderr).toContain('spec.rules[0].match.severity.min: Unsupported value: "huge"');
    const dropContinue = await kubectl(
      ['apply', '-f', '-'],
      webhook('ruled', '{rules: [{drop: true, continue: true}]}'),
    );
    expect(dropContinue.code).not.toBe(0);
    expect(dropContinue.stderr).toContain('spec.rules[0].continue');
  });

  it('gives Ready=False InvalidSpec naming the rule and the field for a regex that is not linear, and publishes nothing', async () => {
    await apply(
      webhook(
        'ruled',
        "{rules: [{destinations: [tickets], match: {severity: {min: major}}}, {name: backref, match: {customInfo: {team: {regex: '(a)\\1'}}}, drop: true}]}",
      ),
    );
    const ready = await waitFor(
      'InvalidSpec',
      async () => {
        const r = await readyOf('ruled');
        return r?.reason === 'InvalidSpec' ? r : undefined;
      },
      5000,
    );
    expect(ready?.status).toBe('False');
    expect(ready?.message).toMatch(
      /^cannot be published: spec\.rules\.1\.match\.customInfo\.team\.regex \(rule backref\) cannot be matched in linear time/,
    );
    expect(await routeOf('ruled')).toBeUndefined();
  });

  it('gives Ready=False UnknownDestination naming the rule for a destination the ingesters do not have', async () => {
    await apply(webhook('ruled', '{rules: [{name: pages, destinations: [pager]}]}'));
    const ready = await waitFor(
      'UnknownDestination',
      async () => {
        const r = await readyOf('ruled');
        return r?.reason === 'UnknownDestination' ? r : undefined;
      },
      5000,
    );
    expect(ready?.message).toBe(
      'spec.rules[0] (rule pages).destinations: unknown destination pager (configured: alertmanager, tickets)',
    );
  });

  it('publishes valid rules in the route, and the ingester serves it', async () => {
    const rules = [
      { name: 'pages', match: { severity: { min: 'major' } }, destinations: ['alertmanager'] },
      { match: { source: { regex: 'test-.*' } }, drop: true },
    ];
    await apply(webhook('ruled', JSON.stringify({ destinations: ['tickets'], rules })));
    await waitFor('Ready=True', async () => (await readyOf('ruled'))?.status === 'True', 5000);
    expect((await routeOf('ruled'))?.rules).toEqual(rules);
    const secret = await waitFor(
      'credentials',
      () => core.readNamespacedSecret({ namespace: team, name: 'intake-webhook-ruled' }).catch(() => undefined),
      5000,
    );
    const authorization = Buffer.from(secret.data?.authorization ?? '', 'base64').toString('utf8');
    await waitFor('event accepted', async () => (await postEvent(ingester.url, 'ruled', authorization)) === 200, 5000);
    expect(ingester.output()).not.toMatch(/route skipped/);
  });
});

describe('intake operator --destinations', () => {
  it('refuses a name that cannot be a destination name, before connecting anywhere', async () => {
    const { code, stderr } = await runIntake([
      'operator',
      '--namespace',
      system,
      '--public-base-url',
      'https://intake.test',
      '--destinations',
      'alertmanager,Tickets_1',
    ]);
    expect(code).toBe(2);
    expect(stderr).toBe(
      'intake: --destinations: "Tickets_1" is not a destination name (lowercase letters, digits and dashes, at most 63)\n',
    );
  });
});
