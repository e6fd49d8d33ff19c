/**
 * The outbox's lease loop and a namespace at its share of a destination's in-flight events
 * (protection/namespace-lanes.ts): its backlog stays in the outbox, unleased, until it has room;
 * leases are counted (each is a write, and each handed out only to be handed back).
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

const dir = mkdtempSync(join(tmpdir(), 'intake-outbox-share-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ev = (id: string, namespace: string): NormalisedEvent =>
  ({ id, integration: 'demo', namespace, received_at: new Date().toISOString() }) as NormalisedEvent;

/** Hangs on namespace A's events until released; takes B's at once. */
class HangsOnA implements Destination {
  readonly kind = 'http';
  readonly maxBatch = 1;
  readonly name = 'shared';
  delivered: string[] = [];
  hanging = 0;
  private release: Array<() => void> = [];
  async send(events: readonly QueuedEvent[]): Promise<Outcome> {
    const ids = events.map((e) => e.event().id);
    if (ids.some((id) => id.startsWith('a-'))) {
      this.hanging++;
      await new Promise<void>((r) => this.release.push(r));
      this.hanging--;
    }
    this.delivered.push(...ids);
    return { kind: 'accepted' };
  }
  releaseAll(): void {
    for (const r of this.release.splice(0)) r();
  }
  async close(): Promise<void> {}
}

/** An outbox in `where` delivering to a HangsOnA destination (maxInFlight 4), started. */
function startOutbox(where: string): { destination: HangsOnA; outbox: Outbox } {
  const destination = new HangsOnA();
  const dispatcher = new Dispatcher(
    destination,
    { maxAttempts: 100, backoffMinMs: 1, backoffMaxMs: 2, maxInFlight: 4, maxInFlightBytes: 1 << 20 },
    new DestinationMetrics(new Registry()),
    pino({ level: 'silent' }),
  );
  const outbox = new Outbox(where, 1 << 22, { destinationsOf: () => ['shared'] }, async () => 'buried');
  outbox.start([{ name: 'shared', dispatcher, leaseMs: 60_000 }]);
  return { destination, outbox };
}

it('leaves the rows of a namespace at its share unleased, and hands them out as its share has room', async () => {
  const leases = jest.spyOn(OutboxTable.prototype, 'lease');
  const { destination, outbox } = startOutbox(dir);
  try {
    // B is present; then A's backlog, one row a request.
    await outbox.handOff([ev('b-0', 'team-b')]);
    await until(() => destination.delivered.includes('b-0'));
    for (let i = 0; i < 30; i++) await outbox.handOff([ev(`a-${i}`, 'team-a')]);
    await until(() => destination.hanging === 2);
    leases.mockClear();
    // B goes on sending while A holds its share (2 of maxInFlight 4) for 2.5 s.
    for (let i = 1; i <= 5; i++) {
      await outbox.handOff([ev(`b-${i}`, 'team-b')]);
      await new Promise((r) => setTimeout(r, 500));
    }
    await until(() => destination.delivered.filter((id) => id.startsWith('b-')).length === 6);
    // B's five rows, and none of A's: handed out, they would be handed back about once a second each.
    expect(leases.mock.calls.length).toBe(5);
    expect(destination.hanging).toBe(2);
    // Room again: A's backlog is handed out, its share at a time, and delivered.
    leases.mockClear();
    const released = setInterval(() => destination.releaseAll(), 20);
    try {
      await until(() => destination.delivered.filter((id) => id.startsWith('a-')).length === 30, 10_000);
    } finally {
      clearInterval(released);
    }
    // Each of the 28 left leased once: none handed out to be handed back.
    expect(leases.mock.calls.length).toBe(28);
  } finally {
    destination.releaseAll();
    leases.mockRestore();
    await outbox.close();
  }
});

it('hands a namespace that arrives while another, alone until then, holds every slot its share at once', async () => {
  const { destination, outbox } = startOutbox(mkdtempSync(join(dir, 'newcomer-')));
  try {
    // A alone: every slot, hanging at its receiver.
    for (let i = 0; i < 10; i++) await outbox.handOff([ev(`a-${i}`, 'team-a')]);
    await until(() => destination.hanging === 4);
    // B arrives: delivered now, not once A's receiver answers.
    for (let i = 0; i < 3; i++) await outbox.handOff([ev(`b-${i}`, 'team-b')]);
    await until(() => destination.delivered.filter((id) => id.startsWith('b-')).length === 3, 3000);
    // A got nothing more meanwhile.
    expect(destination.hanging).toBe(4);
    const released = setInterval(() => destination.releaseAll(), 20);
    try {
      await until(() => destination.delivered.filter((id) => id.startsWith('a-')).length === 10, 10_000);
    } finally {
      clearInterval(released);
    }
  } finally {
    destination.releaseAll();
    await outbox.close();
  }
});
