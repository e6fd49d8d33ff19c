/**
 * Pausing a destination, through the real ingester, standalone (the outbox) and with the bus (a
 * real nats-server): while it is paused nothing reaches the receiver and nothing is
 * dead-lettered, for longer than a claim (the bus's ack_wait, the outbox's lease), so held events
 * are not handed out again and again; on resume every event arrives exactly once, at the
 * destination's rate limit. A receiver that keeps failing auto-pauses the destination after the
 * window, which stays paused after the receiver is fixed until an explicit resume. `suspend: true`
 * in the settings wins over the admin API's resume.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import {
  handoffConfig,
  metricValue,
  startNats,
  untilDeadLettersOpen,
  type RunningNats,
} from '../support/nats-server.js';
import { cli, listLetters } from '../dead-letters/support.js';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { parse } from 'yaml';

type Mode = 'outbox' | 'bus';

/** Longer than a claim (5 s: the least ack_wait and outbox lease), so a redelivery loop would show. */
const HELD_FOR_MS = 6500;
const dirs: string[] = [];
let nats: RunningNats | undefined;

afterAll(async () => {
  await nats?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const newDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'intake-pause-e2e-'));
  dirs.push(dir);
  return dir;
};

async function start(mode: Mode, destination: Record<string, unknown>, dir = newDir()): Promise<RunningIngester> {
  if (mode === 'bus') nats ??= await startNats();
  const ing = await startIngester((c) => {
    if (mode === 'bus') handoffConfig(nats as RunningNats)(c);
    else c.spool = { path: dir };
    c.destinations = [{ name: 'tickets', default: true, ...destination }];
  });
  await untilDeadLettersOpen(ing.adminUrl);
  return ing;
}

const send = async (ing: RunningIngester, count: number, tag: string): Promise<void> => {
  const events = Array.from({ length: count }, (_, i) => ({ source: `${tag}-${i}`, severity: 3 }));
  const res = await post(`${ing.url}/events/webhook_demo`, events, { authorization: basic(DEMO.user, DEMO.password) });
  expect(res.status).toBe(200);
};

