import pino from 'pino';
import { Registry } from 'prom-client';
import { DestinationMetrics } from '../../../../../ingester/destinations/metrics.js';
import { ReceiverGuard } from '../../../../../ingester/destinations/protection/receiver-guard.js';
import { classify } from '../../../../../ingester/outbound/outcome.js';

const settings = {
  circuitBreaker: { consecutiveFailures: 2, failureRatio: 1, windowMs: 60_000, minRequests: 1, openForMs: 10_000 },
};

describe('receiver guard, one circuit per namespace', () => {
  let now = 0;
  const guard = (): ReceiverGuard =>
    new ReceiverGuard('d', settings, new DestinationMetrics(new Registry()), pino({ level: 'silent' }), () => now);
  const fail = (g: ReceiverGuard, namespace: string): void => {
    const gate = g.admit(1, namespace);
    if (gate.kind !== 'send') throw new Error(`not sent: ${gate.kind}`);
    g.answered(classify(500, 'no', {}), gate.probe, namespace);
  };
  beforeEach(() => (now = 0));

  it("opens a namespace's circuit on its own failures only", () => {
    const g = guard();
    fail(g, 'a');
    fail(g, 'a');
    expect([g.stateOf('a'), g.stateOf('b')]).toEqual(['open', 'closed']);
    expect(g.admit(1, 'a')).toEqual({ kind: 'hold', ms: 10_000 });
    expect(g.admit(1, 'b')).toEqual({ kind: 'send', probe: false });
    // The destination is not open while another namespace's events go.
    expect([g.state, g.holdMs(), g.holdMsOf('a')]).toEqual(['closed', 0, 10_000]);
  });

  it("is open as a whole, holding every namespace's events, only when every namespace's circuit is", () => {
    const g = guard();
    for (const ns of ['a', 'b']) {
      fail(g, ns);
      fail(g, ns);
    }
    now = 4_000;
    expect([g.state, g.holdMs()]).toEqual(['open', 6_000]);
    now = 10_000;
    // Each namespace probes on its own.
    expect(g.admit(1, 'a')).toEqual({ kind: 'send', probe: true });
    expect(g.admit(1, 'b')).toEqual({ kind: 'send', probe: true });
    g.answered({ kind: 'accepted' }, true, 'a');
    expect([g.stateOf('a'), g.stateOf('b'), g.state]).toEqual(['closed', 'half-open', 'closed']);
  });

  it('counts a 4xx refusal for a namespace as an answer from a working receiver', () => {
    const g = guard();
    for (let i = 0; i < 5; i++) {
      const gate = g.admit(1, 'a');
      g.answered({ kind: 'reject', reason: 'http_400', error: 'bad' }, gate.kind === 'send' && gate.probe, 'a');
    }
    expect(g.stateOf('a')).toBe('closed');
  });
});
