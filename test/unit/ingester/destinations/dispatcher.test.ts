import pino from 'pino';
import { Registry } from 'prom-client';
import {
  queuedEvent,
  retryDelayMs,
  type Destination,
  type QueuedEvent,
} from '../../../../ingester/destinations/destination.js';
import { Dispatcher, type Delivery } from '../../../../ingester/destinations/dispatcher.js';
import { classify, type Outcome } from '../../../../ingester/outbound/outcome.js';
import { DestinationMetrics } from '../../../../ingester/destinations/metrics.js';
import type { NormalisedEvent } from '../../../../ingester/core/event.js';
import { DestinationPause } from '../../../../ingester/destinations/protection/pause.js';
import { PAUSED_HOLD_MS } from '../../../../ingester/destinations/protection/receiver-guard.js';

const settings = { maxAttempts: 3, backoffMinMs: 100, backoffMaxMs: 1000, maxInFlight: 4, maxInFlightBytes: 1 << 20 };

class FakeDestination implements Destination {
  readonly name = 'fake';
  readonly kind = 'http';
  batches: string[][] = [];
  constructor(
    readonly maxBatch: number,
    private readonly answer: () => Promise<Outcome>,
  ) {}
  send(events: readonly QueuedEvent[]): Promise<Outcome> {
    this.batches.push(events.map((e) => e.event().id));
    return this.answer();
  }
  async close(): Promise<void> {}
}

function delivery(id: string, attempt = 1): Delivery & { settled: string[] } {
  const settled: string[] = [];
  return {
    ...queuedEvent({ id, received_at: new Date().toISOString() } as NormalisedEvent),
    attempt,
    settled,
    ack: async () => void settled.push('ack'),
    retry: async (ms, error) => void settled.push(`retry ${ms <= 1000 ? 'ok' : ms} ${error}`),
    deadLetter: async (reason, error) => void settled.push(`dead ${reason} ${error}`),
    hold: async (ms, why) => void settled.push(`hold ${ms} ${why}`),
  };
}

const make = (
  dest: Destination,
  overrides: Partial<typeof settings> = {},
): { d: Dispatcher; metrics: DestinationMetrics; registry: Registry } => {
  const registry = new Registry();
  const metrics = new DestinationMetrics(registry);
  return {
    d: new Dispatcher(dest, { ...settings, ...overrides }, metrics, pino({ level: 'silent' })),
    metrics,
    registry,
  };
};

/** A destination that holds every answer until released, then delivers. */
function heldDestination(): { dest: FakeDestination; release: () => void } {
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => (release = r));
  return { dest: new FakeDestination(1, async () => (await gate, { kind: 'accepted' })), release };
}

/** waitForRoom() stays pending while the destination holds its answers, and resolves once released. */
async function expectRoomOnlyAfter(d: Dispatcher, release: () => void): Promise<void> {
  let waited = false;
  const room = d.waitForRoom().then(() => (waited = true));
  await new Promise((r) => setTimeout(r, 20));
  expect(waited).toBe(false);
  release();
  await room;
}

/** A dispatcher whose log lines are kept (level error and above). */
function logged(dest: Destination): { d: Dispatcher; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { d: new Dispatcher(dest, settings, new DestinationMetrics(new Registry()), logger), lines };
}

