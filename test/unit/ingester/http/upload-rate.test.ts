import type { IncomingMessage } from 'node:http';
import { UploadRateGuard } from '../../../../ingester/http/upload-rate.js';

/** A request whose socket has read `bytesRead` bytes so far. */
function upload(): { req: IncomingMessage; socket: { bytesRead: number; destroyed: boolean }; finish: () => void } {
  const socket = { bytesRead: 1000, destroyed: false };
  const req = { complete: false, socket } as unknown as IncomingMessage & { complete: boolean };
  return { req, socket, finish: () => void ((req as { complete: boolean }).complete = true) };
}

describe('UploadRateGuard', () => {
  let now = 0;
  const cut: IncomingMessage[] = [];
  const guard = new UploadRateGuard({
    minBytesPerSecond: 1000,
    graceMs: 2000,
    onTooSlow: (req) => cut.push(req),
    now: () => now,
  });
  afterEach(() => {
    guard.stop();
    cut.length = 0;
    now = 0;
  });

  it('lets a body take the grace, then cuts one that arrives slower than the minimum', () => {
    const slow = upload();
    guard.watch(slow.req);
    now = 1900;
    slow.socket.bytesRead += 1;
    guard.check();
    expect(cut).toEqual([]);
    // 2.5 s in with one byte: behind (deadline 2 s + 1 ms).
    now = 2500;
    guard.check();
    expect(cut).toEqual([slow.req]);
    // Cut once only.
    now = 9000;
    guard.check();
    expect(cut).toHaveLength(1);
  });

  it('keeps a body that keeps up with the minimum, and forgets bodies that completed', () => {
    const steady = upload();
    const done = upload();
    guard.watch(steady.req);
    guard.watch(done.req);
    done.finish();
    for (now = 0; now <= 20_000; now += 500) {
      steady.socket.bytesRead += 600; // 1200 bytes/s
      guard.check();
    }
    expect(cut).toEqual([]);
    steady.finish();
  });

  it('stops watching a body when told (its answer was sent)', () => {
    const stalled = upload();
    const unwatch = guard.watch(stalled.req);
    unwatch();
    now = 60_000;
    guard.check();
    expect(cut).toEqual([]);
  });

  it('does not watch a body that is already complete', () => {
    const whole = upload();
    whole.finish();
    guard.watch(whole.req);
    now = 60_000;
    guard.check();
    expect(cut).toEqual([]);
  });
});
