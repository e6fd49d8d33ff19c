/**
 * A team's `Destination` with `spec.autoPause`, against a real kube-apiserver, the operator and a
 * standalone ingester in Kubernetes mode (the outbox), with a loopback receiver that fails on
 * purpose: the CRD refuses a malformed or zero window; a change of the window applies live; the
 * destination auto-pauses, holds its events (nothing sent, nothing dead-lettered) and says so in
 * the admin API and `intake destination get`; `spec.suspend` set to true then false resumes it,
 * as the admin API's resume does, and every held event is delivered once. Without autoPause the
 * platform's default window (24h) applies.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { jest } from '@jest/globals';
import { apply, kubectl, ROOT, type Proc, webhookReady } from './support/cluster.js';
import { operatorSuite } from './support/suite.js';
import { waitFor } from '../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../e2e/support/event-receiver.js';
import { startNats, untilDeadLettersOpen, type RunningNats } from '../e2e/support/nats-server.js';

jest.setTimeout(120_000);

const suite = operatorSuite('team-ap');
const { core } = suite;
const [team] = suite.tenants;
const dir = mkdtempSync(join(tmpdir(), 'intake-it-team-autopause-'));
const execFileAsync = promisify(execFile);
let ingester: Proc;
let receiver: EventReceiver;
let authorization: string;
let config: string;

const NAME = 'tickets';
const destinationName = (): string => `${team}/${NAME}`;
/** Longer than the window and than a claim (the outbox's lease, 5 s), so sending or a redelivery loop would show. */
const HELD_FOR_MS = 6000;

const destination = (autoPause: string, suspend = false) => `apiVersion: intake.dev/v1alpha1
kind: Destination
metadata: {name: ${NAME}, namespace: ${team}}
spec:
  suspend: ${suspend}
  http: {url: '${receiver.url}', timeout: 1s}
  delivery: {maxAttempts: 1000, backoffMin: 50ms, backoffMax: 100ms}
  circuitBreaker: {consecutiveFailures: 3, openFor: 300ms}
${autoPause}`;

interface State {
  paused: boolean;
  reason?: string;
  by?: string;
  since?: string;
  failingSince?: string;
  autoPauseAt?: string;
  lastFailure?: { reason: string; error: string };
  pausedCondition?: { status: string; reason: string; message: string };
}
const stateOf = async (): Promise<State | undefined> => {
  const res = await fetch(`${ingester.adminUrl}/destinations/${encodeURIComponent(destinationName())}`);
  return res.ok ? ((await res.json()) as State) : undefined;
};
const deadLetters = async (): Promise<number> => {
  await untilDeadLettersOpen(ingester.adminUrl);
  return ((await (await fetch(`${ingester.adminUrl}/deadletter`)).json()) as { count: number }).count;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sourcesDelivered = (): Set<string> =>
  new Set(
    receiver.requests
      .filter((r) => r.answer !== 'reset' && r.answer.status === 200)
      .flatMap((r) => r.events.map((e) => String(e.source))),
  );

async function send(tag: string, count: number): Promise<string[]> {
  const events = Array.from({ length: count }, (_, i) => ({ source: `${tag}-${i}`, severity: 'critical' }));
  const res = await fetch(`${ingester.url}/events/webhook_alerts`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify(events),
  });
  expect(res.status).toBe(200);
  return events.map((e) => e.source);
}

/** Until the ingester has the Destination's new version (it logs each one it takes). */
async function patchSpec(patch: string, type: 'merge' | 'json' = 'merge'): Promise<void> {
  const before = (ingester.output().match(/team destination updated/g) ?? []).length;
  const r = await kubectl(['patch', 'destination', NAME, '-n', team, `--type=${type}`, '-p', patch]);
  expect(r.stderr).toBe('');
  await waitFor(
    'the new version in the ingester',
    async () => (ingester.output().match(/team destination updated/g) ?? []).length > before,
    15_000,
  );
}

/** Every held event arrives after the resume, each exactly once. */
async function everyOneDelivered(sources: string[]): Promise<void> {
  await waitFor('every held event delivered', async () => sources.every((s) => sourcesDelivered().has(s)), 30_000);
  await sleep(300);
  for (const s of sources) {
    const times = receiver.requests.filter(
      (r) => r.answer !== 'reset' && r.answer.status === 200 && r.events.some((e) => e.source === s),
    ).length;
    expect({ source: s, times }).toEqual({ source: s, times: 1 });
  }
}

