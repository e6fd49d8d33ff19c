/**
 * The outbox's lease loop while the worker checkpoints the WAL (storage/wal-checkpointer.ts):
 * nothing is written meanwhile, yet rows are still handed out (their leases kept in memory and
 * written once the checkpoint is over, before the settles that came after them), so a destination
 * prepares its next posts while the disk copies instead of waiting with it.
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

const dir = mkdtempSync(join(tmpdir(), 'intake-outbox-checkpoint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ev = (id: string): NormalisedEvent =>
  ({ id, integration: 'demo', namespace: 'team-a', received_at: new Date().toISOString() }) as NormalisedEvent;

/** Takes every event it is sent, answering only when told to. */
class Answering implements Destination {
  readonly kind = 'http';
  readonly maxBatch = 10;
  readonly name = 'am';
  sent: string[] = [];
  private answers: Array<() => void> = [];
  async send(events: readonly QueuedEvent[]): Promise<Outcome> {
    this.sent.push(...events.map((e) => e.event().id));
    await new Promise<void>((r) => this.answers.push(r));
    return { kind: 'accepted' };
  }
  answerAll(): void {
    for (const r of this.answers.splice(0)) r();
  }
  async close(): Promise<void> {}
}

/** An outbox delivering to an Answering destination, with a checkpoint of the worker's under way until `end()`. */
function checkpointing(path: string): {
  destination: Answering;
  dispatcher: Dispatcher;
  outbox: Outbox;
  end: () => void;
  close: () => Promise<void>;
} {
  const destination = new Answering();
  const dispatcher = new Dispatcher(
    destination,
    { maxAttempts: 3, backoffMinMs: 1, backoffMaxMs: 2, maxInFlight: 100, maxInFlightBytes: 1 << 20 },
    new DestinationMetrics(new Registry()),
    pino({ level: 'silent' }),
  );
  const outbox = new Outbox(path, 1 << 22, { destinationsOf: () => ['am'] }, async () => 'buried');
  // Writes must wait while it runs; its end is the test's to call.
  let running = true;
  const over: Array<() => void> = [];
  jest.spyOn(outbox.walCheckpointer, 'holdWrites').mockImplementation((resume) => {
    if (!running) return false;
    over.push(resume);
    return true;
  });
  const end = (): void => {
    running = false;
    for (const resume of over.splice(0)) resume();
  };
  const close = async (): Promise<void> => {
    end();
    jest.restoreAllMocks();
    outbox.stop();
    destination.answerAll();
    await dispatcher.idle();
    await outbox.close();
  };
  return { destination, dispatcher, outbox, end, close };
}

it('hands rows out while the worker checkpoints, writing their leases and settles only after it, leases first', async () => {
  const { destination, dispatcher, outbox, end, close } = checkpointing(dir);
  // Five rows of ten events.
  for (let r = 0; r < 5; r++) await outbox.handOff(Array.from({ length: 10 }, (_, i) => ev(`e${r * 10 + i}`)));
  const leases = jest.spyOn(OutboxTable.prototype, 'lease');
  const removals = jest.spyOn(OutboxTable.prototype, 'remove');
  outbox.start([{ name: 'am', dispatcher, leaseMs: 60_000 }]);
  try {
    // Every row is handed out during the checkpoint (the loop waited for its end before), once.
    await until(() => destination.sent.length === 50, 5000);
    await new Promise((r) => setTimeout(r, 100));
    expect(destination.sent).toHaveLength(50);
    expect(new Set(destination.sent).size).toBe(50);
    // Answered during the checkpoint: settled, not yet written.
    destination.answerAll();
    await new Promise((r) => setTimeout(r, 50));
    expect(leases).not.toHaveBeenCalled();
    expect(removals).not.toHaveBeenCalled();
    expect(outbox.depth('am')).toBe(5);
    // The checkpoint is over: each row's lease, then its removal, in one go.
    end();
    expect(leases).toHaveBeenCalledTimes(5);
    expect(removals).toHaveBeenCalledTimes(5);
    expect(Math.max(...leases.mock.invocationCallOrder)).toBeLessThan(Math.min(...removals.mock.invocationCallOrder));
    expect(outbox.depth('am')).toBe(0);
    // Nothing was handed out twice.
    await new Promise((r) => setTimeout(r, 100));
    expect(destination.sent).toHaveLength(50);
  } finally {
    await close();
  }
});

it('hands out rows accepted during the checkpoint beside those leased before it, skipping those', async () => {
  const { destination, dispatcher, outbox, end, close } = checkpointing(join(dir, 'second'));
  outbox.start([{ name: 'am', dispatcher, leaseMs: 60_000 }]);
  try {
    await outbox.handOff(Array.from({ length: 10 }, (_, i) => ev(`a${i}`)));
    await until(() => destination.sent.length === 10, 5000);
    await outbox.handOff(Array.from({ length: 10 }, (_, i) => ev(`b${i}`)));
    await until(() => destination.sent.length === 20, 5000);
    await new Promise((r) => setTimeout(r, 100));
    expect(new Set(destination.sent).size).toBe(20);
    end();
    destination.answerAll();
    await until(() => outbox.depth('am') === 0, 5000);
    expect(destination.sent).toHaveLength(20);
  } finally {
    await close();
  }
});
