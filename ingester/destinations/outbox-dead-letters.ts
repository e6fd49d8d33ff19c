/**
 * The outbox's dead-letter side (outbox.ts): a replayed delivery dead letter becomes a fresh row,
 * and the dead letters an earlier version kept in the outbox database move to the dead-letter store.
 */
import type { NormalisedEvent } from '../core/event.js';
import type { DeliveryDeadLetter, NewDeadLetter } from '../dead-letters/model.js';
import type { OutboxTable } from './outbox-table.js';

/** A dead letter of an earlier version, kept in this database's `dead_letters` table. */
export type LegacyDeadLetter = Extract<NewDeadLetter, { kind: 'delivery' }> & { seq: number };

/**
 * A replayed dead letter: a fresh row for its destination (attempts start again). The row is
 * counted only when it was inserted: several dead letters of one event and destination (it
 * failed, was replayed and failed again) become one row, and were once counted five times.
 */
export function requeueDeadLetter(table: OutboxTable, letter: DeliveryDeadLetter): void {
  table.budget.used += table.insert({
    destination: letter.destination,
    id: letter.event.id,
    payload: JSON.stringify(letter.event),
  });
}

/** Dead letters an earlier version kept in this database (moved to the dead-letter store at startup). */
export function legacyDeadLetters(table: OutboxTable): LegacyDeadLetter[] {
  if (!table.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'dead_letters'").get())
    return [];
  type Row = {
    seq: number;
    destination: string;
    payload: string;
    reason: string;
    error: string;
    attempts: number;
    failedAt: string;
  };
  const rows = table.db
    .prepare(
      'SELECT seq, destination, payload, reason, error, attempts, failed_at AS failedAt FROM dead_letters ORDER BY seq',
    )
    .all() as unknown as Row[];
  return rows.map((r) => {
    const event = JSON.parse(r.payload) as NormalisedEvent;
    return {
      seq: r.seq,
      kind: 'delivery',
      id: `outbox-${r.seq}`,
      at: r.failedAt,
      namespace: event.namespace,
      integration: event.integration,
      destination: r.destination,
      reason: r.reason,
      error: r.error,
      attempts: r.attempts,
      event,
    };
  });
}

/** Once they are in the dead-letter store. */
export function dropLegacyDeadLetters(table: OutboxTable): void {
  table.db.exec('DROP TABLE IF EXISTS dead_letters');
}