beforeAll(async () => {
  receiver = await startEventReceiver();
  await suite.startOperator();
  config = join(dir, 'intake.yaml');
  writeFileSync(
    config,
    `authThrottle: {failures: 1000000, window: 1m, block: 1s}
# The receiver is on loopback, which the address guard refuses to a team's URL by default.
addressGuard: {allowedCIDRs: [127.0.0.0/8, '::1/128']}
spool: {path: ${join(dir, 'storage')}}
`,
  );
  ingester = await suite.startIngester(['--config', config]);
});

let nats: RunningNats | undefined;

afterAll(async () => {
  await receiver?.close();
  await nats?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('a team destination that keeps failing', () => {
  it('has its autoPause checked by the API server: a Go-style duration, longer than 0', async () => {
    const zero = await kubectl(['apply', '-f', '-'], destination('  autoPause: {after: 0s}'));
    expect(zero.code).not.toBe(0);
    expect(zero.stderr).toContain('spec.autoPause.after');
    expect(zero.stderr).toContain('must be longer than 0');
    const words = await kubectl(['apply', '-f', '-'], destination('  autoPause: {after: one day}'));
    expect(words.code).not.toBe(0);
    expect(words.stderr).toContain('spec.autoPause.after');
    const unknown = await kubectl(['apply', '-f', '-'], destination('  autoPause: {after: 2s, when: always}'));
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('spec.autoPause.when');
  });

  it('takes a change of the window live: failing for longer than the new one, it auto-pauses', async () => {
    await apply(destination('  autoPause: {after: 1h}'));
    await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: alerts, namespace: ${team}}
spec: {destinations: [${NAME}]}
`);
    await waitFor('integration Ready', async () => (await webhookReady(team, 'alerts'))?.status === 'True', 15_000);
    const secret = await waitFor(
      'credentials',
      () => core.readNamespacedSecret({ namespace: team, name: 'intake-webhook-alerts' }).catch(() => undefined),
      10_000,
    );
    authorization = Buffer.from(secret.data?.authorization ?? '', 'base64').toString('utf8');
    await waitFor('the destination in the ingester', async () => (await stateOf()) !== undefined, 15_000);
    await waitFor(
      'route served',
      async () => {
        const res = await fetch(`${ingester.url}/events/webhook_alerts?dryRun=true`, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json' },
          body: '{"source":"dry","severity":"critical"}',
        });
        await res.arrayBuffer();
        return res.status === 200;
      },
      15_000,
    );

    receiver.failWith = { status: 500, body: 'database on fire' };
    await send('first', 3);
    const failing = await waitFor(
      'failing',
      async () => ((await stateOf())?.failingSince ? await stateOf() : undefined),
      15_000,
    );
    expect(Date.parse(failing.autoPauseAt ?? '') - Date.parse(failing.failingSince ?? '')).toBe(3600_000);
    await sleep(2500);
    expect(await stateOf()).toMatchObject({ paused: false });

    await patchSpec('{"spec":{"autoPause":{"after":"2s"}}}');
    const state = await waitFor(
      'auto-paused',
      async () => ((await stateOf())?.paused ? await stateOf() : undefined),
      15_000,
    );
    expect(state).toMatchObject({
      paused: true,
      reason: 'auto',
      by: 'auto',
      lastFailure: { reason: 'http_500' },
      pausedCondition: { status: 'True', reason: 'AutoPaused' },
    });
    expect(Date.parse(state.since ?? '')).toBeGreaterThan(Date.now() - 60_000);
    expect(state.pausedCondition?.message).toContain(`auto-paused since ${state.since}`);
  });

  it('holds its events while auto-paused, shows it in intake destination list and get, keeps it across a restart, and resumes when spec.suspend is turned on and off', async () => {
    const held = [...(await send('held', 4)), 'first-0', 'first-1', 'first-2'];
    // Fixed, but nothing says so: it stays paused, nothing is sent, nothing is dead-lettered.
    receiver.failWith = undefined;
    const before = receiver.requests.length;
    await sleep(HELD_FOR_MS);
    expect(receiver.requests.length).toBe(before);
    expect(await deadLetters()).toBe(0);
    expect(await stateOf()).toMatchObject({ paused: true, reason: 'auto' });

    const list = await execFileAsync(process.execPath, [
      join(ROOT, 'dist/cmd/intake.js'),
      'destination',
      'list',
      '--admin-url',
      ingester.adminUrl,
    ]);
    const row = list.stdout.split('\n').find((l) => l.startsWith(destinationName())) ?? '';
    expect(row).toMatch(/\bTrue\s+AutoPaused \(auto\)\s+\d{4}-\d\d-\d\dT/);
    const get = await execFileAsync(process.execPath, [
      join(ROOT, 'dist/cmd/intake.js'),
      'destination',
      'get',
      destinationName(),
      '--admin-url',
      ingester.adminUrl,
      '-o',
      'json',
    ]);
    expect(JSON.parse(get.stdout)).toMatchObject({ paused: true, pausedCondition: { reason: 'AutoPaused' } });

    // A restart does not resume it: the team destination arrives after the kept pauses were read, and takes its own.
    const since = (await stateOf())?.since;
    await ingester.stop();
    ingester = await suite.startIngester(['--config', config]);
    await waitFor('the destination in the restarted ingester', async () => (await stateOf()) !== undefined, 15_000);
    expect(await stateOf()).toMatchObject({ paused: true, reason: 'auto', since });
    await sleep(1000);
    expect(receiver.requests.length).toBe(before);

    await patchSpec('{"spec":{"suspend":true}}');
    expect(await stateOf()).toMatchObject({ paused: true, by: 'settings', pausedCondition: { reason: 'Suspended' } });
    await sleep(500);
    expect(receiver.requests.length).toBe(before);
    await patchSpec('{"spec":{"suspend":false}}');
    expect(await stateOf()).toMatchObject({ paused: false, pausedCondition: { status: 'False', reason: 'Active' } });
    await everyOneDelivered(held);
    expect(await deadLetters()).toBe(0);
  });

  it('resumes through the admin API too, delivering what it held', async () => {
    receiver.failWith = { status: 503, body: 'maintenance' };
    const held = await send('again', 3);
    await waitFor('auto-paused again', async () => (await stateOf())?.reason === 'auto', 20_000);
    receiver.failWith = undefined;
    const res = await fetch(`${ingester.adminUrl}/destinations/${encodeURIComponent(destinationName())}/resume`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-intake-admin': 'true' },
      body: '{}',
    });
    expect(await res.json()).toMatchObject({ result: 'resumed', paused: false });
    await everyOneDelivered(held);
    expect(await deadLetters()).toBe(0);
  });

  it("without autoPause takes the platform's default window, 24h", async () => {
    await patchSpec('[{"op":"remove","path":"/spec/autoPause"}]', 'json');
    receiver.failWith = { status: 500, body: 'down again' };
    const held = await send('default', 2);
    const failing = await waitFor(
      'failing',
      async () => ((await stateOf())?.failingSince ? await stateOf() : undefined),
      15_000,
    );
    expect(Date.parse(failing.autoPauseAt ?? '') - Date.parse(failing.failingSince ?? '')).toBe(24 * 3600_000);
    await sleep(3000);
    expect(await stateOf()).toMatchObject({ paused: false });
    receiver.failWith = undefined;
    await everyOneDelivered(held);
  });
});

describe('a team destination that keeps failing, delivered from the bus', () => {
  it('auto-pauses, holds its events in the stream across a restart (its pause kept in the bus), and resumes by spec.suspend', async () => {
    // The same Destination, now delivered by an ingester on the bus alone.
    await ingester.stop();
    nats = await startNats();
    config = join(dir, 'bus.yaml');
    writeFileSync(
      config,
      `authThrottle: {failures: 1000000, window: 1m, block: 1s}
addressGuard: {allowedCIDRs: [127.0.0.0/8, '::1/128']}
sinks: {jetstream: {url: '${nats.url}', timeout: 2s, reconnectWait: 100ms}}
`,
    );
    ingester = await suite.startIngester(['--config', config]);
    await waitFor('the destination in the ingester', async () => (await stateOf()) !== undefined, 15_000);
    await patchSpec('{"spec":{"autoPause":{"after":"2s"}}}');

    receiver.failWith = { status: 500, body: 'bus receiver down' };
    const held = await send('bus', 3);
    const state = await waitFor(
      'auto-paused',
      async () => ((await stateOf())?.reason === 'auto' ? await stateOf() : undefined),
      20_000,
    );
    receiver.failWith = undefined;
    const before = receiver.requests.length;
    await sleep(HELD_FOR_MS);
    expect(receiver.requests.length).toBe(before);
    expect(await deadLetters()).toBe(0);

    await ingester.stop();
    ingester = await suite.startIngester(['--config', config]);
    await waitFor(
      'auto-paused after the restart',
      async () => (await stateOf())?.reason === 'auto' && (await stateOf())?.since === state.since,
      15_000,
    );
    await sleep(1000);
    expect(receiver.requests.length).toBe(before);

    await patchSpec('{"spec":{"suspend":true}}');
    await patchSpec('{"spec":{"suspend":false}}');
    expect(await stateOf()).toMatchObject({ paused: false, pausedCondition: { reason: 'Active' } });
    await everyOneDelivered(held);
    expect(await deadLetters()).toBe(0);
  });
});
