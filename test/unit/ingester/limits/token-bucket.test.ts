import { TokenBucket } from '../../../../ingester/limits/token-bucket.js';

describe('TokenBucket', () => {
  it('starts full and admits up to its burst at once', () => {
    const b = new TokenBucket(10, 5, 0);
    for (let i = 0; i < 5; i++) {
      expect(b.waitMs(1, 0)).toBe(0);
      b.take(1);
    }
    expect(b.waitMs(1, 0)).toBeCloseTo(100);
  });

  it('refills at its rate, never past its burst', () => {
    const b = new TokenBucket(10, 5, 0);
    b.take(5);
    expect(b.waitMs(1, 100)).toBe(0);
    expect(b.waitMs(5, 100_000)).toBe(0);
    b.take(5);
    expect(b.waitMs(1, 100_000)).toBeCloseTo(100);
  });

  it('admits a batch larger than the burst from a full bucket, leaving a debt that holds the average rate', () => {
    const b = new TokenBucket(10, 5, 0);
    expect(b.waitMs(20, 0)).toBe(0);
    b.take(20);
    // 15 in debt, then 1 needed: 1.6 s at 10/s.
    expect(b.waitMs(1, 0)).toBeCloseTo(1600);
    expect(b.waitMs(20, 1000)).toBeCloseTo(1000);
  });

  it('reports the time until a charged debt is paid', () => {
    const b = new TokenBucket(1, 1, 0);
    expect(b.debtMs(0)).toBe(0);
    b.take(3);
    expect(b.debtMs(0)).toBeCloseTo(2000);
    expect(b.debtMs(2001)).toBe(0);
  });

  it('settles a reservation: gives back what was not used, never past its size, and takes an overrun as a debt', () => {
    const b = new TokenBucket(100, 1000, 0);
    b.take(500);
    b.take(500);
    b.settle(500, 20, 0);
    expect(b.waitMs(480, 0)).toBe(0);
    expect(b.waitMs(481, 0)).toBeGreaterThan(0);
    // Refilled to its size while the second reservation was held: the refund stops at the size.
    b.settle(500, 0, 10_000);
    expect(b.waitMs(1000, 10_000)).toBe(0);
    b.take(1000);
    expect(b.waitMs(1, 10_000)).toBeCloseTo(10);
    b.settle(1000, 1200, 10_000);
    expect(b.debtMs(10_000)).toBeCloseTo(2000);
  });

  it('gives back tokens taken for refused work, never past its size', () => {
    const b = new TokenBucket(1, 10, 0);
    b.take(6);
    b.giveBack(6, 0);
    expect(b.waitMs(10, 0)).toBe(0);
    // Refilled while the work was in flight: the refund stops at the size.
    b.take(10);
    b.giveBack(10, 4000);
    expect(b.waitMs(10, 4000)).toBe(0);
    expect(b.waitMs(10.001, 4000)).toBe(0); // a cost above the size needs a full bucket
    b.take(10);
    expect(b.waitMs(1, 4000)).toBeCloseTo(1000);
    // A batch larger than the bucket left a debt: giving it back fills the bucket, no more.
    const big = new TokenBucket(1, 10, 0);
    big.take(25);
    big.giveBack(25, 0);
    big.take(10);
    expect(big.waitMs(1, 0)).toBeCloseTo(1000);
  });

  it('keeps its tokens, up to the new size, when reconfigured', () => {
    const b = new TokenBucket(10, 10, 0);
    b.take(4);
    b.configure(5, 3, 0);
    expect(b.perSecond).toBe(5);
    expect(b.burst).toBe(3);
    expect(b.waitMs(3, 0)).toBe(0);
    b.take(3);
    expect(b.waitMs(1, 0)).toBeCloseTo(200);
  });
});
