/**
 * A minimum upload rate for request bodies: after a short grace, a body must keep arriving at
 * least `minBytesPerSecond` on average, or its connection is answered 408 and closed. Without it
 * a body sent a byte a second holds its reservation (http/body-admission.ts) for the whole
 * `requestTimeoutMs`, so a few slow senders hold every byte of a budget at almost no cost.
 *
 * The deadline grows with what has arrived (as Apache's mod_reqtimeout MinRate does): a body
 * started at t0 that has `n` bytes in at time t is cut when t > t0 + grace + n / minBytesPerSecond.
 * Progress is read from the socket's byte counter, so nothing is added to the body's stream; one
 * timer checks every body being received a few times a second.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

export interface UploadRateOptions {
  minBytesPerSecond: number;
  graceMs: number;
  /** Called once for a body that fell behind; it answers and closes the connection. */
  onTooSlow: (req: IncomingMessage, socket: Socket) => void;
  now?: () => number;
}

interface Upload {
  req: IncomingMessage;
  socket: Socket;
  startedMs: number;
  bytesAtStart: number;
}

export class UploadRateGuard {
  private readonly uploads = new Set<Upload>();
  private timer: NodeJS.Timeout | undefined;
  private readonly now: () => number;

  constructor(private readonly options: UploadRateOptions) {
    this.now = options.now ?? (() => performance.now());
  }

  /** Watches a body from now on; the returned function stops watching it (call it when the answer is sent). */
  watch(req: IncomingMessage): () => void {
    const socket = req.socket;
    // An injected request (tests, light-my-request) has no real socket to count bytes on.
    if (req.complete || !socket || typeof socket.bytesRead !== 'number') return () => {};
    const upload: Upload = { req, socket, startedMs: this.now(), bytesAtStart: socket.bytesRead };
    this.uploads.add(upload);
    this.start();
    // The timer stops itself at its next check once nothing is watched: no timer churn per request.
    return () => this.uploads.delete(upload);
  }

  /** Cuts every body that fell behind now; public for tests. */
  check(): void {
    const now = this.now();
    const { minBytesPerSecond, graceMs } = this.options;
    for (const upload of this.uploads) {
      if (upload.req.complete || upload.socket.destroyed) {
        this.uploads.delete(upload);
        continue;
      }
      const received = upload.socket.bytesRead - upload.bytesAtStart;
      const deadline = upload.startedMs + graceMs + (received / minBytesPerSecond) * 1000;
      if (now <= deadline) continue;
      this.uploads.delete(upload);
      this.options.onTooSlow(upload.req, upload.socket);
    }
    if (this.uploads.size === 0) this.stop();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private start(): void {
    if (this.timer) return;
    const every = Math.max(50, Math.min(500, Math.floor(this.options.graceMs / 4)));
    this.timer = setInterval(() => this.check(), every);
    this.timer.unref();
  }
}