const admin = async (
  ing: RunningIngester,
  path: string,
): Promise<{ status: number; body: Record<string, unknown> }> => {
  const res = await fetch(`${ing.adminUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-intake-admin': 'true' },
    body: '{}',
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

const stateOf = async (ing: RunningIngester): Promise<Record<string, unknown>> =>
  (await (await fetch(`${ing.adminUrl}/destinations/tickets`)).json()) as Record<string, unknown>;

const paused = (ing: RunningIngester, reason: 'suspended' | 'auto'): Promise<number | undefined> =>
  metricValue(ing.adminUrl, `intake_destination_paused{destination="tickets",reason="${reason}"}`);

/** The destination's consumer on the bus: messages handed out and not settled, and handed out again. */
async function consumerCounts(): Promise<{ ackPending: number; redelivered: number; pending: number }> {
  const nc = await connect({ servers: (nats as RunningNats).url });
  try {
    const jsm = await jetstreamManager(nc);
    const out = { ackPending: 0, redelivered: 0, pending: 0 };
    for (const c of ['intake-tickets']) {
      const i = await jsm.consumers.info('INTAKE_EVENTS', c);
      out.ackPending += i.num_ack_pending;
      out.redelivered += i.num_redelivered;
      out.pending += i.num_pending;
    }
    return out;
  } finally {
    await nc.close();
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Every event arrived exactly once: as many accepted as sent, none twice, no request beyond them. */
function expectEachOnce(receiver: EventReceiver, count: number): void {
  expect(receiver.accepted.size).toBe(count);
  expect([...receiver.accepted.values()].every((n) => n === 1)).toBe(true);
  expect(receiver.requests.reduce((n, r) => n + r.events.length, 0)).toBe(count);
}

describe.each<Mode>(['outbox', 'bus'])(
  'a destination paused and resumed through the admin API, from the %s',
  (mode) => {
    let receiver: EventReceiver;
    let ing: RunningIngester;
    const RATE = 20;
    const BURST = 5;
    const COUNT = 40;

    beforeAll(async () => {
      receiver = await startEventReceiver();
      ing = await start(mode, {
        http: { url: receiver.url, timeout: '1s' },
        rateLimit: { eventsPerSecond: RATE, burst: BURST },
        // Were a hand-back counted as an attempt, these would soon be dead letters.
        delivery: { maxAttempts: 2, backoffMin: '50ms', backoffMax: '100ms' },
      });
    }, 60_000);

    afterAll(async () => {
      await ing?.stop();
      await receiver?.close();
    });

    it('holds every event, dead-letters none, and on resume delivers each exactly once at the rate limit', async () => {
      expect(await paused(ing, 'suspended')).toBe(0);
      // Paused with the CLI (-o yaml: what a program reads), listed as a table.
      const paused_ = await cli(['destination', 'pause', 'tickets', '--admin-url', ing.adminUrl, '-o', 'yaml']);
      expect(parse(paused_.stdout)).toMatchObject({
        name: 'tickets',
        kind: 'http',
        paused: true,
        reason: 'suspended',
        by: 'admin',
      });
      const table = await cli(['destination', 'list', '--admin-url', ing.adminUrl]);
      expect(table.stdout).toMatch(/tickets\s+http\s+closed\s+True\s+Suspended \(admin\)/);
      expect(await paused(ing, 'suspended')).toBe(1);

      await send(ing, COUNT, `paused-${mode}`);
      await sleep(HELD_FOR_MS);
      expect(receiver.requests).toHaveLength(0);
      expect((await listLetters(ing)).count).toBe(0);
      // Not handed out again and again while paused: each event at most once (the outbox's rows
      // stay unleased; the bus's consumer stops pulling).
      const held =
        (await metricValue(ing.adminUrl, 'intake_destination_held_total{destination="tickets",reason="paused"}')) ?? 0;
      expect(held).toBeLessThanOrEqual(COUNT);
      // From the bus: the consumers stopped pulling, so the message waits in the stream, never
      // handed out (not even to a pull left open when the pause began) and not redelivered.
      if (mode === 'bus') expect(await consumerCounts()).toEqual({ ackPending: 0, redelivered: 0, pending: 1 });

      const resumedAt = Date.now();
      const r = await admin(ing, '/destinations/tickets/resume');
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ result: 'resumed', paused: false });
      expect(await paused(ing, 'suspended')).toBe(0);
      await waitFor('every event delivered', async () => receiver.accepted.size === COUNT, 30_000, 50);
      await sleep(300);
      expectEachOnce(receiver, COUNT);
      // At the rate limit: the bucket was full (burst) at the resume, and refills at RATE a second.
      for (const [i, req] of receiver.requests.entries())
        expect(i + 1).toBeLessThanOrEqual(BURST + (RATE * (req.atMs - resumedAt)) / 1000 + 1);
      const last = (receiver.requests.at(-1) as { atMs: number }).atMs;
      expect(last - resumedAt).toBeGreaterThanOrEqual(((COUNT - BURST - 1) / RATE) * 1000);
      expect((await listLetters(ing)).count).toBe(0);
      expect(await admin(ing, '/destinations/tickets/resume')).toMatchObject({
        status: 200,
        body: { result: 'not_paused' },
      });
      expect((await admin(ing, '/destinations/nope/pause')).status).toBe(404);
    }, 60_000);
  },
);

describe.each<Mode>(['outbox', 'bus'])('a receiver failing continuously, delivered from the %s', (mode) => {
  let receiver: EventReceiver;
  let ing: RunningIngester;
  const COUNT = 10;

  const dir = newDir();
  const settings = (): Record<string, unknown> => ({
    http: { url: receiver.url, timeout: '1s' },
    delivery: { maxAttempts: 3, backoffMin: '50ms', backoffMax: '100ms' },
    circuitBreaker: { consecutiveFailures: 3, openFor: '300ms' },
    autoPause: { after: '2s' },
  });

  beforeAll(async () => {
    receiver = await startEventReceiver();
    ing = await start(mode, settings(), dir);
  }, 60_000);

  afterAll(async () => {
    await ing?.stop();
    await receiver?.close();
  });

  it('auto-pauses after the window, stays paused once the receiver is fixed, and delivers everything on resume', async () => {
    receiver.failWith = { status: 500, body: 'database on fire' };
    await send(ing, COUNT, `auto-${mode}`);
    await waitFor('auto-paused', async () => (await paused(ing, 'auto')) === 1, 20_000, 50);
    const state = await stateOf(ing);
    expect(state).toMatchObject({
      paused: true,
      reason: 'auto',
      by: 'auto',
      lastFailure: { reason: 'http_500' },
    });
    expect(String((state.lastFailure as { error: string }).error)).toContain('database on fire');
    expect(Date.parse(String(state.since))).toBeGreaterThan(Date.now() - 60_000);
    expect(await paused(ing, 'suspended')).toBe(0);

    // Fixed, but nothing says so: it stays paused, and nothing is sent or dead-lettered.
    receiver.failWith = undefined;
    const before = receiver.requests.length;
    await sleep(HELD_FOR_MS);
    expect(receiver.requests.length).toBe(before);
    expect(receiver.accepted.size).toBe(0);
    expect((await listLetters(ing)).count).toBe(0);
    expect(await paused(ing, 'auto')).toBe(1);

    // A restart does not resume it either: the pause was kept (the storage directory, the bus).
    await ing.stop();
    ing = await start(mode, settings(), dir);
    await waitFor('auto-paused after the restart', async () => (await paused(ing, 'auto')) === 1, 10_000, 50);
    expect(await stateOf(ing)).toMatchObject({ paused: true, reason: 'auto', since: state.since });
    await sleep(1000);
    expect(receiver.requests.length).toBe(before);

    expect((await admin(ing, '/destinations/tickets/resume')).body).toMatchObject({ result: 'resumed', paused: false });
    await waitFor('every event delivered', async () => receiver.accepted.size === COUNT, 30_000, 50);
    await sleep(300);
    expect(receiver.accepted.size).toBe(COUNT);
    expect([...receiver.accepted.values()].every((n) => n === 1)).toBe(true);
    expect(await paused(ing, 'auto')).toBe(0);
    expect((await listLetters(ing)).count).toBe(0);
  }, 60_000);
});

describe.each<Mode>(['outbox', 'bus'])('suspend: true in the settings, delivered from the %s', (mode) => {
  let receiver: EventReceiver;
  const running: RunningIngester[] = [];

  beforeAll(async () => {
    receiver = await startEventReceiver();
  });

  afterAll(async () => {
    for (const ing of running) await ing.stop();
    await receiver?.close();
  });

  it('holds the events across restarts until the settings say otherwise; the admin API cannot resume it', async () => {
    const dir = newDir();
    const settings = (suspend: boolean): Record<string, unknown> => ({
      http: { url: receiver.url, timeout: '1s' },
      suspend,
    });
    const suspended = await start(mode, settings(true), dir);
    running.push(suspended);
    expect(await paused(suspended, 'suspended')).toBe(1);
    expect(await stateOf(suspended)).toMatchObject({ paused: true, reason: 'suspended', by: 'settings' });
    const refused = await admin(suspended, '/destinations/tickets/resume');
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error: 'suspended_by_settings', paused: true });

    await send(suspended, 15, `suspend-${mode}`);
    await sleep(HELD_FOR_MS);
    expect(receiver.requests).toHaveLength(0);
    expect((await listLetters(suspended)).count).toBe(0);
    await suspended.stop();

    const resumed = await start(mode, settings(false), dir);
    running.push(resumed);
    await waitFor('every event delivered', async () => receiver.accepted.size === 15, 30_000, 50);
    await sleep(300);
    expectEachOnce(receiver, 15);
    expect(await paused(resumed, 'suspended')).toBe(0);
  }, 60_000);
});

describe('with the bus, a pause through one replica', () => {
  let receiver: EventReceiver;
  const replicas: RunningIngester[] = [];

  beforeAll(async () => {
    receiver = await startEventReceiver();
    for (let i = 0; i < 2; i++) replicas.push(await start('bus', { http: { url: receiver.url, timeout: '1s' } }));
  }, 60_000);

  afterAll(async () => {
    for (const ing of replicas) await ing.stop();
    await receiver?.close();
  });

  it('holds on every replica, and a resume through another ends it on all', async () => {
    const [a, b] = replicas as [RunningIngester, RunningIngester];
    expect((await admin(a, '/destinations/tickets/pause')).status).toBe(200);
    await waitFor('the other replica paused', async () => (await paused(b, 'suspended')) === 1, 10_000, 50);
    expect(await stateOf(b)).toMatchObject({ paused: true, by: 'admin' });

    await send(a, 10, 'replica-a');
    await send(b, 10, 'replica-b');
    await sleep(3000);
    expect(receiver.requests).toHaveLength(0);

    expect((await admin(b, '/destinations/tickets/resume')).body).toMatchObject({ result: 'resumed' });
    await waitFor('the first replica resumed', async () => (await paused(a, 'suspended')) === 0, 10_000, 50);
    await waitFor('every event delivered', async () => receiver.accepted.size === 20, 30_000, 50);
    await sleep(300);
    expectEachOnce(receiver, 20);
    for (const ing of replicas) expect((await listLetters(ing)).count).toBe(0);
  }, 60_000);
});
