import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { UploadRateGuard } from '../../../../ingester/http/upload-rate.js';

/** A request whose socket has read `bytesRead` bytes so far; `finish` completes its body ('end'), `close` its connection. */
function upload(socket = Object.assign(new EventEmitter(), { bytesRead: 1000, destroyed: false })) {
  const req = Object.assign(new EventEmitter(), { complete: false, socket });
  const res = { headersSent: false };
  return {
    req: req as unknown as IncomingMessage,
    res: res as unknown as ServerResponse,
    socket,
    finish: () => {
      req.complete = true;
      req.emit('end');
    },
    close: () => {
      socket.destroyed = true;
      socket.emit('close');
    },
  };
}

describe('UploadRateGuard', () => {
  let now = 0;
  const cut: Array<Socket | ServerResponse> = [];
  const guard = new UploadRateGuard({
    minBytesPerSecond: 1000,
    graceMs: 2000,
    onTooSlow: (_socket, res) => cut.push(res),
    now: () => now,
  });
  afterEach(() => {
    guard.stop();
    cut.length = 0;
    now = 0;
  });

  it('lets a body take the grace, then cuts one that arrives slower than the minimum, once', () => {
    const slow = upload();
    guard.watch(slow.req, slow.res);
    now = 1900;
    slow.socket.bytesRead += 1;
    guard.check();
    expect(cut).toEqual([]);
    // 2.5 s in with one byte: behind (deadline 2 s + 1 ms).
    now = 2500;
    guard.check();
    expect(cut).toEqual([slow.res]);
    now = 9000;
    guard.check();
    expect(cut).toHaveLength(1);
    expect(guard.watching).toBe(0);
  });

  it('keeps a body that keeps up with the minimum, and forgets bodies that completed', () => {
    const steady = upload();
    const done = upload();
    guard.watch(steady.req, steady.res);
    guard.watch(done.req, done.res);
    done.finish();
    for (now = 0; now <= 20_000; now += 500) {
      steady.socket.bytesRead += 600; // 1200 bytes/s
      guard.check();
    }
    expect(cut).toEqual([]);
    expect(guard.watching).toBe(1);
    steady.finish();
    guard.check();
    expect(guard.watching).toBe(0);
  });

  it('forgets a body the moment it completes, before any check', () => {
    const done = upload();
    guard.watch(done.req, done.res);
    expect(guard.watching).toBe(1);
    done.finish();
    expect(guard.watching).toBe(0);
  });

  it('forgets a body whose connection closed', () => {
    const gone = upload();
    guard.watch(gone.req, gone.res);
    gone.socket.destroyed = true;
    now = 60_000;
    guard.check();
    expect(cut).toEqual([]);
    expect(guard.watching).toBe(0);
  });

  it('forgets a body the moment its connection closes, before any check (a request refused before its body has no end)', () => {
    const refused = upload();
    guard.watch(refused.req, refused.res);
    expect(guard.watching).toBe(1);
    refused.close();
    expect(guard.watching).toBe(0);
    expect(cut).toEqual([]);
  });

  it("listens to a connection's close once, whatever its requests, and forgets the one being watched", () => {
    const first = upload();
    guard.watch(first.req, first.res);
    first.finish();
    const second = upload(first.socket);
    guard.watch(second.req, second.res);
    expect(first.socket.listenerCount('close')).toBe(1);
    expect(guard.watching).toBe(1);
    second.close();
    expect(guard.watching).toBe(0);
  });

  it('says a request was answered before its body only while that body still arrives', () => {
    const refused = upload();
    const socket = refused.socket as unknown as Socket;
    guard.watch(refused.req, refused.res);
    expect(guard.answeredBeforeBody(socket)).toBe(false);
    (refused.res as { headersSent: boolean }).headersSent = true;
    expect(guard.answeredBeforeBody(socket)).toBe(true);
    // Node read and dropped the rest: the connection goes on, holding no request.
    refused.finish();
    expect(guard.answeredBeforeBody(socket)).toBe(false);
    const held = Object.getOwnPropertySymbols(socket)
      .filter((k) => k.description === 'intake.watchedUpload')
      .map((k) => (socket as unknown as Record<symbol, unknown>)[k]);
    expect(held).toEqual([null]);
    const closed = upload();
    guard.watch(closed.req, closed.res);
    (closed.res as { headersSent: boolean }).headersSent = true;
    closed.close();
    expect(guard.answeredBeforeBody(closed.socket as unknown as Socket)).toBe(false);
  });

  it('does not watch a body that is already complete', () => {
    const whole = upload();
    whole.finish();
    guard.watch(whole.req, whole.res);
    expect(guard.watching).toBe(0);
  });
});
