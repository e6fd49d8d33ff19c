/** Which bulk replays may run at once: one per namespace, a bounded number of namespaces, the platform's apart or alone. */
import { IntakeError } from '../../../../ingester/core/errors.js';
import { BulkReplaySlots, type BulkReplayLimits } from '../../../../ingester/dead-letters/bulk-replay-slots.js';

const slots = (limits: Partial<BulkReplayLimits> = {}) =>
  new BulkReplaySlots<{ id: string }>({ maxRunning: 2, maxRate: 100, allNamespaces: 'shared', ...limits });

/** The refusal a start for `namespace` meets, or undefined when it is admitted. */
const refusal = (s: BulkReplaySlots<{ id: string }>, namespace: string | undefined) => {
  try {
    s.admit(namespace);
    return undefined;
  } catch (err) {
    const e = err as IntakeError;
    const body = e.toBody() as { limit?: unknown };
    return {
      status: e.statusCode,
      code: e.code,
      retryAfter: e.headers?.['retry-after'],
      message: e.message,
      limit: body.limit,
    };
  }
};

describe('BulkReplaySlots', () => {
  it('one per namespace: a second of the same namespace is refused naming it, another namespace starts', () => {
    const s = slots();
    s.hold('team-a', { id: 'a1' });
    expect(refusal(s, 'team-a')).toMatchObject({
      status: 429,
      code: 'BULK_REPLAY_RUNNING',
      retryAfter: '10',
      limit: { scope: 'namespace', max: 1 },
    });
    expect(refusal(s, 'team-a')?.message).toContain('one runs per namespace');
    expect(refusal(s, 'team-a')?.message).toContain('a1');
    expect(refusal(s, 'team-b')).toBeUndefined();
  });

  it('at most maxRunning namespaces at once, refused without naming another namespace or its replay', () => {
    const s = slots();
    s.hold('team-a', { id: 'a1' });
    s.hold('team-b', { id: 'b1' });
    const full = refusal(s, 'team-c');
    expect(full).toMatchObject({
      status: 429,
      code: 'BULK_REPLAY_REPLICA_FULL',
      retryAfter: '10',
      limit: { scope: 'replica', setting: 'deadLetter.bulkReplay.maxRunning', max: 2 },
    });
    expect(full?.message).toContain('deadLetter.bulkReplay.maxRunning');
    expect(full?.message).not.toMatch(/team-a|team-b|a1|b1/);
    expect(() => s.hold('team-c', { id: 'c1' })).toThrow(IntakeError);
    s.release('team-a', { id: 'a1' }); // not the one held: nothing given back
    expect(refusal(s, 'team-c')?.code).toBe('BULK_REPLAY_REPLICA_FULL');
    s.release(
      'team-a',
      s.running().find((r) => r.id === 'a1')!,
    );
    expect(refusal(s, 'team-c')).toBeUndefined();
  });

  it("shared: the platform's replay of all namespaces has its own slot, one at a time, beside full namespaces", () => {
    const s = slots();
    s.hold('team-a', { id: 'a1' });
    s.hold('team-b', { id: 'b1' });
    expect(refusal(s, undefined)).toBeUndefined();
    s.hold(undefined, { id: 'p1' });
    expect(refusal(s, undefined)).toMatchObject({ code: 'BULK_REPLAY_RUNNING', limit: { scope: 'platform' } });
    expect(refusal(s, undefined)?.message).toContain('all namespaces');
    expect(s.running().map((r) => r.id)).toEqual(['a1', 'b1', 'p1']);
  });

  it("exclusive: the platform's replay starts only alone, and nothing starts beside it", () => {
    const s = slots({ allNamespaces: 'exclusive' });
    const a = { id: 'a1' };
    s.hold('team-a', a);
    expect(refusal(s, undefined)).toMatchObject({ status: 429, code: 'BULK_REPLAY_EXCLUSIVE', retryAfter: '10' });
    expect(refusal(s, undefined)?.message).toContain('1 namespaces');
    s.release('team-a', a);
    s.hold(undefined, { id: 'p1' });
    expect(refusal(s, 'team-b')).toMatchObject({ code: 'BULK_REPLAY_EXCLUSIVE' });
    expect(refusal(s, 'team-b')?.message).not.toContain('p1');
  });
});
