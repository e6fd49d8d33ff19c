/**
 * A team's own destinations against a real kube-apiserver: the operator publishes a namespace's
 * `Destination` with its Secret's credentials, an integration of the namespace names it (the
 * namespace's own winning over the platform's destination of the same name), an ingester in
 * Kubernetes mode delivers to it, and removes it live when it is deleted. And the chart's roles:
 * a team reads and writes its own Destinations, never another namespace's, and a Destination
 * reads Secrets of its own namespace only.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execFile } from 'node:child_process';
import { jest } from '@jest/globals';
import { parseAllDocuments, stringify as stringifyYaml } from 'yaml';
import type { V1Secret } from '@kubernetes/client-node';
import { apply, kubectl, postEvent, ROOT, type Proc, webhookReady } from './support/cluster.js';
import { operatorSuite } from './support/suite.js';
import { startTeamDeliveryPath } from './support/team-destinations.js';
import { waitFor } from '../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../e2e/support/event-receiver.js';
import { startNats, type RunningNats } from '../e2e/support/nats-server.js';

jest.setTimeout(90_000);

const suite = operatorSuite('team-a', 'team-b');
const { system, core, custom } = suite;
const [teamA, teamB] = suite.tenants;
const dir = mkdtempSync(join(tmpdir(), 'intake-it-team-dest-'));
let ingester: Proc;
let teamReceiver: EventReceiver;
let platformReceiver: EventReceiver;

const integration = (ns: string, name: string, destinations: string[]) => `apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: ${name}, namespace: ${ns}}
spec: {destinations: ${JSON.stringify(destinations)}}
`;
const httpDestination = (ns: string, name: string, url: string, extra = '') => `apiVersion: intake.dev/v1alpha1
kind: Destination
metadata: {name: ${name}, namespace: ${ns}}
spec:
  http:
    url: ${url}
    basicAuth: {username: intake, secretRef: {name: receiver-creds}}${extra}
`;

interface DestinationObject {
  status?: {
    destinationName?: string;
    conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
  };
}
const destinationOf = async (ns: string, name: string): Promise<DestinationObject | undefined> =>
  (await custom
    .getNamespacedCustomObject({
      group: 'intake.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'destinations',
      name,
    })
    .catch(() => undefined)) as DestinationObject | undefined;
const conditionOf = async (ns: string, name: string, type: string) =>
  (await destinationOf(ns, name))?.status?.conditions?.find((c) => c.type === type);

const routeOf = async (ns: string, name: string): Promise<{ destinations?: string[] } | undefined> => {
  const secrets = await core.listNamespacedSecret({ namespace: system, labelSelector: 'intake.dev/route=true' });
  return secrets.items
    .map((s: V1Secret) => JSON.parse(Buffer.from(s.data?.['route.json'] ?? '', 'base64').toString('utf8')))
    .find((r: { name: string; namespace: string }) => r.name === name && r.namespace === ns);
};

const authorizationOf = async (ns: string, name: string): Promise<string> => {
  const secret = await waitFor(
    'credentials',
    () => core.readNamespacedSecret({ namespace: ns, name: `intake-webhook-${name}` }).catch(() => undefined),
    10_000,
  );
  return Buffer.from(secret.data?.authorization ?? '', 'base64').toString('utf8');
};

/** Posts one event with a source of its own and waits until `receiver` got it. */
async function deliveredTo(receiver: EventReceiver, integrationName: string, authorization: string, source: string) {
  const res = await fetch(`${ingester.url}/events/webhook_${integrationName}`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ source, severity: 'critical' }),
  });
  expect(res.status).toBe(200);
  return waitFor(
    `${source} delivered`,
    async () => receiver.requests.find((r) => r.events.some((e) => e.source === source)),
    15_000,
  );
}

beforeAll(async () => {
  teamReceiver = await startEventReceiver();
  platformReceiver = await startEventReceiver();
  ingester = await startTeamDeliveryPath(suite, dir, { name: 'tickets', url: platformReceiver.url });
  await apply(`apiVersion: v1
kind: Secret
metadata: {name: receiver-creds, namespace: ${teamA}}
stringData: {password: team-a-secret}
`);
});