describe('dispatcher', () => {
  it.each([1, 3])('logs the settles the queue refused (batches of %i), and counts them', async (batchSize) => {
    const dest = new FakeDestination(batchSize, async () => ({ kind: 'accepted' }));
    const { d, lines } = logged(dest);
    const items = ['a', 'b', 'c'].map((id) => ({
      ...delivery(id),
      ack: id === 'b' ? () => Promise.resolve() : () => Promise.reject(new Error(`bus gone (${id})`)),
    }));
    for (const i of items) d.submit(i);
    await d.idle();
    const refused = lines.filter(
      (l) => l.msg === 'could not settle deliveries with the queue; they will be delivered again',
    );
    expect(refused.length).toBeGreaterThan(0);
    // Every refused settle is counted once, whatever the batches were.
    expect(refused.reduce((n, l) => n + (l.events as number), 0)).toBe(batchSize === 1 ? 1 : 2);
    expect(JSON.stringify(refused[0])).toContain('bus gone (a)');
  });

  it('sends what arrives in one turn as batches of at most maxBatch, and acknowledges on delivery', async () => {
    const dest = new FakeDestination(2, async () => ({ kind: 'accepted' }));
    const { d, registry } = make(dest);
    const items = ['a', 'b', 'c'].map((id) => delivery(id));
    for (const i of items) d.submit(i);
    await d.idle();
    expect(dest.batches).toEqual([['a', 'b'], ['c']]);
    expect(items.map((i) => i.settled)).toEqual([['ack'], ['ack'], ['ack']]);
    expect(await registry.getSingleMetricAsString('intake_destination_delivered_total')).toContain(
      'intake_destination_delivered_total{destination="fake"} 3',
    );
  });

  it('retries with backoff, then dead-letters when the attempts ran out', async () => {
    const dest = new FakeDestination(10, async () => ({ kind: 'retry', reason: 'http_503', error: 'HTTP 503' }));
    const { d, registry } = make(dest);
    const early = delivery('a', 1);
    const last = delivery('b', 3);
    d.submit(early);
    d.submit(last);
    await d.idle();
    expect(early.settled).toEqual(['retry ok HTTP 503']);
    expect(last.settled).toEqual(['dead attempts_exhausted 3 attempts, the last: HTTP 503']);
    expect(await registry.getSingleMetricAsString('intake_destination_dead_lettered_total')).toContain(
      'reason="attempts_exhausted"} 1',
    );
  });

  it('honours Retry-After', async () => {
    const dest = new FakeDestination(1, async () => ({
      kind: 'retry',
      reason: 'http_429',
      error: 'HTTP 429',
      retryAfterMs: 7000,
    }));
    const { d } = make(dest);
    const item = delivery('a');
    d.submit(item);
    await d.idle();
    expect(item.settled).toEqual(['retry 7000 HTTP 429']);
  });

  it('dead-letters a refusal at once, with the reason', async () => {
    const dest = new FakeDestination(1, async () => ({
      kind: 'reject',
      reason: 'http_400',
      error: 'HTTP 400: bad field',
    }));
    const { d } = make(dest);
    const item = delivery('a');
    d.submit(item);
    await d.idle();
    expect(item.settled).toEqual(['dead http_400 HTTP 400: bad field']);
  });

  it('keeps at most maxInFlight events in flight', async () => {
    const { dest, release } = heldDestination();
    const { d } = make(dest);
    for (const id of ['a', 'b', 'c', 'd']) d.submit(delivery(id));
    expect(d.free()).toBe(0);
    await expectRoomOnlyAfter(d, release);
    await d.idle();
    expect(d.free()).toBe(4);
  });

  it('takes no more events while those in flight hold maxInFlightBytes, and again once they are settled', async () => {
    const { dest, release } = heldDestination();
    const one = delivery('a');
    // Room for 4 events, but for the bytes of only one and a half of these.
    const { d } = make(dest, { maxInFlightBytes: Math.floor(one.json.length * 1.5) });
    d.submit(one);
    expect([d.free(), d.freeBytes()]).toEqual([3, Math.floor(one.json.length * 1.5) - one.json.length]);
    d.submit(delivery('b'));
    expect([d.free(), d.freeBytes()]).toEqual([0, 0]);
    await expectRoomOnlyAfter(d, release);
    await d.idle();
    expect([d.free(), d.freeBytes()]).toEqual([4, Math.floor(one.json.length * 1.5)]);
  });

  it("sends at most maxInFlight at a time when a message's events arrive together, the rest as room frees", async () => {
    let sending = 0;
    let most = 0;
    const dest = new FakeDestination(1, async () => {
      most = Math.max(most, ++sending);
      await new Promise((r) => setTimeout(r, 5));
      sending--;
      return { kind: 'accepted' };
    });
    const { d } = make(dest);
    // A message of 10 events, more than maxInFlight (4): room is waited for only while anything is in flight.
    await d.waitForRoom(10);
    const items = Array.from({ length: 10 }, (_, i) => delivery(`e${i}`));
    for (const i of items) d.submit(i);
    let waited = false;
    const room = d.waitForRoom(2).then(() => (waited = true));
    await new Promise((r) => setTimeout(r, 1));
    expect(waited).toBe(false);
    await d.idle();
    await room;
    expect(most).toBe(4);
    expect(dest.batches.flat()).toEqual(items.map((_, i) => `e${i}`));
    expect(items.every((i) => i.settled.join() === 'ack')).toBe(true);
  });
});

