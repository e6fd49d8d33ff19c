/**
 * Sends one compressed WriteRequest with intake's outbound client (deadline, answer cap, TLS,
 * credentials, one retry classification: ../outbound/outcome.ts), with the protocol's headers,
 * and tells a receiver that does not speak 2.0 apart.
 */
import { OutboundClient } from '../../outbound/http-client.js';
import type { Outcome } from '../../outbound/outcome.js';
import type { RemoteWriteSettings } from './settings.js';
import type { Protocol } from './wire.js';

export type SendOutcome =
  | Outcome
  /** The receiver does not speak 2.0: 415, or a 2xx without the *-Written headers every 2.0 receiver sends. */
  | { kind: 'unsupported'; status: number };

export class RemoteWriteClient {
  private readonly url: URL;
  private readonly client: OutboundClient;

  constructor(private readonly settings: RemoteWriteSettings) {
    this.url = new URL(settings.url);
    // No socket limit here: the lanes bound the requests in flight (maxInFlightPerTenant per tenant).
    this.client = new OutboundClient({ where: 'remoteWrite', auth: settings, timeoutMs: settings.timeoutMs });
  }

  /** The receiver's origin, for logs: never the path's query or any credential. */
  get origin(): string {
    return this.url.origin;
  }

  async send(
    body: Buffer,
    tenant: string,
    attempt: number,
    signal: AbortSignal,
    protocol: Protocol = '1.0',
  ): Promise<SendOutcome> {
    const headers: Record<string, string> = {
      ...this.settings.headers,
      'content-encoding': 'snappy',
      'content-type':
        protocol === '2.0' ? 'application/x-protobuf;proto=io.prometheus.write.v2.Request' : 'application/x-protobuf',
      'x-prometheus-remote-write-version': protocol === '2.0' ? '2.0.0' : '0.1.0',
    };
    if (this.settings.tenantHeader) headers[this.settings.tenantHeader] = tenant;
    if (attempt > 0) headers['retry-attempt'] = String(attempt);
    const outcome = await this.client.post(this.url, body, headers, signal);
    if (protocol !== '2.0') return outcome;
    if (outcome.status === 415) return { kind: 'unsupported', status: 415 };
    const confirmed =
      outcome.kind === 'accepted' && outcome.headers?.['x-prometheus-remote-write-samples-written'] !== undefined;
    return outcome.kind === 'accepted' && !confirmed ? { kind: 'unsupported', status: outcome.status ?? 0 } : outcome;
  }

  close(): Promise<void> {
    return this.client.close();
  }
}
