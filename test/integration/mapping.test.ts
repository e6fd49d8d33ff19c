/**
 * spec.mapping against the real API server: the operator compiles the mapping and runs its tests
 * before publishing; an invalid expression or a failing test gives Ready=False InvalidMapping with
 * an Event, and the ingester keeps serving the previous mapping until the resource is fixed.
 */
import { jest } from '@jest/globals';
import type { V1Secret } from '@kubernetes/client-node';
import { apply, kubectl, type Proc, webhookReady } from './support/cluster.js';
import { operatorSuite } from './support/suite.js';
import { waitFor } from '../support/waiting.js';

jest.setTimeout(120_000);

const suite = operatorSuite('team-map');
const { core } = suite;
const [team] = suite.tenants;
let ingester: Proc;

const AM_PAYLOAD = {
  receiver: 'intake',
  status: 'firing',
  version: '4',
  groupKey: '{}:{alertname="Down"}',
  externalURL: 'http://am',
  alerts: [
    {
      status: 'firing',
      labels: { alertname: 'Down', instance: 'web-1', severity: 'critical' },
      annotations: {},
      startsAt: '2026-11-22T20:00:00Z',
      endsAt: '0001-01-01T00:00:00Z',
      fingerprint: 'f00d',
    },
  ],
};

const resource = (mapping: string) => `apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: mapped, namespace: ${team}}
spec:
  mapping:
${mapping.replace(/^/gm, '    ')}
`;

const ready = () => webhookReady(team, 'mapped');

async function authorization(): Promise<string> {
  const secret = await waitFor(
    'credentials Secret',
    async () => {
      try {
        return await core.readNamespacedSecret({ namespace: team, name: 'intake-webhook-mapped' });
      } catch {
        return undefined;
      }
    },
    10_000,
  );
  return Buffer.from((secret as V1Secret).data?.authorization ?? '', 'base64').toString('utf8');
}

/** What the ingester currently maps the Alertmanager payload with, via a dry run. */
async function dryRun(auth: string): Promise<{ status: number; mapping?: string; success?: boolean }> {
  const res = await fetch(`${ingester.url}/events/webhook_mapped?dryRun=true`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/json' },
    body: JSON.stringify(AM_PAYLOAD),
  });
  const body = (await res.json()) as { mapping?: string; success?: boolean };
  return { status: res.status, ...body };
}

beforeAll(async () => {
  await suite.startOperator();
  ingester = await suite.startIngester();
});

describe('WebhookIntegration spec.mapping', () => {
  it('publishes a preset whose tests pass, and the ingester maps with it', async () => {
    await apply(
      resource(`preset: alertmanager
tests:
  - input: ${JSON.stringify(AM_PAYLOAD)}
    expect: [{source: web-1, severity: 5, signature: "alertmanager:f00d"}]`),
    );
    await waitFor('Ready', async () => (await ready())?.status === 'True', 10_000);
    const auth = await authorization();
    await waitFor('mapped by the preset', async () => (await dryRun(auth)).mapping === 'preset alertmanager', 5000);
    const res = await fetch(`${ingester.url}/events/webhook_mapped`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify(AM_PAYLOAD),
    });
    expect(res.status).toBe(200);
  });

  it('gives InvalidMapping with the JSONata code and position for an invalid expression, and keeps the previous mapping', async () => {
    await apply(resource(`expression: '{"source": foo'`));
    const condition = await waitFor(
      'InvalidMapping',
      async () => ((await ready())?.reason === 'InvalidMapping' ? ready() : undefined),
      10_000,
    );
    expect(condition).toMatchObject({
      status: 'False',
      message: 'spec.mapping: S0203 at 14: Expected "}" before end of expression',
    });
    const events = await kubectl([
      'get',
      'events',
      '-n',
      team,
      '--field-selector',
      'involvedObject.name=mapped,reason=InvalidMapping',
      '-o',
      'jsonpath={.items[*].message}',
    ]);
    expect(events.stdout).toContain('S0203 at 14');
    expect(await dryRun(await authorization())).toMatchObject({
      status: 200,
      success: true,
      mapping: 'preset alertmanager',
    });
  });

  it('gives InvalidMapping with the first difference for a failing test, and keeps the previous mapping', async () => {
    await apply(
      resource(`expression: '{"source": alerts[0].labels.instance, "severity": "warning"}'
tests:
  - input: ${JSON.stringify(AM_PAYLOAD)}
    expect: {severity: 5}`),
    );
    await waitFor(
      'failing test reported',
      async () => (await ready())?.message.includes('tests[0]: event 0: severity: expected 5, got "warning"'),
      10_000,
    );
    expect((await ready())?.reason).toBe('InvalidMapping');
    expect((await dryRun(await authorization())).mapping).toBe('preset alertmanager');
  });

  it('turns Ready and serves the new mapping once fixed', async () => {
    await apply(
      resource(`expression: '{"source": alerts[0].labels.instance, "severity": "critical"}'
tests:
  - input: ${JSON.stringify(AM_PAYLOAD)}
    expect: {source: web-1, severity: critical}`),
    );
    await waitFor('Ready again', async () => (await ready())?.status === 'True', 10_000);
    expect((await ready())?.status).toBe('True');
    const auth = await authorization();
    await waitFor('new mapping served', async () => (await dryRun(auth)).mapping === 'expression', 5000);
    expect((await dryRun(auth)).mapping).toBe('expression');
  });
});