describe('backoff and classification', () => {
  it('full jitter stays within min * 2^(attempt-1), capped at max', () => {
    const o = { backoffMinMs: 100, backoffMaxMs: 1000 };
    expect(retryDelayMs(1, o, undefined, () => 0.999)).toBeLessThanOrEqual(100);
    expect(retryDelayMs(3, o, undefined, () => 0.999)).toBeLessThanOrEqual(400);
    expect(retryDelayMs(3, o, undefined, () => 0.999)).toBeGreaterThan(390);
    expect(retryDelayMs(20, o, undefined, () => 0.999)).toBeLessThanOrEqual(1000);
    expect(retryDelayMs(5, o, undefined, () => 0)).toBe(0);
  });

  it('a Retry-After wins over the backoff, up to an hour', () => {
    expect(retryDelayMs(1, { backoffMinMs: 100, backoffMaxMs: 1000 }, 30_000)).toBe(30_000);
    expect(retryDelayMs(1, { backoffMinMs: 100, backoffMaxMs: 1000 }, 10 * 3_600_000)).toBe(3_600_000);
  });

  it.each([
    [200, 'accepted'],
    [204, 'accepted'],
    [408, 'retry'],
    [429, 'retry'],
    [500, 'retry'],
    [503, 'retry'],
    [400, 'reject'],
    [401, 'reject'],
    [404, 'reject'],
    [422, 'reject'],
  ])('HTTP %i is %s', (status, kind) => {
    expect(classify(status, 'why', {}).kind).toBe(kind);
  });

  it("keeps the receiver's Retry-After and reason", () => {
    expect(classify(429, 'slow down', { 'retry-after': '3' })).toEqual({
      kind: 'retry',
      reason: 'http_429',
      status: 429,
      error: 'HTTP 429: slow down',
      retryAfterMs: 3000,
    });
  });
});

