/**
 * A team Destination's status on the real test API server: an ingester in Kubernetes mode (one
 * pod behind the ingester admin Service, reached through support/pod-network.ts) delivers to a
 * loopback receiver that fails, then recovers; the operator merges the replica's delivery report
 * every second into status.delivery and the CircuitOpen condition, which kubectl shows: the last
 * failure with the receiver's code and excerpt, the circuit Open, what waits, then the last
 * success, the counts and the circuit Closed. And a new password in the team's Secret (labelled
 * intake.dev/watch) reaches delivery within seconds, not at the next resync; so does an integration's
 * own password Secret (spec.credentials.secretRef).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import type { Condition, DestinationDelivery } from '../../api/v1alpha1/types.js';
import { waitFor } from '../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../e2e/support/event-receiver.js';
import { apply, kubectl, type Proc } from './support/cluster.js';
import { operatorSuite } from './support/suite.js';
import { startPodNetwork, type PodNetwork } from './support/pod-network.js';
import { ACTIVITY_EVERY_SECOND, ADMIN_PORT, applyAdminService } from './support/admin-service.js';

jest.setTimeout(180_000);

const suite = operatorSuite('team-a');
const { system, core, custom } = suite;
const [tenant] = suite.tenants;
const POD = '192.0.2.21';
const dir = mkdtempSync(join(tmpdir(), 'intake-it-dest-status-'));
let network: PodNetwork;
let ingester: Proc;
let operator: Proc;
let receiver: EventReceiver;

type DestinationObject = { status?: { delivery?: DestinationDelivery; conditions?: Condition[] } };
const destination = async (): Promise<DestinationObject> =>
  (await custom.getNamespacedCustomObject({
    group: 'intake.dev',
    version: 'v1alpha1',
    namespace: tenant,
    plural: 'destinations',
    name: 'tickets',
  })) as DestinationObject;
const circuitOf = (d: DestinationObject): Condition | undefined =>
  d.status?.conditions?.find((c) => c.type === 'CircuitOpen');

const secret = (password: string) => `apiVersion: v1
kind: Secret
metadata:
  name: receiver-creds
  namespace: ${tenant}
  labels: {intake.dev/watch: "true"}
stringData: {password: ${password}}
`;
const basicOf = (password: string): string => `Basic ${Buffer.from(`intake:${password}`).toString('base64')}`;

let authorization: string;
let sent = 0;
async function send(count: number): Promise<void> {
  const events = Array.from({ length: count }, () => ({ source: `host-${sent++}`, severity: 'critical' }));
  const res = await fetch(`${ingester.url}/events/webhook_status-alerts`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify(events),
  });
  expect(res.status).toBe(200);
}

beforeAll(async () => {
  network = await startPodNetwork();
  receiver = await startEventReceiver();
  const config = join(dir, 'intake.yaml');
  writeFileSync(
    config,
    `authThrottle: {failures: 1000000, window: 1m, block: 1s}
# The receiver is on loopback, which the address guard refuses to a team's URL by default.
addressGuard: {allowedCIDRs: [127.0.0.0/8]}
spool: {path: ${join(dir, 'storage')}}
`,
  );
  ingester = await suite.startIngester(['--config', config]);
  network.routes.set(`${POD}:${ADMIN_PORT}`, Number(new URL(ingester.adminUrl).port));
  await applyAdminService(system, [POD]);
  // The default resync (5m): a Secret's change must not wait for it.
  operator = await suite.startOperator(ACTIVITY_EVERY_SECOND, network.env);
  await apply(secret('first-password'));
  await apply(`apiVersion: intake.dev/v1alpha1
kind: Destination
metadata: {name: tickets, namespace: ${tenant}}
spec:
  http:
    url: ${receiver.url}
    basicAuth: {username: intake, secretRef: {name: receiver-creds}}
    timeout: 2s
  delivery: {maxAttempts: 100, backoffMin: 50ms, backoffMax: 200ms}
  circuitBreaker: {consecutiveFailures: 3, openFor: 2s}
---
apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: status-alerts, namespace: ${tenant}}
spec: {destinations: [tickets]}
`);
  const creds = await waitFor(
    'credentials',
    () => core.readNamespacedSecret({ namespace: tenant, name: 'intake-webhook-status-alerts' }).catch(() => undefined),
    30_000,
  );
  authorization = Buffer.from(creds.data?.authorization ?? '', 'base64').toString('utf8');
  // Published and delivered to: one event arrives before the receiver starts failing.
  await waitFor(
    'the first event delivered',
    async () => {
      if (receiver.requests.length === 0) await send(1).catch(() => undefined);
      return receiver.accepted.size > 0;
    },
    30_000,
    500,
  );
});

afterAll(async () => {
  await network?.close();
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("a team Destination's status", () => {
  it('shows the last failure with the code and excerpt, the circuit Open and the backlog, in kubectl too', async () => {
    receiver.failWith = { status: 503, body: 'down for maintenance \u001b[2J until noon' };
    await send(10);
    const failing = await waitFor(
      'status.delivery with the failure and CircuitOpen=True',
      async () => {
        const d = await destination();
        const f = d.status?.delivery?.lastFailure;
        return f?.statusCode === 503 && circuitOf(d)?.status === 'True' && (d.status?.delivery?.backlog ?? 0) > 0
          ? d
          : undefined;
      },
      30_000,
      250,
    );
    const delivery = failing.status?.delivery as DestinationDelivery;
    expect(delivery.lastFailure?.excerpt).toBe('HTTP 503: down for maintenance \\x1b[2J until noon');
    expect(delivery.failedLastHour).toBeGreaterThanOrEqual(3);
    expect(delivery.deliveredLastHour).toBeGreaterThanOrEqual(1);
    expect(delivery.lastSuccess?.statusCode).toBe(200);
    expect(delivery.oldestPendingAge).toMatch(/^\d+[smh]/);
    expect(delivery.updatedTime).toBeDefined();
    expect(circuitOf(failing)).toMatchObject({ status: 'True', reason: expect.stringMatching(/^(Open|HalfOpen)$/) });
    const get = await kubectl(['get', 'dest', 'tickets', '-n', tenant]);
    expect(get.code).toBe(0);
    expect(get.stdout).toMatch(/tickets\s+True\s+False\s+(Open|HalfOpen)\s+\S+\s+[1-9]\d*\s/);
    const describe = await kubectl(['describe', 'dest', 'tickets', '-n', tenant]);
    expect(describe.stdout).toContain('down for maintenance');
    expect(describe.stdout).not.toContain('\u001b');
  });

  it('shows the success, the counts and the circuit Closed once the receiver recovers', async () => {
    const failedAt = Date.parse((await destination()).status?.delivery?.lastFailure?.time ?? '');
    receiver.failWith = undefined;
    const recovered = await waitFor(
      'CircuitOpen=False and everything delivered',
      async () => {
        const d = await destination();
        const s = d.status?.delivery;
        return circuitOf(d)?.status === 'False' && (s?.deliveredLastHour ?? 0) >= 11 && s?.backlog === 0
          ? d
          : undefined;
      },
      60_000,
      250,
    );
    const delivery = recovered.status?.delivery as DestinationDelivery;
    expect(circuitOf(recovered)?.reason).toBe('Closed');
    expect(Date.parse(delivery.lastSuccess?.time ?? '')).toBeGreaterThan(failedAt);
    expect(delivery.lastFailure?.statusCode).toBe(503);
    expect(delivery.minutes?.delivered.reduce((a, b) => a + b, 0)).toBe(delivery.deliveredLastHour);
    expect(delivery.minutes?.failed.reduce((a, b) => a + b, 0)).toBe(delivery.failedLastHour);
    expect(delivery.oldestPendingAge).toBe('0s');
    const get = await kubectl(['get', 'dest', 'tickets', '-n', tenant]);
    expect(get.stdout).toMatch(/tickets\s+True\s+False\s+Closed\s+\S+\s+0\s/);
    const events = await kubectl(['get', 'events', '-n', tenant, '--field-selector', 'involvedObject.name=tickets']);
    expect(events.stdout).toContain('CircuitOpen');
    expect(events.stdout).toContain('CircuitClosed');
    // Nothing delivered, nothing waiting: the merges of the next rounds write nothing.
    const writes = async (): Promise<string | undefined> =>
      (await (await fetch(`${operator.adminUrl}/metrics`)).text())
        .split('\n')
        .find((l) => l.startsWith('intake_operator_delivery_status_writes_total{result="ok"}'));
    const before = await writes();
    expect(before).toBeDefined();
    await new Promise((r) => setTimeout(r, 4000));
    expect(await writes()).toBe(before);
  });

  it('delivers with the new password of its Secret within seconds of the change, well before the resync', async () => {
    expect(receiver.requests.at(-1)?.headers.authorization).toBe(basicOf('first-password'));
    const changedAt = Date.now();
    await apply(secret('second-password'));
    await waitFor(
      'a delivery with the new password',
      async () => {
        await send(1);
        return receiver.requests.some(
          (r) => r.atMs >= changedAt && r.headers.authorization === basicOf('second-password'),
        );
      },
      60_000,
      1000,
    );
    const tookMs = Date.now() - changedAt;
    // The resync is 5 minutes: a minute is generous on a busy machine and still far from it.
    expect(tookMs).toBeLessThan(60_000);
  });
});

describe("a Destination paused through an ingester's admin API", () => {
  const adminCall = async (action: 'pause' | 'resume'): Promise<number> =>
    (
      await fetch(`${ingester.adminUrl}/destinations/${encodeURIComponent(`${tenant}/tickets`)}/${action}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-intake-admin': 'true' },
        body: '{}',
      })
    ).status;
  const pausedOf = async (): Promise<Condition | undefined> =>
    (await destination()).status?.conditions?.find((c) => c.type === 'Paused');

  it('is Paused=True, reason PausedByAdmin, until it is resumed there', async () => {
    expect(await adminCall('pause')).toBe(200);
    await waitFor('Paused=True', async () => (await pausedOf())?.reason === 'PausedByAdmin', 30_000, 250);
    expect((await pausedOf())?.status).toBe('True');
    const get = await kubectl(['get', 'dest', 'tickets', '-n', tenant]);
    expect(get.stdout).toMatch(/tickets\s+True\s+True\s/);
    expect(await adminCall('resume')).toBe(200);
    await waitFor('Paused=False', async () => (await pausedOf())?.reason === 'Active', 30_000, 250);
    expect((await pausedOf())?.status).toBe('False');
  });
});

describe("an integration's own password Secret, labelled the same", () => {
  const ownSecret = (password: string) => `apiVersion: v1
kind: Secret
metadata:
  name: own-creds
  namespace: ${tenant}
  labels: {intake.dev/watch: "true"}
stringData: {password: ${password}}
`;
  const post = async (password: string): Promise<number> =>
    (
      await fetch(`${ingester.url}/events/webhook_own-password`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`own-password:${password}`).toString('base64')}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ source: 'own', severity: 'critical' }),
      })
    ).status;

  it('is accepted with its new password within seconds of the change', async () => {
    await apply(ownSecret('first-own-password'));
    await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: own-password, namespace: ${tenant}}
spec: {credentials: {secretRef: {name: own-creds}}, destinations: [tickets]}
`);
    await waitFor('the first password accepted', async () => (await post('first-own-password')) === 200, 30_000, 500);
    const changedAt = Date.now();
    await apply(ownSecret('second-own-password'));
    await waitFor('the new password accepted', async () => (await post('second-own-password')) === 200, 60_000, 500);
    expect(Date.now() - changedAt).toBeLessThan(60_000);
  });
});
