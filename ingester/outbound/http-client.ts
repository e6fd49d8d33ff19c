/**
 * The one HTTP client of everything intake sends out (destinations, remote write): a keep-alive
 * connection pool per origin with a bounded number of sockets, TLS and credentials from files,
 * `User-Agent: intake/<version>`, and answers classified in one vocabulary (outcome.ts).
 *
 * Every request is bounded twice, because a receiver must never be able to hold a sender:
 * - a TOTAL deadline (`timeoutMs`): waiting for a socket, sending, the answer's headers and the
 *   reading of its body, together. An idle-socket timeout is not enough: a receiver that sends one
 *   byte a second is never idle, and held every request (and, through lease expiry, every re-send)
 *   for good. At the deadline the request is aborted and its socket destroyed.
 * - a cap on the answer's bytes read (`maxResponseBytes`): past it the socket is destroyed; a
 *   receiver's 2 GB answer is not downloaded.
 * The status line decides the outcome, as in Prometheus' senders: a 2xx whose body is cut at the
 * cap or the deadline was still accepted (the receiver said so), it is not sent again.
 *
 * Built on undici (the engine of Node's fetch): its Agent pools keep-alive connections per origin
 * with a connection limit and TLS options, and its dispatch API hands the answer over as calls
 * (class Exchange below) and aborts a request by destroying its socket.
 */
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, type Dispatcher } from 'undici';
import { CredentialFiles, readTlsFile, type OutboundAuth } from './credentials.js';
import { ADDRESS_REFUSED, guardedConnector, type ConnectGuard } from './guarded-connect.js';
import { classify, MAX_ERROR_TEXT, type Outcome } from './outcome.js';

/** Answers are read up to this many bytes unless the client is told otherwise. */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

/** URLs whose origin and path a client keeps parsed (a client posts to one or a few). */
const MAX_TARGETS = 16;

export const USER_AGENT = `intake/${packageVersion()}`;

const ABORTED: Outcome = { kind: 'retry', reason: 'aborted', error: 'the sender is shutting down' };

export interface OutboundClientOptions {
  /** The setting that configured this client, named in errors (`remoteWrite`, `destinations[0] (x).http`). */
  where: string;
  auth: OutboundAuth;
  /** Total deadline of one request, from the call to the last byte read. */
  timeoutMs: number;
  /** Sockets per origin; undefined: no limit beyond the caller's own bound on requests in flight. */
  maxConnections?: number;
  maxResponseBytes?: number;
  /** The address guard (a URL a tenant wrote): each connection goes only to an address it allows. */
  guard?: ConnectGuard;
}

export class OutboundClient {
  private readonly agent: Agent;
  private readonly credentials: CredentialFiles;
  private readonly maxResponseBytes: number;
  private readonly targets = new Map<string, { origin: string; path: string }>();

  constructor(private readonly options: OutboundClientOptions) {
    this.credentials = new CredentialFiles(options.where);
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const tls = options.auth.tls;
    const connect = {
      ...(tls?.caFile ? { ca: readTlsFile(tls.caFile, options.where) } : {}),
      ...(tls?.certFile && tls.keyFile
        ? { cert: readTlsFile(tls.certFile, options.where), key: readTlsFile(tls.keyFile, options.where) }
        : {}),
      ...(tls?.insecureSkipVerify ? { rejectUnauthorized: false } : {}),
    };
    this.agent = new Agent({
      ...(options.maxConnections !== undefined ? { connections: options.maxConnections } : {}),
      // The deadline below covers these too; they are set so undici never waits longer on its own.
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      // Redirects are never followed: dispatch() has no redirect handler (a 3xx is a final answer, outcome.ts).
      connect: options.guard ? guardedConnector(options.guard, connect) : connect,
    });
    // Fail at start-up, not at the first request, when a credential file is missing.
    this.credentials.authorization(options.auth);
  }

