/**
 * The outbox's dead-letter side (outbox.ts): a replayed delivery dead letter becomes a fresh row.
 *
 * A replay hands a letter on, then removes it from the dead-letter store (another file): a crash
 * between the two would leave a letter listed whose event is already on its way, and a later
 * replay would send it again. So the row and a record of the letter it came from (`replayed_letters`,
 * by the letter's seq, which the dead-letter store never reuses) are written in one transaction:
 * a letter with a record is handed on already. A replay of it hands nothing on again and removes
 * it; at startup every recorded letter still kept is removed (settleReplayedLetters); the record
 * goes once the letter is gone.
 */
import type { DeliveryDeadLetter } from '../../dead-letters/model.js';
import type { OutboxTable } from './outbox-table.js';
import type { StatementSync } from 'node:sqlite';

/** A letter a replay handed on: its seq and id in the dead-letter store. */
export interface ReplayedLetter {
  seq: number;
  id: string;
}

export class ReplayedLetters {
  private readonly st: Record<'has' | 'record' | 'forget' | 'all', StatementSync>;

  constructor(private readonly table: OutboxTable) {
    table.db.exec(`CREATE TABLE IF NOT EXISTS replayed_letters (
      letter_seq INTEGER PRIMARY KEY,
      letter_id TEXT NOT NULL
    )`);
    const p = (sql: string): StatementSync => table.db.prepare(sql);
    this.st = {
      has: p('SELECT 1 AS x FROM replayed_letters WHERE letter_seq = ?'),
      record: p('INSERT OR IGNORE INTO replayed_letters (letter_seq, letter_id) VALUES (?, ?)'),
      forget: p('DELETE FROM replayed_letters WHERE letter_seq = ?'),
      all: p('SELECT letter_seq AS seq, letter_id AS id FROM replayed_letters ORDER BY letter_seq'),
    };
  }

  /**
   * A replayed dead letter: a fresh row for its destination (attempts start again) and the record
   * that it was handed on, in one fsynced transaction; nothing when it was handed on before (a
   * replay that stopped before removing it). The row is counted only when it was inserted: several
   * dead letters of one event and destination become one row, and were once counted five times.
   */
  requeue(letter: DeliveryDeadLetter): void {
    // A new row: like accepting an event, never from the room kept for draining (outbox-table.ts).
    if (!this.table.reserve.held) throw new Error("the outbox's disk is full: replay the letter once it has room");
    let added = 0;
    this.table.transaction(() => {
      if (this.st.has.get(letter.seq)) return;
      added = this.table.insert({
        destination: letter.destination,
        id: letter.event.id,
        payload: JSON.stringify(letter.event),
        // Charged to its namespace's share, never refused by it: the operator chose to replay it.
        tenant: letter.namespace,
      });
      this.st.record.run(letter.seq, letter.id);
    });
    this.table.count(letter.namespace, added);
  }

  /** The letter is gone from the dead-letter store: its record is not needed any more (not fsynced: a crash only keeps it). */
  forget(seq: number): void {
    this.table.relaxedTransaction(() => void this.st.forget.run(seq));
  }

  /** Letters handed on whose removal from the dead-letter store may not have happened. */
  all(): ReplayedLetter[] {
    return this.st.all.all() as unknown as ReplayedLetter[];
  }
}
