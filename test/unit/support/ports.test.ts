/**
 * onFreePort (test/support/ports.ts): a server whose free port was taken between freePort() and
 * its listen starts again on another; any other failure is the test's to see.
 */
import { onFreePort } from '../../support/ports.js';

describe('onFreePort', () => {
  it('starts again on another port when the first was taken meanwhile', async () => {
    const tried: number[] = [];
    const started = await onFreePort(async (port) => {
      tried.push(port);
      if (tried.length === 1)
        throw new Error(`nats-server exited: listen tcp 127.0.0.1:${port}: bind: address already in use`);
      return port;
    });
    expect(tried).toHaveLength(2);
    expect(started).toBe(tried[1]);
    expect(tried[1]).not.toBe(tried[0]);
  });

  it('does not hide any other failure, and gives up after its attempts', async () => {
    let calls = 0;
    await expect(
      onFreePort(async () => {
        calls++;
        throw new Error('prometheus exited: bad config');
      }),
    ).rejects.toThrow('bad config');
    expect(calls).toBe(1);
    calls = 0;
    await expect(
      onFreePort(async () => {
        calls++;
        throw new Error('listen EADDRINUSE');
      }, 3),
    ).rejects.toThrow('EADDRINUSE');
    expect(calls).toBe(3);
  });
});
