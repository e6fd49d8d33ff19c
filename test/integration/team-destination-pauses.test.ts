/**
 * A runtime pause of a team's destination holds as soon as the destination is delivered to, not
 * at the pause's next change, against a real kube-apiserver: standalone, a pause kept before a
 * restart holds on the ingester started again (the team's destinations arrive after the kept
 * pauses are read); with the bus (a real nats-server), a destination added after both replicas
 * connected and paused through one holds on the other.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import type { V1Secret } from '@kubernetes/client-node';
import { apply, postEvent, type Proc, webhookReady } from './support/cluster.js';
import { operatorSuite } from './support/suite.js';
import { waitFor } from '../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../e2e/support/event-receiver.js';
import { startNats, type RunningNats } from '../e2e/support/nats-server.js';

jest.setTimeout(120_000);

const suite = operatorSuite('team-p', 'team-q');
const { core } = suite;
const [teamP, teamQ] = suite.tenants;
const dir = mkdtempSync(join(tmpdir(), 'intake-it-team-pauses-'));
let receiver: EventReceiver;
let nats: RunningNats;

/** Integration names are one namespace for the whole ingester: each test has its own. */
const resources = (ns: string, url: string, integration: string) => `apiVersion: intake.dev/v1alpha1
kind: Destination
metadata: {name: pager, namespace: ${ns}}
spec:
  http: {url: '${url}'}
---
apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: ${integration}, namespace: ${ns}}
spec: {destinations: [pager]}
`;

const authorizationOf = async (ns: string, integration: string): Promise<string> => {
  const secret: V1Secret = await waitFor(
    'credentials',
    () => core.readNamespacedSecret({ namespace: ns, name: `intake-webhook-${integration}` }).catch(() => undefined),
    10_000,
  );
  return Buffer.from(secret.data?.authorization ?? '', 'base64').toString('utf8');
};

const config = (name: string, body: string): string => {
  const file = join(dir, name);
  writeFileSync(
    file,
    `authThrottle: {failures: 1000000, window: 1m, block: 1s}
# The receiver is on loopback, which the address guard refuses to a team's URL by default.
addressGuard: {allowedCIDRs: [127.0.0.0/8, '::1/128']}
${body}`,
  );
  return file;
};

const adminPost = async (ing: Proc, path: string): Promise<number> => {
  const res = await fetch(`${ing.adminUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-intake-admin': 'true' },
    body: '{}',
  });
  await res.arrayBuffer();
  return res.status;
};

const pausedOf = async (ing: Proc, destination: string): Promise<boolean | undefined> => {
  const res = await fetch(`${ing.adminUrl}/destinations/${encodeURIComponent(destination)}`);
  return res.ok ? ((await res.json()) as { paused: boolean }).paused : undefined;
};

const sent = (source: string): boolean => receiver.requests.some((r) => r.events.some((e) => e.source === source));

const post = async (ing: Proc, integration: string, authorization: string, source: string): Promise<void> => {
  const res = await fetch(`${ing.url}/events/webhook_${integration}`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ source, severity: 'critical' }),
  });
  await res.arrayBuffer();
  expect(res.status).toBe(200);
};

beforeAll(async () => {
  receiver = await startEventReceiver();
  nats = await startNats();
  await suite.startOperator();
});

afterAll(async () => {
  await receiver?.close();
  await nats?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('standalone: a pause kept before a restart holds once the team destination arrives again', async () => {
  const file = config('standalone.yaml', `spool: {path: ${join(dir, 'storage')}}\n`);
  const first = await suite.startIngester(['--config', file]);
  await apply(resources(teamP, receiver.url, 'p-pages'));
  await waitFor('integration Ready', async () => (await webhookReady(teamP, 'p-pages'))?.status === 'True', 15_000);
  const authorization = await authorizationOf(teamP, 'p-pages');
  const destination = `${teamP}/pager`;
  await waitFor('route served', async () => (await postEvent(first.url, 'p-pages', authorization)) === 200, 15_000);
  await waitFor('delivered', async () => receiver.requests.length > 0, 15_000);
  expect(await adminPost(first, `/destinations/${encodeURIComponent(destination)}/pause`)).toBe(200);
  await first.stop();

  const second = await suite.startIngester(['--config', file]);
  await waitFor('the team destination added', async () => (await pausedOf(second, destination)) !== undefined, 15_000);
  expect(await pausedOf(second, destination)).toBe(true);
  await waitFor('route served', async () => (await postEvent(second.url, 'p-pages', authorization)) === 200, 15_000);
  await post(second, 'p-pages', authorization, 'after-restart');
  await new Promise((r) => setTimeout(r, 2000));
  expect(sent('after-restart')).toBe(false);
  expect(await adminPost(second, `/destinations/${encodeURIComponent(destination)}/resume`)).toBe(200);
  await waitFor('delivered on resume', async () => sent('after-restart'), 15_000);
  await second.stop();
});

it('with the bus: a team destination added after the replicas connected, paused through one, holds on the other', async () => {
  const file = config('bus.yaml', `sinks: {jetstream: {url: '${nats.url}', timeout: 2s, reconnectWait: 100ms}}\n`);
  const a = await suite.startIngester(['--config', file]);
  const b = await suite.startIngester(['--config', file]);
  await apply(resources(teamQ, receiver.url, 'q-pages'));
  const destination = `${teamQ}/pager`;
  for (const ing of [a, b])
    await waitFor('the team destination added', async () => (await pausedOf(ing, destination)) === false, 15_000);
  expect(await adminPost(a, `/destinations/${encodeURIComponent(destination)}/pause`)).toBe(200);
  await waitFor('paused on the other replica', async () => (await pausedOf(b, destination)) === true, 10_000);
  await waitFor('integration Ready', async () => (await webhookReady(teamQ, 'q-pages'))?.status === 'True', 15_000);
  const authorization = await authorizationOf(teamQ, 'q-pages');
  await waitFor('route served', async () => (await postEvent(b.url, 'q-pages', authorization)) === 200, 15_000);
  await post(b, 'q-pages', authorization, 'paused-on-bus');
  await new Promise((r) => setTimeout(r, 2000));
  expect(sent('paused-on-bus')).toBe(false);
  expect(await adminPost(b, `/destinations/${encodeURIComponent(destination)}/resume`)).toBe(200);
  await waitFor('delivered on resume', async () => sent('paused-on-bus'), 15_000);
  expect(await pausedOf(a, destination)).toBe(false);
});
