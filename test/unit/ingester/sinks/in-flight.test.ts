import { InFlightLimit } from '../../../../ingester/sinks/in-flight.js';

describe('in-flight limit', () => {
  it('grants slots up to the cap and makes later requests wait for a release', async () => {
    const limit = new InFlightLimit(10);
    expect(await limit.acquire(8, 0)).toBe(8);
    const waiting = limit.acquire(5, 1000);
    limit.release(8);
    expect(await waiting).toBe(5);
    expect(limit.inUse).toBe(5);
  });

  it('gives up after the wait time with no slots taken', async () => {
    const limit = new InFlightLimit(4);
    await limit.acquire(4, 0);
    expect(await limit.acquire(1, 20)).toBe(0);
    expect(limit.inUse).toBe(4);
  });

  it('lets a request larger than the cap take the whole cap', async () => {
    const limit = new InFlightLimit(4);
    expect(await limit.acquire(100, 0)).toBe(4);
  });
});
