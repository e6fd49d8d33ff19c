/**
 * Sends one compressed WriteRequest and classifies the answer the way the spec asks: 2xx done;
 * 5xx, 429 and network errors worth a retry; any other 4xx final (the receiver's reason is kept
 * for the log). Credentials and the CA are read from files, so a rotated Secret is picked up.
 */
import http from 'node:http';
import https from 'node:https';
import { CredentialFiles, readTlsFile } from '../outbound-credentials.js';
import type { RemoteWriteSettings } from './settings.js';
import type { Protocol } from './wire.js';

export type SendOutcome =
  | { kind: 'sent'; status: number }
  /** The receiver does not speak 2.0: 415, or a 2xx without the *-Written headers every 2.0 receiver sends. */
  | { kind: 'unsupported'; status: number }
  | { kind: 'retry'; status?: number; retryAfterMs?: number; reason: string }
  | { kind: 'rejected'; status: number; reason: string };

const USER_AGENT = 'intake-remote-write/0.1.0';
/** Error bodies are logged, but never more than this (receivers echo whole series back). */
const MAX_REASON = 512;

export class RemoteWriteClient {
  private readonly url: URL;
  private readonly agent: http.Agent;
  private readonly credentials = new CredentialFiles('remoteWrite');

  constructor(private readonly settings: RemoteWriteSettings) {
    this.url = new URL(settings.url);
    const tls = settings.tls;
    this.agent =
      this.url.protocol === 'https:'
        ? new https.Agent({
            keepAlive: true,
            ...(tls?.caFile ? { ca: readTlsFile(tls.caFile, 'remoteWrite') } : {}),
            ...(tls?.certFile && tls.keyFile ? { cert: readTlsFile(tls.certFile, 'remoteWrite'), key: readTlsFile(tls.keyFile, 'remoteWrite') } : {}),
          })
        : new http.Agent({ keepAlive: true });
    // Fail at start-up, not at the first send, when a credential file is missing.
    this.authorization();
  }

  /** The receiver's origin, for logs: never the path's query or any credential. */
  get origin(): string {
    return this.url.origin;
  }

  send(body: Buffer, tenant: string, attempt: number, signal: AbortSignal, protocol: Protocol = '1.0'): Promise<SendOutcome> {
    const headers: Record<string, string> = {
      ...this.settings.headers,
      'content-encoding': 'snappy',
      'content-type': protocol === '2.0' ? 'application/x-protobuf;proto=io.prometheus.write.v2.Request' : 'application/x-protobuf',
      'user-agent': USER_AGENT,
      'x-prometheus-remote-write-version': protocol === '2.0' ? '2.0.0' : '0.1.0',
      'content-length': String(body.length),
    };
    if (this.settings.tenantHeader) headers[this.settings.tenantHeader] = tenant;
    if (attempt > 0) headers['retry-attempt'] = String(attempt);
    const auth = this.authorization();
    if (auth) headers.authorization = auth;
    const request = this.url.protocol === 'https:' ? https.request : http.request;
    return new Promise((resolve) => {
      try {
        this.post(request, headers, body, signal, protocol, resolve);
      } catch (err) {
        // A request that cannot even be built (a bad header value) would fail the same way every time.
        resolve({ kind: 'rejected', status: 0, reason: (err as Error).message });
      }
    });
  }

  private post(request: typeof http.request, headers: Record<string, string>, body: Buffer, signal: AbortSignal, protocol: Protocol, resolve: (o: SendOutcome) => void): void {
    {
      const req = request(this.url, { method: 'POST', agent: this.agent, headers, timeout: this.settings.timeoutMs, signal }, (res) => {
        const status = res.statusCode ?? 0;
        let reason = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (reason.length < MAX_REASON) reason += chunk;
        });
        res.on('error', (err) => resolve({ kind: 'retry', status, reason: err.message }));
        res.on('end', () => {
          const outcome = classify(status, reason.slice(0, MAX_REASON).trim(), res.headers['retry-after']);
          const confirmed = res.headers['x-prometheus-remote-write-samples-written'] !== undefined;
          resolve(protocol === '2.0' && (status === 415 || (outcome.kind === 'sent' && !confirmed)) ? { kind: 'unsupported', status } : outcome);
        });
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.settings.timeoutMs} ms`)));
      req.on('error', (err) => resolve({ kind: 'retry', reason: err.message }));
      req.end(body);
    }
  }

  close(): void {
    this.agent.destroy();
  }

  private authorization(): string | undefined {
    return this.credentials.authorization(this.settings);
  }
}

export function classify(status: number, reason: string, retryAfter: string | undefined): SendOutcome {
  if (status >= 200 && status < 300) return { kind: 'sent', status };
  if (status === 429) {
    const ms = parseRetryAfter(retryAfter);
    return { kind: 'retry', status, reason, ...(ms !== undefined ? { retryAfterMs: ms } : {}) };
  }
  if (status >= 400 && status < 500) return { kind: 'rejected', status, reason };
  return { kind: 'retry', status, reason };
}

/** Retry-After as delay-seconds or an HTTP-date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, nowMs = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
