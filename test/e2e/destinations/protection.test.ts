/**
 * A receiver protected by its destination's circuit breaker and rate limit, through the real
 * ingester, standalone (the outbox) and with the bus: while the receiver answers 503 the circuit
 * opens (the metric says so), the receiver sees at most one probe per cool-off instead of every
 * event's retries, nothing is dead-lettered although the events' attempts would have run out, and
 * once it recovers every event arrives. A rate-limited destination is never sent more than
 * rate x time + burst, and every event still arrives.
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
import { listLetters } from '../dead-letters/support.js';

const OPEN_FOR_MS = 2000;
const dirs: string[] = [];
let nats: RunningNats | undefined;

afterAll(async () => {
  await nats?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Mode = 'outbox' | 'bus';

async function start(mode: Mode, destination: Record<string, unknown>): Promise<RunningIngester> {
  const dir = mkdtempSync(join(tmpdir(), 'intake-protection-e2e-'));
  dirs.push(dir);
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

describe.each<Mode>(['outbox', 'bus'])('a receiver that is down, delivered from the %s', (mode) => {
  let receiver: EventReceiver;
  let ing: RunningIngester;

  beforeAll(async () => {
    receiver = await startEventReceiver();
    ing = await start(mode, {
      http: { url: receiver.url, timeout: '1s' },
      // Without the breaker these events would be dead-lettered within a second.
      delivery: { maxAttempts: 3, backoffMin: '50ms', backoffMax: '100ms' },
      circuitBreaker: { consecutiveFailures: 3, openFor: `${OPEN_FOR_MS}ms` },
    });
  }, 60_000);

  afterAll(async () => {
    await ing?.stop();
    await receiver?.close();
  });

  it('opens the circuit, probes once per cool-off, dead-letters nothing, and delivers everything on recovery', async () => {
    const metric = (series: string): Promise<number | undefined> => metricValue(ing.adminUrl, series);
    receiver.failWith = { status: 503, body: 'maintenance' };
    await send(ing, 20, mode);
    await waitFor(
      'the circuit open',
      async () => (await metric('intake_destination_circuit_state{destination="tickets"}')) === 2,
      15_000,
      20,
    );
    // Three cool-offs while it is down: the receiver sees the probes alone, not 20 events' retries.
    const openedAt = Date.now();
    const before = receiver.requests.length;
    await new Promise((r) => setTimeout(r, 3 * OPEN_FOR_MS + 500));
    const whileOpen = receiver.requests.slice(before);
    expect(whileOpen.length).toBeGreaterThanOrEqual(1);
    expect(whileOpen.length).toBeLessThanOrEqual(Math.ceil((Date.now() - openedAt) / OPEN_FOR_MS) + 1);
    expect(whileOpen.every((r) => r.events.length === 1)).toBe(true);
    expect(
      await metric('intake_destination_circuit_transitions_total{destination="tickets",to="half-open"}'),
    ).toBeGreaterThanOrEqual(1);
    expect((await listLetters(ing)).count).toBe(0);

    receiver.failWith = undefined;
    await waitFor('every event delivered', async () => receiver.accepted.size === 20, 20_000, 50);
    expect(await metric('intake_destination_circuit_state{destination="tickets"}')).toBe(0);
    expect(await metric('intake_destination_circuit_transitions_total{destination="tickets",to="closed"}')).toBe(1);
    expect((await listLetters(ing)).count).toBe(0);
    expect(
      await metric('intake_destination_dead_lettered_total{destination="tickets",reason="attempts_exhausted"}'),
    ).toBeUndefined();
  }, 60_000);
});

describe.each<Mode>(['outbox', 'bus'])('a rate-limited receiver, delivered from the %s', (mode) => {
  let receiver: EventReceiver;
  let ing: RunningIngester;
  const RATE = 10;
  const BURST = 5;

  beforeAll(async () => {
    receiver = await startEventReceiver();
    ing = await start(mode, {
      http: { url: receiver.url, timeout: '1s' },
      rateLimit: { eventsPerSecond: RATE, burst: BURST },
    });
  }, 60_000);

  afterAll(async () => {
    await ing?.stop();
    await receiver?.close();
  });

  it('is sent at most rate x time + burst, and every event arrives', async () => {
    await send(ing, 40, `limited-${mode}`);
    await waitFor('every event delivered', async () => receiver.accepted.size === 40, 20_000, 50);
    const first = (receiver.requests[0] as { atMs: number }).atMs;
    // The bucket was full when the first request went: by each request's arrival, at most
    // burst + rate x elapsed (one more for the rounding of arrival times).
    for (const [i, r] of receiver.requests.entries())
      expect(i + 1).toBeLessThanOrEqual(BURST + (RATE * (r.atMs - first)) / 1000 + 1);
    const last = (receiver.requests.at(-1) as { atMs: number }).atMs;
    expect(last - first).toBeGreaterThanOrEqual(((40 - BURST - 1) / RATE) * 1000);
    expect((await listLetters(ing)).count).toBe(0);
  }, 40_000);
});