describe('dispatcher with a circuit breaker and a rate limit', () => {
  const breakerSettings = {
    circuitBreaker: { consecutiveFailures: 2, failureRatio: 1, windowMs: 60_000, minRequests: 1, openForMs: 60_000 },
  };
  const protect = (dest: Destination, protection: object, overrides: Partial<typeof settings> = {}) => {
    const registry = new Registry();
    const metrics = new DestinationMetrics(registry);
    const d = new Dispatcher(dest, { ...settings, ...overrides }, metrics, pino({ level: 'silent' }), protection);
    return { d, registry };
  };
  const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

  it('holds events once the circuit opens: not retried, not dead-lettered even at their last attempt', async () => {
    const dest = new FakeDestination(1, async () => classify(503, 'down', {}));
    const { d, registry } = protect(dest, breakerSettings, { maxInFlight: 1 });
    const events = [delivery('a', 1), delivery('b', 3), delivery('c', 3), delivery('d', 3)];
    for (const e of events) d.submit(e);
    await d.idle();
    // Two failures open it: a is retried (closed then), b's failure opened it and is held, not
    // dead-lettered; c and d never reach the receiver.
    expect(dest.batches).toEqual([['a'], ['b']]);
    // Held for the rest of the cool-off (a millisecond may have passed).
    expect(events.map((e) => e.settled[0]?.replace(/^hold 59\d\d\d /, 'hold 60000 '))).toEqual([
      'retry ok HTTP 503: down',
      'hold 60000 the circuit is open',
      'hold 60000 the circuit is open',
      'hold 60000 the circuit is open',
    ]);
    expect(d.holdMs()).toBeGreaterThan(59_000);
    const text = await registry.metrics();
    expect(text).toMatch(/intake_destination_circuit_state\{destination="fake"\} 2/);
    expect(text).toMatch(/intake_destination_circuit_transitions_total\{destination="fake",to="open"\} 1/);
    expect(text).toMatch(/intake_destination_held_total\{destination="fake",reason="circuit_open"\} 3/);
  });

  it("holds a failed probe's events a cool-off longer than the others, so the next probe is other events", async () => {
    let answer: Outcome = classify(503, 'down', {});
    const dest = new FakeDestination(1, async () => answer);
    const quick = { circuitBreaker: { ...breakerSettings.circuitBreaker, openForMs: 500 } };
    const { d } = protect(dest, quick, { maxInFlight: 1 });
    for (const id of ['a', 'b']) d.submit(delivery(id));
    await d.idle();
    expect(d.guard.state).toBe('open');
    await new Promise((r) => setTimeout(r, 600));
    expect(d.guard.state).toBe('half-open');
    const [probe, other] = [delivery('poison'), delivery('c')];
    d.submit(probe);
    d.submit(other);
    await d.idle();
    expect(dest.batches.at(-1)).toEqual(['poison']);
    // The probe: the rest of this cool-off (up to 500 ms) and one more; the other: the rest alone.
    const heldMs = (d: { settled: string[] }): number =>
      Number(/^hold (\d+) the circuit is open$/.exec(d.settled[0] ?? '')?.[1]);
    expect(heldMs(probe)).toBeGreaterThan(500);
    expect(heldMs(probe)).toBeLessThanOrEqual(1000);
    expect(heldMs(other)).toBeLessThanOrEqual(500);
    expect(heldMs(probe) - heldMs(other)).toBeGreaterThanOrEqual(500);
    answer = { kind: 'accepted' };
  });

  it('a 4xx refusal does not open the circuit', async () => {
    const dest = new FakeDestination(1, async () => classify(400, 'bad', {}));
    const { d } = protect(dest, breakerSettings);
    for (const id of ['a', 'b', 'c']) d.submit(delivery(id));
    await d.idle();
    expect(dest.batches).toHaveLength(3);
    expect(d.guard.state).toBe('closed');
  });

  it('sends at most rate x time + burst, and keeps the rest waiting (none dropped)', async () => {
    const dest = new FakeDestination(1, async () => ({ kind: 'accepted' }));
    const { d } = protect(dest, { rateLimit: { eventsPerSecond: 20, burst: 2 } }, { maxInFlight: 100 });
    const events = Array.from({ length: 10 }, (_, i) => delivery(`e${i}`));
    const started = Date.now();
    for (const e of events) d.submit(e);
    await tick();
    expect(dest.batches.length).toBe(2);
    while (events.some((e) => e.settled.length === 0)) await new Promise((r) => setTimeout(r, 20));
    const elapsed = Date.now() - started;
    // 8 beyond the burst at 20/s: at least 400 ms.
    expect(elapsed).toBeGreaterThanOrEqual(380);
    expect(events.every((e) => e.settled[0] === 'ack')).toBe(true);
  });

  it('hands events waiting for the rate limit back to the queue at shutdown', async () => {
    const dest = new FakeDestination(1, async () => ({ kind: 'accepted' }));
    const { d } = protect(dest, { rateLimit: { eventsPerSecond: 0.1, burst: 1 } });
    const events = [delivery('a'), delivery('b')];
    for (const e of events) d.submit(e);
    await tick();
    await d.idle();
    expect(events.map((e) => e.settled[0])).toEqual(['ack', 'hold 0 shutting down']);
  });
});

