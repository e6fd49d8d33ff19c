/** AlertSlots: places under the caps, taken before a state is written, exact while a round recounts. */
import { AlertSlots, type Slot } from '../../../../../ingester/destinations/alertmanager/alert-slots.js';

const taken = (r: Slot | string): Slot => {
  if (typeof r === 'string') throw new Error(`refused: ${r}`);
  return r;
};

describe('AlertSlots', () => {
  it('refuses past the namespace cap and past the total, and frees a place given back', () => {
    const slots = new AlertSlots(2, 3);
    const a1 = taken(slots.take('a', 'k1'));
    taken(slots.take('a', 'k2'));
    expect(slots.take('a', 'k3')).toBe('namespace');
    taken(slots.take('b', 'k4'));
    expect(slots.take('c', 'k5')).toBe('total');
    slots.release(a1);
    taken(slots.take('c', 'k5'));
    expect(slots.snapshot()).toEqual({ a: 1, b: 1, c: 1 });
  });

  it('a settled place stays taken; releasing it then changes nothing', () => {
    const slots = new AlertSlots(10, 10);
    const s = taken(slots.take('a', 'k1'));
    slots.settle(s);
    slots.release(s);
    expect(slots.snapshot()).toEqual({ a: 1 });
  });

  it('a round counts each state once: those created while it ran by their places, whether it read them or not', () => {
    const slots = new AlertSlots(100, 5);
    slots.counted({ a: 2 });
    slots.startRound();
    // Created during the round: one the round reads (k-seen), one it does not (k-missed).
    const seen = taken(slots.take('a', 'k-seen'));
    slots.settle(seen);
    const missed = taken(slots.take('a', 'k-missed'));
    slots.settle(missed);
    // The round read the two older states and k-seen; it leaves k-seen to its place.
    const counted: Record<string, number> = {};
    for (const key of ['k-old-1', 'k-old-2', 'k-seen'])
      if (!slots.createdThisRound(key)) counted.a = (counted.a ?? 0) + 1;
    expect(slots.endRound(counted)).toEqual({ a: 4 });
    // One place left under maxAlerts 5, exactly.
    taken(slots.take('b', 'k-b1'));
    expect(slots.take('b', 'k-b2')).toBe('total');
  });

  it('a place still being written when the round starts is counted by it; given back later, it frees the place', () => {
    const slots = new AlertSlots(100, 3);
    slots.counted({ a: 1 });
    const writing = taken(slots.take('a', 'k-writing'));
    slots.startRound();
    expect(slots.createdThisRound('k-writing')).toBe(true);
    expect(slots.endRound({ a: 1 })).toEqual({ a: 2 });
    slots.release(writing);
    expect(slots.snapshot()).toEqual({ a: 1 });
  });

  it('counts from elsewhere keep the places being written', () => {
    const slots = new AlertSlots(100, 100);
    taken(slots.take('a', 'k1'));
    slots.counted({ a: 5, b: 1 });
    expect(slots.snapshot()).toEqual({ a: 6, b: 1 });
  });

  it('an abandoned round leaves the counts as they were', () => {
    const slots = new AlertSlots(100, 100);
    slots.counted({ a: 3 });
    slots.startRound();
    slots.settle(taken(slots.take('a', 'k1')));
    slots.abandonRound();
    expect(slots.createdThisRound('k1')).toBe(false);
    expect(slots.snapshot()).toEqual({ a: 4 });
  });
});
