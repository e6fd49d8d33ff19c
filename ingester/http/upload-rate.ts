/**
 * A minimum upload rate for request bodies: after a short grace, a body must keep arriving at
 * least `minBytesPerSecond` on average, or its connection is closed (answered 408 if nothing was
 * answered yet). Without it a body sent a byte a second holds its reservation
 * (http/body-admission.ts), or the connection it arrives on, for the whole `requestTimeoutMs`, so
 * a few slow senders hold every byte of a budget at almost no cost.
 *
 * A body is watched from the moment its headers are in until all of it has arrived, whatever was
 * answered meanwhile: Node keeps reading (and dropping) the rest of a body that was refused (a
 * 401, a 429 before any byte was read) so as to reuse the connection, and a sender trickling that
 * rest would otherwise keep the connection for the whole request timeout.
 *
 * The deadline grows with what has arrived (as Apache's mod_reqtimeout MinRate does): a body
 * started at t0 that has `n` bytes in at time t is cut when t > t0 + grace + n / minBytesPerSecond.
 * Progress is read from the socket's byte counter, so nothing is added to the body's stream; one
 * timer checks every body being received a few times a second. A body is forgotten as soon as it
 * completes or its connection closes: a stranger's refused uploads come hundreds a second, and
 * each held until the next check (its socket, request and response) was carried through the young
 * generation's collections into the old one.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface UploadRateOptions {
  minBytesPerSecond: number;
  graceMs: number;
  /** Called once for a body that fell behind; it answers (unless `res` already was) and closes the connection. */
  onTooSlow: (socket: Socket, res: ServerResponse) => void;
  now?: () => number;
}

/** The upload being watched on a socket, so that its close forgets it (one listener per connection). */
const WATCHED = Symbol('intake.watchedUpload');
type WatchedSocket = Socket & { [WATCHED]?: Upload | null };

interface Upload {
  req: IncomingMessage;
  res: ServerResponse;
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

  /** Watches a request's body from now until it has all arrived or its connection closed. */
  watch(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    // An injected request (tests, light-my-request) has no real socket to count bytes on.
    if (req.complete || !socket || typeof socket.bytesRead !== 'number') return;
    const upload: Upload = { req, res, socket, startedMs: this.now(), bytesAtStart: socket.bytesRead };
    this.uploads.add(upload);
    const watched = socket as WatchedSocket;
    req.once('end', () => this.forget(watched, upload));
    // A request refused before its body has no end: Node drops the rest of the body, or the
    // connection closes; the close is listened to once per connection, whatever its requests.
    if (watched[WATCHED] === undefined)
      socket.once('close', () => {
        const last = watched[WATCHED];
        if (last) this.forget(watched, last);
        watched[WATCHED] = null;
      });
    watched[WATCHED] = upload;
    // The timer stops itself at a check that finds nothing to watch: no timer churn per request.
    if (!this.timer) {
      const every = Math.max(50, Math.min(500, Math.floor(this.options.graceMs / 4)));
      this.timer = setInterval(() => this.check(), every);
      this.timer.unref();
    }
  }

  /**
   * Whether the connection's request was answered while its body is still arriving (a refusal
   * before the body was read; Node reads and drops the rest to keep the connection): a client
   * error on it now is about that body, and a second answer would be garbage to the sender.
   * Every request with a body is watched from its headers on, so this needs no note of its own.
   */
  answeredBeforeBody(socket: Socket): boolean {
    const upload = (socket as WatchedSocket)[WATCHED];
    return upload !== undefined && upload !== null && upload.res.headersSent && !upload.req.complete;
  }

  /** How many bodies are being watched (for tests). */
  get watching(): number {
    return this.uploads.size;
  }

  /** Cuts every body that fell behind now, and forgets those that completed; public for tests. */
  check(): void {
    const now = this.now();
    const { minBytesPerSecond, graceMs } = this.options;
    for (const upload of this.uploads) {
      if (upload.req.complete || upload.socket.destroyed) {
        this.forget(upload.socket as WatchedSocket, upload);
        continue;
      }
      const received = upload.socket.bytesRead - upload.bytesAtStart;
      const deadline = upload.startedMs + graceMs + (received / minBytesPerSecond) * 1000;
      if (now <= deadline) continue;
      this.uploads.delete(upload);
      this.options.onTooSlow(upload.socket, upload.res);
    }
    if (this.uploads.size === 0) this.stop();
  }

  /** A body done with: out of the set, and off its socket (an idle connection holds no request). */
  private forget(socket: WatchedSocket, upload: Upload): void {
    this.uploads.delete(upload);
    if (socket[WATCHED] === upload) socket[WATCHED] = null;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
