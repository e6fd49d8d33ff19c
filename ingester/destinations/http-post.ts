/**
 * One JSON POST to a destination, and the answer classified the way every at-least-once sender
 * does it: 2xx delivered; network errors, timeouts, 408, 429 and 5xx worth a retry (with the
 * receiver's Retry-After); any other 4xx final. Credentials and the CA come from files (mounted
 * Secrets), re-read every 30 s so a rotation needs no restart; they never reach a log.
 */
import http from 'node:http';
import https from 'node:https';
import { CredentialFiles, readTlsFile } from '../outbound-credentials.js';
import { parseRetryAfter } from '../remote-write/client.js';
import type { ClientAuth } from './settings.js';

export type Attempt =
  | { kind: 'delivered' }
  | { kind: 'retry'; reason: string; error: string; retryAfterMs?: number }
  | { kind: 'reject'; reason: string; error: string };

/** What the receiver said is kept for the dead letter and the log, but never more than this. */
const MAX_ERROR_TEXT = 512;
export const USER_AGENT = 'intake/0.1.0';

export class JsonPoster {
  /** For https: URLs (CA, client certificate); plain http: URLs get their own pool, made on first use. */
  private readonly agent: http.Agent;
  private plain?: http.Agent;
  private readonly credentials: CredentialFiles;

  constructor(
    private readonly where: string,
    private readonly auth: ClientAuth,
    private readonly timeoutMs: number,
    maxSockets: number,
  ) {
    this.credentials = new CredentialFiles(where);
    const tls = auth.tls;
    this.agent = new https.Agent({
      keepAlive: true,
      maxSockets,
      ...(tls?.caFile ? { ca: readTlsFile(tls.caFile, where) } : {}),
      ...(tls?.certFile && tls.keyFile ? { cert: readTlsFile(tls.certFile, where), key: readTlsFile(tls.keyFile, where) } : {}),
      ...(tls?.insecureSkipVerify ? { rejectUnauthorized: false } : {}),
    });
    // Fail at start-up, not at the first delivery, when a credential file is missing.
    this.authorization();
  }

  async post(url: string, body: string, headers: Record<string, string> = {}): Promise<Attempt> {
    let authorization: string | undefined;
    try {
      authorization = this.authorization();
    } catch (err) {
      return { kind: 'retry', reason: 'credentials', error: (err as Error).message };
    }
    const target = new URL(url);
    const all: Record<string, string> = {
      ...headers,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'user-agent': USER_AGENT,
    };
    if (authorization) all.authorization = authorization;
    const send = target.protocol === 'https:' ? https.request : http.request;
    // http.request refuses an https.Agent for http: URLs; plain HTTP keeps its own pool per poster.
    const agent = target.protocol === 'https:' ? this.agent : this.plainAgent();
    return new Promise((resolve) => {
      let req: http.ClientRequest;
      try {
        req = send(target, { method: 'POST', agent, headers: all, timeout: this.timeoutMs }, (res) => {
          const status = res.statusCode ?? 0;
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            if (text.length < MAX_ERROR_TEXT) text += chunk;
          });
          res.on('error', (err) => resolve({ kind: 'retry', reason: 'network', error: err.message }));
          res.on('end', () => resolve(classify(status, text.slice(0, MAX_ERROR_TEXT).trim(), res.headers['retry-after'])));
        });
      } catch (err) {
        // A request that cannot even be built (a bad header value) fails the same way every time.
        resolve({ kind: 'reject', reason: 'invalid_request', error: (err as Error).message });
        return;
      }
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)));
      req.on('error', (err) => resolve({ kind: 'retry', reason: /no answer within/.test(err.message) ? 'timeout' : 'network', error: err.message }));
      req.end(body);
    });
  }

  private plainAgent(): http.Agent {
    this.plain ??= new http.Agent({ keepAlive: true, maxSockets: this.agent.maxSockets });
    return this.plain;
  }

  close(): void {
    this.agent.destroy();
    this.plain?.destroy();
  }

  private authorization(): string | undefined {
    return this.credentials.authorization(this.auth);
  }
}

export function classify(status: number, text: string, retryAfter: string | undefined): Attempt {
  if (status >= 200 && status < 300) return { kind: 'delivered' };
  const error = `HTTP ${status}${text ? `: ${text}` : ''}`;
  if (status === 408 || status === 429 || status >= 500) {
    const ms = parseRetryAfter(retryAfter);
    return { kind: 'retry', reason: `http_${status}`, error, ...(ms !== undefined ? { retryAfterMs: ms } : {}) };
  }
  return { kind: 'reject', reason: `http_${status}`, error };
}
