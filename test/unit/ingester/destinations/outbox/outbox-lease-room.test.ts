/**
 * The outbox's lease loop hands a destination's dispatcher the rows its room holds, not every row
 * it read: a released backlog of 100-event rows (one request each) is leased a few rows at a time
 * as events are settled, never ten times maxInFlight at once.
 */
import { jest } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { NormalisedEvent } from '../../../../../ingester/core/event.js';
import type { Destination, QueuedEvent } from '../../../../../ingester/destinations/destination.js';
import { Dispatcher } from '../../../../../ingester/destinations/dispatcher.js';
import { DestinationMetrics } from '../../../../../ingester/destinations/metrics.js';
import { Outbox } from '../../../../../ingester/destinations/outbox/outbox.js';
import { OutboxTable } from '../../../../../ingester/destinations/outbox/outbox-table.js';
import type { Outcome } from '../../../../../ingester/outbound/outcome.js';
import { until } from '../../../../support/waiting.js';

const dir = mkdtempSync(join(tmpdir(), 'intake-outbox-room-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ev = (id: string): NormalisedEvent =>
  ({ id, integration: 'demo', namespace: 'team-a', received_at: new Date().toISOString() }) as NormalisedEvent;

/** Holds every batch until the test opens it; counts what it was handed. */
class Gated implements Destination {
  readonly kind = 'http';
  readonly maxBatch = 100;
  readonly name = 'target';
  delivered = 0;
  open = false;
  private held: Array<() => void> = [];
  async send(events: readonly QueuedEvent[]): Promise<Outcome> {
    if (!this.open) await new Promise<void>((r) => this.held.push(r));
    this.delivered += events.length;
    return { kind: 'accepted' };
  }
  release(): void {
    this.open = true;
    for (const r of this.held.splice(0)) r();
  }
  async close(): Promise<void> {}
}

it('leases no more rows than the dispatcher has room for, a backlog of 100-event rows included', async () => {
  const leases = jest.spyOn(OutboxTable.prototype, 'lease');
  const destination = new Gated();
  const maxInFlight = 250;
  const dispatcher = new Dispatcher(
    destination,
    { maxAttempts: 10, backoffMinMs: 1, backoffMaxMs: 2, maxInFlight, maxInFlightBytes: 1 << 24 },
    new DestinationMetrics(new Registry()),
    pino({ level: 'silent' }),
  );
  const outbox = new Outbox(dir, 1 << 26, { destinationsOf: () => ['target'] }, async () => 'buried');
  // The backlog is there before the loop starts (a restart, or a receiver released).
  for (let r = 0; r < 40; r++) await outbox.handOff(Array.from({ length: 100 }, (_, i) => ev(`e-${r}-${i}`)));
  outbox.start([{ name: 'target', dispatcher, leaseMs: 60_000 }]);
  try {
    await until(() => dispatcher.free() === 0);
    await new Promise((r) => setTimeout(r, 100));
    // Three rows fill 250 (the last one past it): before, the first read leased all 40 rows (4,000 events).
    expect(leases.mock.calls.length).toBe(3);
    destination.release();
    await until(() => destination.delivered === 4000, 10_000);
    // Each row leased once.
    expect(leases.mock.calls.length).toBe(40);
  } finally {
    destination.release();
    leases.mockRestore();
    await outbox.close();
  }
});