afterAll(async () => {
  await teamReceiver?.close();
  await platformReceiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a team destination', () => {
  it('is refused by the API server unless exactly one kind is given, and with a header intake sets', async () => {
    const neither = await kubectl(
      ['apply', '-f', '-'],
      `apiVersion: intake.dev/v1alpha1\nkind: Destination\nmetadata: {name: bad, namespace: ${teamA}}\nspec: {}\n`,
    );
    expect(neither.code).not.toBe(0);
    expect(neither.stderr).toContain('give exactly one of alertmanager or http');
    const header = await kubectl(
      ['apply', '-f', '-'],
      httpDestination(teamA, 'bad', 'http://127.0.0.1:9', '\n    headers: {Authorization: x}'),
    );
    expect(header.code).not.toBe(0);
    expect(header.stderr).toContain('this header is set by intake');
  });

  it("receives an event of its namespace's integration naming it, with the Secret's credentials, instead of the platform's destination of the same name", async () => {
    await apply(httpDestination(teamA, 'tickets', teamReceiver.url));
    await waitFor(
      'Destination Ready',
      async () => (await conditionOf(teamA, 'tickets', 'Ready'))?.status === 'True',
      10_000,
    );
    expect(await destinationOf(teamA, 'tickets')).toMatchObject({ status: { destinationName: `${teamA}/tickets` } });
    expect(await conditionOf(teamA, 'tickets', 'Paused')).toMatchObject({ status: 'False' });
    expect(await conditionOf(teamA, 'tickets', 'CircuitOpen')).toMatchObject({ status: 'Unknown' });

    await apply(integration(teamA, 'alerts', ['tickets']));
    await waitFor('integration Ready', async () => (await webhookReady(teamA, 'alerts'))?.status === 'True', 10_000);
    expect((await routeOf(teamA, 'alerts'))?.destinations).toEqual([`${teamA}/tickets`]);
    const authorization = await authorizationOf(teamA, 'alerts');
    await waitFor('route served', async () => (await postEvent(ingester.url, 'alerts', authorization)) === 200, 10_000);

    const request = await deliveredTo(teamReceiver, 'alerts', authorization, 'team-a-host-1');
    expect(request.headers.authorization).toBe(`Basic ${Buffer.from('intake:team-a-secret').toString('base64')}`);
    expect(platformReceiver.requests.some((r) => r.events.some((e) => e.source === 'team-a-host-1'))).toBe(false);
  });

  it("is not another namespace's: team B's integration naming the same name gets the platform's", async () => {
    await apply(integration(teamB, 'b-alerts', ['tickets']));
    await waitFor('integration Ready', async () => (await webhookReady(teamB, 'b-alerts'))?.status === 'True', 10_000);
    expect((await routeOf(teamB, 'b-alerts'))?.destinations).toEqual(['tickets']);
    const authorization = await authorizationOf(teamB, 'b-alerts');
    await waitFor(
      'route served',
      async () => (await postEvent(ingester.url, 'b-alerts', authorization)) === 200,
      10_000,
    );
    await deliveredTo(platformReceiver, 'b-alerts', authorization, 'team-b-host-1');
    expect(teamReceiver.requests.some((r) => r.events.some((e) => e.source === 'team-b-host-1'))).toBe(false);
  });

  it('shows Ready, Paused and Circuit in kubectl get', async () => {
    const r = await kubectl(['get', 'destinations', '-n', teamA]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^NAME\s+READY\s+PAUSED\s+CIRCUIT\s+LAST DELIVERY\s+BACKLOG\s+AGE/);
    expect(r.stdout).toMatch(/tickets\s+True\s+False\s+NotReported/);
  });

  it('gives the integrations naming a name that resolves to nothing Ready=False, naming it', async () => {
    await apply(integration(teamA, 'chatty', ['chat']));
    const ready = await waitFor(
      'UnknownDestination',
      async () => {
        const c = await webhookReady(teamA, 'chatty');
        return c?.reason === 'UnknownDestination' ? c : undefined;
      },
      10_000,
    );
    expect(ready.message).toBe(
      "spec.destinations: unknown destination chat (configured: tickets; the namespace's: tickets)",
    );
    // The Destination arriving publishes the integration.
    await apply(httpDestination(teamA, 'chat', teamReceiver.url));
    await waitFor('integration Ready', async () => (await webhookReady(teamA, 'chatty'))?.status === 'True', 10_000);
    expect((await routeOf(teamA, 'chatty'))?.destinations).toEqual([`${teamA}/chat`]);
  });

  it('is removed live when deleted: the name resolves to the platform destination again, and the ingester delivers there', async () => {
    const authorization = await authorizationOf(teamA, 'alerts');
    await kubectl(['delete', 'destination', 'tickets', '-n', teamA]);
    await waitFor(
      'route re-published',
      async () => (await routeOf(teamA, 'alerts'))?.destinations?.[0] === 'tickets',
      10_000,
    );
    await waitFor(
      'removed in the ingester',
      async () => ingester.output().includes('team destination removed'),
      10_000,
    );
    // The route may reach the ingester a moment after the removal: post until the platform's receiver gets one.
    await waitFor(
      'delivered to the platform destination',
      async () => {
        const source = `team-a-after-${Date.now()}`;
        const res = await fetch(`${ingester.url}/events/webhook_alerts`, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json' },
          body: JSON.stringify({ source, severity: 'critical' }),
        });
        await res.arrayBuffer();
        await new Promise((r) => setTimeout(r, 500));
        return platformReceiver.requests.some((r) => r.events.some((e) => e.source === source));
      },
      15_000,
    );
    const before = teamReceiver.requests.length;
    await deliveredTo(platformReceiver, 'alerts', authorization, 'team-a-after-removal');
    expect(
      teamReceiver.requests.slice(before).some((r) => r.events.some((e) => e.source === 'team-a-after-removal')),
    ).toBe(false);
    // No restart: the same process delivered before and after.
    expect(ingester.output()).toContain('team destination added');
  });
});

