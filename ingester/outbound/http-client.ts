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
 * cap or the deadline was still delivered (the receiver said so), it is not sent again.
 *
 * Built on undici (the engine of Node's fetch): its request() gives status, headers and the body
 * as a stream, takes an AbortSignal that destroys the request's socket, and its Agent pools
 * keep-alive connections per origin with a connection limit and TLS options.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { CredentialFiles, readTlsFile, type OutboundAuth } from './credentials.js';
import { classify, MAX_ERROR_TEXT, type Outcome } from './outcome.js';

/** Answers are read up to this many bytes unless the client is told otherwise. */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

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
}

export class OutboundClient {
  private readonly agent: Agent;
  private readonly credentials: CredentialFiles;
  private readonly maxResponseBytes: number;

  constructor(private readonly options: OutboundClientOptions) {
    this.credentials = new CredentialFiles(options.where);
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const tls = options.auth.tls;
    this.agent = new Agent({
      ...(options.maxConnections !== undefined ? { connections: options.maxConnections } : {}),
      // The deadline below covers these too; they are set so undici never waits longer on its own.
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connect: {
        ...(tls?.caFile ? { ca: readTlsFile(tls.caFile, options.where) } : {}),
        ...(tls?.certFile && tls.keyFile
          ? { cert: readTlsFile(tls.certFile, options.where), key: readTlsFile(tls.keyFile, options.where) }
          : {}),
        ...(tls?.insecureSkipVerify ? { rejectUnauthorized: false } : {}),
      },
    });
    // Fail at start-up, not at the first request, when a credential file is missing.
    this.credentials.authorization(options.auth);
  }

  /** POSTs `body`; never rejects. `signal` aborts it early (the sender is shutting down). */
  async post(
    url: string | URL,
    body: Buffer | string,
    headers: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<Outcome> {
    let authorization: string | undefined;
    try {
      authorization = this.credentials.authorization(this.options.auth);
    } catch (err) {
      return { kind: 'retry', reason: 'credentials', error: (err as Error).message };
    }
    const all: Record<string, string> = {
      ...headers,
      'content-length': String(Buffer.byteLength(body)),
      'user-agent': USER_AGENT,
    };
    if (authorization) all.authorization = authorization;
    if (signal?.aborted) return ABORTED;
    // One controller per request, aborted by the deadline or the caller's signal; the listener on
    // the caller's long-lived signal is removed when the request ends, so none accumulate.
    const abort = new AbortController();
    const deadline = setTimeout(() => abort.abort(new Error('deadline')), this.options.timeoutMs);
    const forward = (): void => abort.abort(signal?.reason);
    signal?.addEventListener('abort', forward, { once: true });
    try {
      const res = await request(url, {
        method: 'POST',
        headers: all,
        body,
        dispatcher: this.agent,
        signal: abort.signal,
      });
      const text = await this.readAnswer(res.body, res.statusCode >= 200 && res.statusCode < 300);
      return classify(res.statusCode, text.trim(), res.headers);
    } catch (err) {
      return this.failure(err as Error & { code?: string }, abort.signal.aborted, signal);
    } finally {
      clearTimeout(deadline);
      signal?.removeEventListener('abort', forward);
    }
  }

  /**
   * Reads the answer within the cap and the deadline, keeping the first MAX_ERROR_TEXT characters
   * of an error answer. When the cap or the deadline cuts it, the body is destroyed (and with it
   * the socket): the status already says what happened, the rest is not worth a byte more.
   */
  private async readAnswer(body: AsyncIterable<Buffer> & { destroy(): void }, delivered: boolean): Promise<string> {
    let read = 0;
    let text = '';
    try {
      for await (const chunk of body) {
        read += chunk.length;
        if (!delivered && text.length < MAX_ERROR_TEXT)
          text += chunk.toString('utf8', 0, Math.min(chunk.length, MAX_ERROR_TEXT));
        if (read > this.maxResponseBytes) break;
      }
    } catch {
      // The deadline passed while the body was still coming: what was read is enough.
    } finally {
      body.destroy();
    }
    return text.slice(0, MAX_ERROR_TEXT);
  }

  private failure(err: Error & { code?: string }, aborted: boolean, signal: AbortSignal | undefined): Outcome {
    if (signal?.aborted) return ABORTED;
    if (aborted || err.code === 'UND_ERR_HEADERS_TIMEOUT' || err.code === 'UND_ERR_BODY_TIMEOUT') {
      return {
        kind: 'retry',
        reason: 'timeout',
        error: `no complete answer within ${this.options.timeoutMs} ms; the request was aborted`,
      };
    }
    // A request that cannot even be built (a bad header value) fails the same way every time.
    if (err.code === 'UND_ERR_INVALID_ARG') return { kind: 'reject', reason: 'invalid_request', error: err.message };
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
