import { ROOT_CONTEXT, SpanKind, trace, TraceFlags, type Context } from '@opentelemetry/api';
import { AlwaysOnSampler, SamplingDecision, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace';
import { BoundedSampler, configuredSampler, remoteContext } from '../../../../ingester/tracing/recorder.js';
import { TraceBudget } from '../../../../ingester/tracing/trace-budget.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('TraceBudget', () => {
  it("gives each namespace its share, within the replica's rate, refilled over time", () => {
    let now = 0;
    const budget = new TraceBudget(4, 2, () => now);
    expect([budget.take('a'), budget.take('a'), budget.take('a')]).toEqual([true, true, false]);
    // Another namespace still has its share, until the replica's is spent.
    expect([budget.take('b'), budget.take('b'), budget.take('c')]).toEqual([true, true, false]);
    now = 500; // half a second: one more for a, and the replica has 2 again
    expect([budget.take('a'), budget.take('a')]).toEqual([true, false]);
  });

  it('takes nothing when either rate is 0', () => {
    expect(new TraceBudget(0, 10).take('a')).toBe(false);
    expect(new TraceBudget(10, 0).take('a')).toBe(false);
  });
});

describe('BoundedSampler', () => {
  const sampled = (s: BoundedSampler, ctx: Context, kind: SpanKind, namespace = 'team-a'): boolean =>
    s.shouldSample(ctx, TRACE, 'x', kind, { 'intake.namespace': namespace }, []).decision ===
    SamplingDecision.RECORD_AND_SAMPLED;
  const sender = (flag: '00' | '01'): Context => remoteContext(`00-${TRACE}-${SPAN}-${flag}`, undefined) as Context;

  it("honours a sender's sampled flag only within the namespace's share", () => {
    const s = new BoundedSampler(
      configuredSampler({ sampler: 'parentbased_always_off', ratio: 1 }),
      new TraceBudget(100, 2),
    );
    expect([1, 2, 3].map(() => sampled(s, sender('01'), SpanKind.SERVER))).toEqual([true, true, false]);
    expect(sampled(s, sender('00'), SpanKind.SERVER, 'team-b')).toBe(false);
    // A root under parentbased_always_off is not sampled.
    expect(sampled(s, ROOT_CONTEXT, SpanKind.SERVER, 'team-b')).toBe(false);
    expect(sampled(s, sender('01'), SpanKind.SERVER, 'team-b')).toBe(true);
  });

  it('samples roots with the configured sampler, within the budget', () => {
    const s = new BoundedSampler(new AlwaysOnSampler(), new TraceBudget(100, 1));
    expect([sampled(s, ROOT_CONTEXT, SpanKind.SERVER), sampled(s, ROOT_CONTEXT, SpanKind.SERVER)]).toEqual([
      true,
      false,
    ]);
    const none = new BoundedSampler(new TraceIdRatioBasedSampler(0), new TraceBudget(100, 100));
    expect(sampled(none, sender('01'), SpanKind.SERVER)).toBe(false);
  });

  it("follows intake's own parents without spending the budget: local steps and contexts the bus carried", () => {
    const s = new BoundedSampler(new AlwaysOnSampler(), new TraceBudget(1, 1));
    const local = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: TRACE,
      spanId: SPAN,
      traceFlags: TraceFlags.SAMPLED,
      isRemote: false,
    });
    for (let i = 0; i < 5; i++) {
      expect(sampled(s, local, SpanKind.INTERNAL)).toBe(true);
      expect(sampled(s, sender('01'), SpanKind.CLIENT)).toBe(true);
      expect(sampled(s, sender('00'), SpanKind.CLIENT)).toBe(false);
    }
    // The budget is untouched.
    expect(sampled(s, ROOT_CONTEXT, SpanKind.SERVER)).toBe(true);
  });
});