describe('a team destination delivered from the bus', () => {
  let nats: RunningNats;
  let busIngester: Proc;
  let receiver: EventReceiver;

  beforeAll(async () => {
    nats = await startNats();
    receiver = await startEventReceiver();
    const config = join(dir, 'bus.yaml');
    writeFileSync(
      config,
      `authThrottle: {failures: 1000000, window: 1m, block: 1s}
addressGuard: {allowedCIDRs: [127.0.0.0/8, '::1/128']}
sinks: {jetstream: {url: '${nats.url}', timeout: 2s, reconnectWait: 100ms}}
`,
    );
    busIngester = await suite.startIngester(['--config', config]);
  });

  afterAll(async () => {
    await receiver?.close();
    await nats?.stop();
  });

  it('is added while running, delivered to through its own consumers, and removed while running', async () => {
    await apply(`apiVersion: v1
kind: Secret
metadata: {name: receiver-creds, namespace: ${teamB}}
stringData: {password: team-b-secret}
`);
    await apply(httpDestination(teamB, 'pager', receiver.url));
    await apply(integration(teamB, 'b-pages', ['pager']));
    await waitFor('integration Ready', async () => (await webhookReady(teamB, 'b-pages'))?.status === 'True', 10_000);
    await waitFor('added', async () => busIngester.output().includes(`"destination":"${teamB}/pager"`), 10_000);
    const authorization = await authorizationOf(teamB, 'b-pages');
    const before = ingester;
    ingester = busIngester;
    try {
      await waitFor(
        'route served',
        async () => (await postEvent(ingester.url, 'b-pages', authorization)) === 200,
        10_000,
      );
      const request = await deliveredTo(receiver, 'b-pages', authorization, 'team-b-bus-1');
      expect(request.headers.authorization).toBe(`Basic ${Buffer.from('intake:team-b-secret').toString('base64')}`);

      await kubectl(['delete', 'destination', 'pager', '-n', teamB]);
      await waitFor(
        'removed in the ingester',
        async () => /"destination":"[^"]+\/pager".*team destination removed/.test(busIngester.output()),
        10_000,
      );
      const res = await fetch(`${ingester.url}/events/webhook_b-pages`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ source: 'team-b-bus-after', severity: 'critical' }),
      });
      expect(res.status).toBe(200);
      await new Promise((r) => setTimeout(r, 3000));
      expect(receiver.requests.some((r) => r.events.some((e) => e.source === 'team-b-bus-after'))).toBe(false);
    } finally {
      ingester = before;
    }
  });
});

