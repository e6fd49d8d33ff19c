/**
 * The HTTP destination: POST of normalised events as JSON, one event per request (batchSize 1:
 * the body is the event object) or a JSON array of up to batchSize events. `Idempotency-Key`
 * carries the event id; a batch carries a digest of its ids (its composition may differ between
 * retries) and every event its own `id`, so a receiver drops the repeats at-least-once delivery
 * brings.
 */
import { createHash } from 'node:crypto';
import type { NormalisedEvent } from '../events.js';
import { JsonPoster, type Attempt } from './http-post.js';
import type { HttpSettings } from './settings.js';
import type { Destination } from './destination.js';

export class HttpDestination implements Destination {
  readonly kind = 'http';
  readonly maxBatch: number;
  private readonly poster: JsonPoster;

  constructor(
    readonly name: string,
    private readonly s: HttpSettings,
    maxInFlight: number,
  ) {
    this.maxBatch = s.batchSize;
    this.poster = new JsonPoster(`destinations.${name}.http`, s, s.timeoutMs, Math.max(1, Math.ceil(maxInFlight / s.batchSize)));
  }

  send(events: readonly NormalisedEvent[]): Promise<Attempt> {
    const single = this.s.batchSize === 1 && events.length === 1;
    const body = JSON.stringify(single ? events[0] : events);
    const key = single ? (events[0] as NormalisedEvent).id : `batch-${createHash('sha256').update(events.map((e) => e.id).join('\n')).digest('hex')}`;
    return this.poster.post(this.s.url, body, {
      ...this.s.headers,
      'idempotency-key': key,
      'intake-event-count': String(events.length),
    });
  }

  async close(): Promise<void> {
    this.poster.close();
  }
}