describe('dispatcher of a paused destination', () => {
  const paused = (o: { suspend?: boolean; autoPauseAfterMs?: number; now?: () => number } = {}) => {
    const registry = new Registry();
    const metrics = new DestinationMetrics(registry);
    const pause = new DestinationPause('fake', {
      suspend: o.suspend ?? false,
      autoPauseAfterMs: o.autoPauseAfterMs ?? 0,
      gauge: metrics.paused,
      ...(o.now ? { now: o.now } : {}),
    });
    return { registry, metrics, pause };
  };

  it('sends nothing while paused: every event is held, even at its last attempt, and sent once resumed', async () => {
    const dest = new FakeDestination(1, async () => ({ kind: 'accepted' }));
    const { registry, metrics, pause } = paused({ suspend: true });
    const d = new Dispatcher(dest, settings, metrics, pino({ level: 'silent' }), {}, pause);
    const events = [delivery('a', 1), delivery('b', 3)];
    for (const e of events) d.submit(e);
    await d.idle();
    expect(dest.batches).toEqual([]);
    expect(events.map((e) => e.settled)).toEqual([
      [`hold ${PAUSED_HOLD_MS} the destination is paused`],
      [`hold ${PAUSED_HOLD_MS} the destination is paused`],
    ]);
    expect(d.holdMs()).toBe(PAUSED_HOLD_MS);
    expect(await registry.metrics()).toMatch(/intake_destination_held_total\{destination="fake",reason="paused"\} 2/);
    pause.setSuspended(false);
    expect(d.holdMs()).toBe(0);
    const again = delivery('a', 1);
    d.submit(again);
    await d.idle();
    expect(dest.batches).toEqual([['a']]);
    expect(again.settled).toEqual(['ack']);
  });

  it('holds the events of the failure that auto-paused it instead of dead-lettering them', async () => {
    const clock = { now: 0 };
    const dest = new FakeDestination(1, async () => classify(500, 'down', {}));
    const { pause, metrics } = paused({ autoPauseAfterMs: 1000, now: () => clock.now });
    const d = new Dispatcher(dest, { ...settings, maxInFlight: 1 }, metrics, pino({ level: 'silent' }), {}, pause);
    const first = delivery('a', 1);
    d.submit(first);
    await d.idle();
    expect(first.settled).toEqual(['retry ok HTTP 500: down']);
    clock.now = 1000;
    // Its last attempt: without the pause it would be dead-lettered.
    const last = delivery('a', 3);
    d.submit(last);
    await d.idle();
    expect(pause.status()).toMatchObject({ paused: true, reason: 'auto' });
    expect(last.settled).toEqual([`hold ${PAUSED_HOLD_MS} the destination is paused`]);
  });
});

