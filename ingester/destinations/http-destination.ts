/**
 * The HTTP destination: POST of normalised events as JSON, one event per request (batchSize 1:
 * the body is the event object) or a JSON array of up to batchSize events. `Idempotency-Key`
 * carries the event id; a batch carries a digest of its ids (its composition may differ between
 * retries) and every event its own `id`, so a receiver drops the repeats at-least-once delivery
 * brings.
 */
import { createHash } from 'node:crypto';
import type { NormalisedEvent } from '../core/event.js';
import { OutboundClient } from '../outbound/http-client.js';
import type { Outcome } from '../outbound/outcome.js';
import type { HttpSettings } from './settings.js';
import type { Destination } from './destination.js';

export class HttpDestination implements Destination {
  readonly kind = 'http';
  readonly maxBatch: number;
  private readonly client: OutboundClient;

  constructor(
    readonly name: string,
    private readonly settings: HttpSettings,
    maxInFlight: number,
  ) {
    this.maxBatch = settings.batchSize;
    // One socket per request the dispatcher may have in flight: none waits for another's socket.
    this.client = new OutboundClient({
      where: `destinations.${name}.http`,
      auth: settings,
      timeoutMs: settings.timeoutMs,
      maxConnections: Math.max(1, Math.ceil(maxInFlight / settings.batchSize)),
    });
  }

  send(events: readonly NormalisedEvent[]): Promise<Outcome> {
    const single = this.settings.batchSize === 1 && events.length === 1;
    const body = JSON.stringify(single ? events[0] : events);
    const key = single
      ? (events[0] as NormalisedEvent).id
      : `batch-${createHash('sha256')
          .update(events.map((e) => e.id).join('\n'))
          .digest('hex')}`;
    return this.client.post(this.settings.url, body, {
      ...this.settings.headers,
      'content-type': 'application/json',
      'idempotency-key': key,
      'intake-event-count': String(events.length),
    });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
