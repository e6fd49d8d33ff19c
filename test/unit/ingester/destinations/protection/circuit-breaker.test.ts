import {
  CircuitBreaker,
  isReceiverFailure,
  type CircuitBreakerSettings,
  type CircuitState,
} from '../../../../../ingester/destinations/protection/circuit-breaker.js';

const settings: CircuitBreakerSettings = {
  consecutiveFailures: 3,
  failureRatio: 0.5,
  windowMs: 10_000,
  minRequests: 10,
  openForMs: 30_000,
};

function breaker(over: Partial<CircuitBreakerSettings> = {}): {
  b: CircuitBreaker;
  clock: { now: number };
  transitions: string[];
} {
  const clock = { now: 1_000_000 };
  const transitions: string[] = [];
  const b = new CircuitBreaker(
    { ...settings, ...over },
    () => clock.now,
    (from: CircuitState, to: CircuitState) => transitions.push(`${from}->${to}`),
  );
  return { b, clock, transitions };
}

/** Sends one request through the breaker and answers it. */
function request(b: CircuitBreaker, ok: boolean): void {
  const a = b.admit();
  if (a.kind !== 'send') throw new Error(`not admitted: ${a.kind}`);
  if (ok) b.success(a.probe);
  else b.failure(a.probe);
}

describe('circuit breaker', () => {
  it('opens after N failures in a row, and a success in between starts the count again', () => {
    const { b, transitions } = breaker();
    request(b, false);
    request(b, false);
    request(b, true);
    request(b, false);
    request(b, false);
    expect(b.state).toBe('closed');
    request(b, false);
    expect(b.state).toBe('open');
    expect(transitions).toEqual(['closed->open']);
  });

  it('holds every request for the cool-off, then lets one probe through and waits for its answer', () => {
    const { b, clock } = breaker();
    for (let i = 0; i < 3; i++) request(b, false);
    expect(b.admit()).toEqual({ kind: 'hold', ms: 30_000 });
    clock.now += 29_000;
    expect(b.admit()).toEqual({ kind: 'hold', ms: 1000 });
    expect(b.holdMs()).toBe(1000);
    clock.now += 1000;
    expect(b.state).toBe('half-open');
    expect(b.holdMs()).toBe(0);
    expect(b.admit()).toEqual({ kind: 'send', probe: true });
    expect(b.admit()).toEqual({ kind: 'wait-for-probe' });
    expect(b.admit()).toEqual({ kind: 'wait-for-probe' });
  });

  it('closes when the probe succeeds', () => {
    const { b, clock, transitions } = breaker();
    for (let i = 0; i < 3; i++) request(b, false);
    clock.now += 30_000;
    request(b, true);
    expect(b.state).toBe('closed');
    expect(b.admit()).toEqual({ kind: 'send', probe: false });
    expect(transitions).toEqual(['closed->open', 'open->half-open', 'half-open->closed']);
  });

  it('opens again for a whole cool-off when the probe fails', () => {
    const { b, clock, transitions } = breaker();
    for (let i = 0; i < 3; i++) request(b, false);
    clock.now += 30_000;
    request(b, false);
    expect(b.state).toBe('open');
    expect(b.holdMs()).toBe(30_000);
    expect(transitions).toEqual(['closed->open', 'open->half-open', 'half-open->open']);
  });

  it('a request that says nothing of the receiver lets another probe go, and stays half-open', () => {
    const { b, clock } = breaker();
    for (let i = 0; i < 3; i++) request(b, false);
    clock.now += 30_000;
    const a = b.admit();
    expect(a).toEqual({ kind: 'send', probe: true });
    b.neutral(true);
    expect(b.state).toBe('half-open');
    expect(b.admit()).toEqual({ kind: 'send', probe: true });
  });

  it('answers to requests sent before it opened do not close it or count as probes', () => {
    const { b, clock } = breaker();
    for (let i = 0; i < 3; i++) request(b, false);
    b.success(false); // a slow request from before, answered now
    expect(b.state).toBe('open');
    clock.now += 30_000;
    expect(b.admit()).toEqual({ kind: 'send', probe: true });
    b.failure(false); // another late one: not the probe
    expect(b.state).toBe('half-open');
    expect(b.admit()).toEqual({ kind: 'wait-for-probe' });
  });

  it('opens on a failure ratio over the window once it has minRequests, not before', () => {
    const { b } = breaker({ consecutiveFailures: 0 });
    // 1 of 1 failed: 100%, but too few requests to judge.
    request(b, false);
    expect(b.state).toBe('closed');
    for (let i = 0; i < 4; i++) {
      request(b, true);
      request(b, false);
    }
    // 5 failed of 9: still under minRequests.
    expect(b.state).toBe('closed');
    request(b, false);
    // 6 of 10 > 0.5
    expect(b.state).toBe('open');
  });

  it('forgets failures older than the window', () => {
    const { b, clock } = breaker({ consecutiveFailures: 0, minRequests: 4 });
    request(b, false);
    request(b, false);
    request(b, true);
    clock.now += 11_000;
    // The two failures are out of the window: 1 failure of 4 in it.
    request(b, true);
    request(b, true);
    request(b, true);
    request(b, false);
    expect(b.state).toBe('closed');
  });

  it('a ratio exactly at the threshold does not open it', () => {
    const { b } = breaker({ consecutiveFailures: 0, minRequests: 4 });
    request(b, false);
    request(b, true);
    request(b, false);
    request(b, true);
    expect(b.state).toBe('closed');
  });

  it('counts only the failures that say the receiver is in trouble', () => {
    expect(['timeout', 'network', 'http_503', 'http_429', 'http_408'].every(isReceiverFailure)).toBe(true);
    expect(['internal', 'state_store', 'credentials', 'aborted', 'invalid_request'].some(isReceiverFailure)).toBe(
      false,
    );
  });
});