describe('dispatcher shared by namespaces', () => {
  const breakerSettings = {
    circuitBreaker: { consecutiveFailures: 2, failureRatio: 1, windowMs: 60_000, minRequests: 1, openForMs: 60_000 },
  };
  const of = (namespace: string, id: string, attempt = 1): Delivery & { settled: string[] } =>
    Object.assign(delivery(id, attempt), { namespace });
  const protect = (dest: Destination, overrides: Partial<typeof settings> = {}) => {
    const registry = new Registry();
    const d = new Dispatcher(
      dest,
      { ...settings, ...overrides },
      new DestinationMetrics(registry),
      pino({ level: 'silent' }),
      breakerSettings,
    );
    return { d, registry };
  };

  it("opens one namespace's circuit on its failures; the other namespace's events to the same receiver go on", async () => {
    // The receiver fails on team-a's payloads only (a 500 for what it cannot read).
    const dest = new FakeDestination(1, async () => ({ kind: 'accepted' }));
    dest.send = async (events) => {
      dest.batches.push(events.map((e) => e.event().id));
      return events.some((e) => e.event().id.startsWith('a')) ? classify(500, 'cannot read', {}) : { kind: 'accepted' };
    };
    const { d, registry } = protect(dest, { maxInFlight: 8 });
    const a = ['a1', 'a2', 'a3', 'a4'].map((id) => of('team-a', id));
    const b = ['b1', 'b2', 'b3', 'b4'].map((id) => of('team-b', id));
    for (let i = 0; i < 4; i++) {
      d.submit(a[i] as Delivery);
      d.submit(b[i] as Delivery);
    }
    await d.idle();
    expect(b.map((e) => e.settled.join())).toEqual(['ack', 'ack', 'ack', 'ack']);
    // team-a: two failures opened its circuit; the rest of its events wait out the cool-off unsent.
    expect(a.map((e) => e.settled[0]?.replace(/^hold \d+ /, 'hold '))).toEqual([
      'retry ok HTTP 500: cannot read',
      'hold the circuit is open',
      'hold the circuit is open',
      'hold the circuit is open',
    ]);
    expect(d.guard.stateOf('team-a')).toBe('open');
    expect(d.guard.stateOf('team-b')).toBe('closed');
    // The destination as a whole is not open: another namespace's events are delivered.
    expect(d.guard.state).toBe('closed');
    expect(d.holdMs()).toBe(0);
    expect(await registry.metrics()).toMatch(/intake_destination_circuit_state\{destination="fake"\} 0/);
  });

  it("sends the namespaces' events in turn, each request one namespace's", async () => {
    const dest = new FakeDestination(3, async () => ({ kind: 'accepted' }));
    const { d } = protect(dest, { maxInFlight: 6 });
    for (let i = 1; i <= 12; i++) d.submit(of('team-a', `a${i}`));
    for (const id of ['b1', 'b2']) d.submit(of('team-b', id));
    await d.idle();
    // team-a, alone while it submitted, sent all six slots' worth; team-b's events go out next, on
    // top of them (its share), not behind team-a's backlog nor after team-a's next answer.
    expect(dest.batches).toEqual([
      ['a1', 'a2', 'a3'],
      ['a4', 'a5', 'a6'],
      ['b1', 'b2'],
      ['a7', 'a8', 'a9'],
      ['a10', 'a11', 'a12'],
    ]);
  });

  it('holds what a namespace submits past half of maxInFlight while another sends here; alone it may take all', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const dest = new FakeDestination(1, async () => (await gate, { kind: 'accepted' }));
    const { d, registry } = protect(dest, { maxInFlight: 4 });
    // Alone: all four slots.
    const alone = ['a1', 'a2', 'a3', 'a4'].map((id) => of('team-a', id));
    for (const e of alone) d.submit(e);
    expect(d.free()).toBe(0);
    release();
    await d.idle();
    expect(alone.map((e) => e.settled.join())).toEqual(['ack', 'ack', 'ack', 'ack']);

    // team-b is present now: team-a's receiver hangs, and team-a may hold two of the four.
    let hang: () => void = () => {};
    const hanging = new Promise<void>((r) => (hang = r));
    dest.send = async (events) => {
      dest.batches.push(events.map((e) => e.event().id));
      if (events[0]?.event().id.startsWith('a')) await hanging;
      return { kind: 'accepted' };
    };
    const b1 = of('team-b', 'b1');
    d.submit(b1);
    await d.idle();
    const a = ['a5', 'a6', 'a7'].map((id) => of('team-a', id));
    for (const e of a) d.submit(e);
    expect(a[2]?.settled).toEqual(["hold 1000 the namespace holds its share of the destination's in-flight events"]);
    // team-b still has room, and its events are not behind team-a's.
    await new Promise((r) => setImmediate(r));
    expect(d.free()).toBe(2);
    const b2 = of('team-b', 'b2');
    d.submit(b2);
    await new Promise((r) => setTimeout(r, 5));
    expect(b2.settled).toEqual(['ack']);
    hang();
    await d.idle();
    expect(await registry.metrics()).toMatch(
      /intake_destination_held_total\{destination="fake",reason="namespace_share"\} 1/,
    );
  });
  it('gives a namespace that arrives while another, alone until then, holds every slot its share at once', async () => {
    let hang: () => void = () => {};
    const hanging = new Promise<void>((r) => (hang = r));
    const dest = new FakeDestination(1, async () => ({ kind: 'accepted' }));
    dest.send = async (events) => {
      dest.batches.push(events.map((e) => e.event().id));
      if (events[0]?.event().id.startsWith('a')) await hanging;
      return { kind: 'accepted' };
    };
    const { d } = protect(dest, { maxInFlight: 4 });
    // team-a alone: all four slots, and its receiver hangs on them.
    const a = ['a1', 'a2', 'a3', 'a4'].map((id) => of('team-a', id));
    for (const e of a) d.submit(e);
    await new Promise((r) => setImmediate(r));
    expect(d.free('team-a')).toBe(0);
    // team-b arrives: its share (two) on top of the bound, not after team-a's answers.
    expect(d.free('team-b')).toBe(2);
    expect(d.hasRoom(1, 'team-b')).toBe(true);
    expect(d.hasRoom(1, 'team-a')).toBe(false);
    const b = ['b1', 'b2'].map((id) => of('team-b', id));
    for (const e of b) d.submit(e);
    await new Promise((r) => setTimeout(r, 5));
    expect(b.map((e) => e.settled.join())).toEqual(['ack', 'ack']);
    // Not more than its share, nor anything more for team-a, while team-a holds its four.
    const b3 = of('team-b', 'b3');
    const b4 = of('team-b', 'b4');
    const b5 = of('team-b', 'b5');
    for (const e of [b3, b4, b5]) d.submit(e);
    expect(b5.settled).toEqual(["hold 1000 the namespace holds its share of the destination's in-flight events"]);
    expect(d.free('team-b')).toBe(0);
    expect(d.free('team-a')).toBe(0);
    const a5 = of('team-a', 'a5');
    d.submit(a5);
    expect(a5.settled).toEqual(["hold 1000 the namespace holds its share of the destination's in-flight events"]);
    await new Promise((r) => setTimeout(r, 5));
    expect([b3, b4].map((e) => e.settled.join())).toEqual(['ack', 'ack']);
    // team-a's answers come: the bound is maxInFlight again, and team-a holds its share at most.
    hang();
    await d.idle();
    expect(a.map((e) => e.settled.join())).toEqual(['ack', 'ack', 'ack', 'ack']);
    expect(d.free('team-a')).toBe(4);
    expect(d.free()).toBe(4);
  });
});

