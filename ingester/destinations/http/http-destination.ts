/**
 * The HTTP destination: POST of normalised events as JSON, one event per request (batchSize 1:
 * the body is the event object) or a JSON array of up to batchSize events. The body is made of
 * the bytes the queue stored, not parsed and serialised again. `Idempotency-Key` carries the
 * event id; a batch carries a digest of its body (its composition may differ between retries; the
 * same events in the same order give the same key) and every event its own `id`, so a receiver
 * drops the repeats at-least-once delivery brings.
 */
import { shareOf } from '../protection/namespace-lanes.js';
import { hash } from 'node:crypto';
import type { ConnectGuard } from '../../outbound/guarded-connect.js';
import { OutboundClient } from '../../outbound/http-client.js';
import type { Outcome } from '../../outbound/outcome.js';
import type { HttpSettings } from '../settings.js';
import { eventIdOf, storedBytes, type Destination, type QueuedEvent } from '../destination.js';
import { carrierHeaders, type TraceCarrier } from '../../tracing/carrier.js';

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

export class HttpDestination implements Destination {
  readonly kind = 'http';
  readonly maxBatch: number;
  private readonly client: OutboundClient;

  constructor(
    readonly name: string,
    private readonly settings: HttpSettings,
    maxInFlight: number,
    /** The address guard, for a URL a tenant wrote. */
    guard?: ConnectGuard,
  ) {
    this.maxBatch = settings.batchSize;
    // One socket per request the dispatcher may have in flight, a newcomer's share on top of
    // maxInFlight included (NamespaceLanes.borrowedEvents): none waits for another's socket, and a
    // namespace's requests never queue behind those a receiver hangs on for another namespace.
    this.client = new OutboundClient({
      where: `destinations.${name}.http`,
      auth: settings,
      timeoutMs: settings.timeoutMs,
      maxConnections: Math.max(1, Math.ceil((maxInFlight + shareOf(maxInFlight)) / settings.batchSize)),
      ...(guard ? { guard } : {}),
    });
  }

  send(events: readonly QueuedEvent[], trace?: TraceCarrier): Promise<Outcome> {
    const single = this.settings.batchSize === 1 && events.length === 1;
    const body = single ? storedBytes((events[0] as QueuedEvent).json) : arrayOf(events);
    const key = single ? eventIdOf(events[0] as QueuedEvent) : `batch-${hash('sha256', body, 'hex')}`;
    return this.client.post(this.settings.url, body, {
      ...this.settings.headers,
      'content-type': 'application/json',
      'idempotency-key': key,
      'intake-event-count': String(events.length),
      ...(trace ? carrierHeaders(trace) : {}),
    });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

/** `[e1,e2,...]` from the stored JSON of each event. */
function arrayOf(events: readonly QueuedEvent[]): Buffer {
  const parts: Buffer[] = [OPEN];
  for (let i = 0; i < events.length; i++) {
    if (i > 0) parts.push(COMMA);
    parts.push(storedBytes((events[i] as QueuedEvent).json));
  }
  parts.push(CLOSE);
  return Buffer.concat(parts);
}