  /** POSTs `body`; never rejects. `signal` aborts it early (the sender is shutting down). */
  post(
    url: string | URL,
    body: Buffer | string,
    headers: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<Outcome> {
    let authorization: string | undefined;
    try {
      authorization = this.credentials.authorization(this.options.auth);
    } catch (err) {
      return Promise.resolve({ kind: 'retry', reason: 'credentials', error: (err as Error).message });
    }
    // Content-Length is undici's: it sets it from the body (a Buffer or string) itself.
    const all: Record<string, string> = { ...headers, 'user-agent': USER_AGENT };
    if (authorization) all.authorization = authorization;
    if (signal?.aborted) return Promise.resolve(ABORTED);
    let origin: string;
    let path: string;
    try {
      ({ origin, path } = this.target(url));
    } catch (err) {
      // Settings validate URLs; one that still cannot be parsed fails the same way every time.
      return Promise.resolve({ kind: 'reject', reason: 'invalid_request', error: (err as Error).message });
    }
    return new Promise((resolve) => {
      const exchange = new Exchange(
        this.maxResponseBytes,
        (err) => this.failure(err, signal),
        (outcome) => {
          clearTimeout(deadline);
          signal?.removeEventListener('abort', forward);
          resolve(outcome);
        },
      );
      const deadline = setTimeout(() => exchange.expire(this.timedOut()), this.options.timeoutMs);
      // The listener on the caller's long-lived signal is removed when the request ends, so none accumulate.
      const forward = (): void => exchange.cancel(ABORTED);
      signal?.addEventListener('abort', forward, { once: true });
      this.agent.dispatch({ origin, path, method: 'POST', headers: all, body }, exchange);
    });
  }

  /** Origin and path of `url`, parsed once: a client posts to one or a few URLs, again and again. */
  private target(url: string | URL): { origin: string; path: string } {
    const key = String(url);
    let found = this.targets.get(key);
    if (!found) {
      const parsed = new URL(key);
      found = { origin: parsed.origin, path: parsed.pathname + parsed.search };
      if (this.targets.size < MAX_TARGETS) this.targets.set(key, found);
    }
    return found;
  }

  private timedOut(): Outcome {
    return {
      kind: 'retry',
      reason: 'timeout',
      error: `no complete answer within ${this.options.timeoutMs} ms; the request was aborted`,
    };
  }

  private failure(err: Error & { code?: string }, signal: AbortSignal | undefined): Outcome {
    if (signal?.aborted) return ABORTED;
    if (err.code === 'UND_ERR_HEADERS_TIMEOUT' || err.code === 'UND_ERR_BODY_TIMEOUT') return this.timedOut();
    // A request that cannot even be built (a bad header value) fails the same way every time.
    if (err.code === 'UND_ERR_INVALID_ARG') return { kind: 'reject', reason: 'invalid_request', error: err.message };
    // The address guard refused the receiver's address: a setting decides that, sending again gives the same answer.
    if (err.code === ADDRESS_REFUSED) return { kind: 'reject', reason: 'address_refused', error: err.message };
    const cause = (err as { cause?: { message?: string } }).cause?.message;
    return { kind: 'retry', reason: 'network', error: cause ? `${err.message}: ${cause}` : err.message };
  }

  /** Closes every connection now; requests still running end as `network` or `aborted`. */
  async close(): Promise<void> {
    await this.agent.destroy();
  }
}

/** The version in intake's package.json, found from this module upwards (sources, dist/, the image's /app). */
function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'intake' && pkg.version) return pkg.version;
    } catch {
      // No package.json here: look one level up.
    }
    const parent = dirname(dir);
    if (parent === dir) return 'unknown';
    dir = parent;
  }
}

/**
 * One request and its answer, as undici's dispatch handler: status, headers and the answer's
 * bytes arrive as calls, with no stream, async iterator, AbortController or promise per chunk
 * (undici's request() builds all of those; measured on loopback it cost about 1.5x the CPU per
 * request). The outcome is settled once: by the end of the answer, a failure, the deadline, the
 * caller's signal, or the cap on the answer's bytes; whatever comes after is ignored.
 */
class Exchange implements Dispatcher.DispatchHandler {
  private controller?: Dispatcher.DispatchController;
  private status = 0;
  private headers: IncomingHttpHeaders = {};
  private read = 0;
  private text = '';
  private settled = false;

  constructor(
    private readonly maxResponseBytes: number,
    /** What a failure of the request before any answer means (the client knows the caller's signal). */
    private readonly failure: (err: Error & { code?: string }) => Outcome,
    private readonly done: (outcome: Outcome) => void,
  ) {}

  /** The deadline passed: a 2xx already received still counts (the receiver said so), else a timeout. */
  expire(timedOut: Outcome): void {
    this.cancel(this.status > 0 ? this.outcome() : timedOut);
  }

  /** Ends the exchange with `outcome` and aborts the request (its socket is destroyed). */
  cancel(outcome: Outcome): void {
    this.settle(outcome);
    this.controller?.abort(new Error('aborted by intake'));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // Cancelled while it waited for a socket: it goes no further.
    if (this.settled) controller.abort(new Error('aborted by intake'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.status = statusCode;
    this.headers = headers;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.read += chunk.length;
    // The first MAX_ERROR_TEXT characters of an error answer are kept; a 2xx's body is not read.
    if ((this.status < 200 || this.status >= 300) && this.text.length < MAX_ERROR_TEXT)
      this.text += chunk.toString('utf8', 0, Math.min(chunk.length, MAX_ERROR_TEXT));
    // Past the cap the rest is not worth a byte more: the status already says what happened.
    if (this.read > this.maxResponseBytes) this.cancel(this.outcome());
  }

  onResponseEnd(): void {
    this.settle(this.outcome());
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.settle(this.status > 0 ? this.outcome() : this.failure(err));
  }

  private outcome(): Outcome {
    return classify(this.status, this.text.slice(0, MAX_ERROR_TEXT).trim(), this.headers);
  }

  private settle(outcome: Outcome): void {
    if (this.settled) return;
    this.settled = true;
    this.done(outcome);
  }
}