describe('dispatcher batches while the receiver is busy', () => {
  /** Answers each batch only when told to, in the order they were sent. */
  function answeredByHand(maxBatch: number): { dest: FakeDestination; answerOne: () => void } {
    const answers: Array<() => void> = [];
    const dest = new FakeDestination(
      maxBatch,
      () => new Promise<Outcome>((resolve) => answers.push(() => resolve({ kind: 'accepted' }))),
    );
    return { dest, answerOne: () => answers.shift()?.() };
  }
  const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

  it('fills a batch instead of sending a part of one while half of maxInFlight is being sent; sends it as it is once less is', async () => {
    const { dest, answerOne } = answeredByHand(4);
    const { d } = make(dest, { maxInFlight: 16 });
    const ds = Array.from({ length: 13 }, (_, i) => delivery(`e${i}`));
    for (const x of ds.slice(0, 8)) d.submit(x);
    await turn();
    expect(dest.batches.map((b) => b.length)).toEqual([4, 4]);
    // Eight being sent (half of 16): two more wait for two others instead of going as a post of two.
    d.submit(ds[8] as Delivery);
    d.submit(ds[9] as Delivery);
    await turn();
    expect(dest.batches.map((b) => b.length)).toEqual([4, 4]);
    d.submit(ds[10] as Delivery);
    d.submit(ds[11] as Delivery);
    await turn();
    expect(dest.batches.map((b) => b.length)).toEqual([4, 4, 4]);
    // One waits; an answer leaves eight being sent: it still waits; the next, four: it goes.
    d.submit(ds[12] as Delivery);
    await turn();
    answerOne();
    await turn();
    await turn();
    expect(dest.batches.map((b) => b.length)).toEqual([4, 4, 4]);
    answerOne();
    await turn();
    await turn();
    expect(dest.batches.map((b) => b.length)).toEqual([4, 4, 4, 1]);
    answerOne();
    answerOne();
    await d.idle();
    expect(ds.every((x) => x.settled.join() === 'ack')).toBe(true);
  });

  it('sends a part of a batch at once when little is being sent', async () => {
    const { dest, answerOne } = answeredByHand(4);
    const { d } = make(dest, { maxInFlight: 16 });
    const ds = Array.from({ length: 6 }, (_, i) => delivery(`e${i}`));
    for (const x of ds) d.submit(x);
    await turn();
    // Four and two: the two go along, not kept for more (nothing else is being sent).
    expect(dest.batches.map((b) => b.length)).toEqual([4, 2]);
    answerOne();
    answerOne();
    await d.idle();
  });
});