describe("the chart's roles", () => {
  let userA: string;

  beforeAll(async () => {
    const rendered = await new Promise<string>((done, fail) =>
      execFile(
        resolve(ROOT, '.tools/bin/helm'),
        ['template', 'intake', resolve(ROOT, 'charts/intake')],
        { maxBuffer: 16 << 20 },
        (err, stdout) => (err ? fail(err) : done(stdout)),
      ),
    );
    const roles = parseAllDocuments(rendered)
      .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string } } | null)
      .filter((d) => d?.kind === 'ClusterRole' && ['intake-edit', 'intake-view'].includes(d.metadata?.name ?? ''));
    expect(roles).toHaveLength(2);
    await apply(roles.map((r) => stringifyYaml(r)).join('---\n'));
    // The test API server runs no aggregation controller: bind what edit aggregates (see console.test.ts).
    const editor = (ns: string, sa: string) => `apiVersion: v1
kind: ServiceAccount
metadata: {name: ${sa}, namespace: ${ns}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ${sa}-intake, namespace: ${ns}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: intake-edit}
subjects: [{kind: ServiceAccount, name: ${sa}, namespace: ${ns}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ${sa}-edit, namespace: ${ns}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: 'system:aggregate-to-edit'}
subjects: [{kind: ServiceAccount, name: ${sa}, namespace: ${ns}}]
`;
    await apply(`${editor(teamA, 'user-a')}---\n${editor(teamB, 'user-b')}`);
    await apply(`apiVersion: v1
kind: Secret
metadata: {name: b-only-creds, namespace: ${teamB}}
stringData: {password: team-b-secret}
`);
    const r = await kubectl(['create', 'token', 'user-a', '-n', teamA, '--duration', '1h']);
    if (r.code !== 0) throw new Error(r.stderr);
    userA = r.stdout.trim();
  });

  const asA = (args: string[], input?: string) => kubectl(['--token', userA, ...args], input);

  it('let a team write and read Destinations in its own namespace', async () => {
    const created = await asA(['apply', '-f', '-'], httpDestination(teamA, 'own', teamReceiver.url));
    expect(created.stderr).toBe('');
    expect((await asA(['get', 'destinations', '-n', teamA, '-o', 'name'])).stdout).toContain(
      'destination.intake.dev/own',
    );
  });

  it("refuse a team reading or writing another namespace's Destinations", async () => {
    await apply(httpDestination(teamB, 'b-own', 'http://127.0.0.1:9', '').replace('receiver-creds', 'b-only-creds'));
    const read = await asA(['get', 'destinations', '-n', teamB]);
    expect(read.code).not.toBe(0);
    expect(read.stderr).toMatch(/forbidden/);
    const write = await asA(['apply', '-f', '-'], httpDestination(teamB, 'sneaky', teamReceiver.url));
    expect(write.code).not.toBe(0);
    expect(write.stderr).toMatch(/forbidden/);
    const edit = await asA([
      'patch',
      'destination',
      'b-own',
      '-n',
      teamB,
      '--type=merge',
      '-p',
      '{"spec":{"suspend":true}}',
    ]);
    expect(edit.code).not.toBe(0);
    expect(edit.stderr).toMatch(/forbidden/);
    // Nor the documents the operator publishes (they hold the credentials): those live in the ingesters' namespace.
    const published = await asA(['get', 'secrets', '-n', system]);
    expect(published.code).not.toBe(0);
  });

  it("give a Destination no way to another namespace's Secret: a reference has no namespace, and the name is looked up in its own", async () => {
    const withNamespace = await asA(
      ['apply', '-f', '-'],
      httpDestination(teamA, 'borrow', teamReceiver.url).replace(
        'secretRef: {name: receiver-creds}',
        `secretRef: {name: b-only-creds, namespace: ${teamB}}`,
      ),
    );
    expect(withNamespace.code).not.toBe(0);
    expect(withNamespace.stderr).toContain('unknown field "spec.http.basicAuth.secretRef.namespace"');
    const byName = await asA(
      ['apply', '-f', '-'],
      httpDestination(teamA, 'borrow', teamReceiver.url).replace('receiver-creds', 'b-only-creds'),
    );
    expect(byName.code).toBe(0);
    const ready = await waitFor(
      'SecretNotFound',
      async () => {
        const c = await conditionOf(teamA, 'borrow', 'Ready');
        return c?.reason === 'SecretNotFound' ? c : undefined;
      },
      10_000,
    );
    expect(ready).toMatchObject({
      status: 'False',
      message: `Secret ${teamA}/b-only-creds named in spec.http.basicAuth.secretRef does not exist`,
    });
    // An integration naming it would deliver nowhere: it says so.
    await apply(integration(teamA, 'borrower', ['borrow']));
    const integrationReady = await waitFor(
      'DestinationNotReady',
      async () => {
        const c = await webhookReady(teamA, 'borrower');
        return c?.reason === 'DestinationNotReady' ? c : undefined;
      },
      10_000,
    );
    expect(integrationReady.message).toContain('Destination borrow is not published');
  });
});
