/**
 * Alert states standalone: a table in the outbox's SQLite database (one process, so the resend
 * lease is always ours and the counts need not be shared).
 *
 * Written through a connection of its own with synchronous=NORMAL (no fsync per write): a state
 * only has to be durable once the event that changed it is acknowledged, and that acknowledgement
 * is a later commit on the outbox's FULL connection, whose fsync of the one WAL file makes every
 * earlier frame durable with it. Until then a crash redelivers the event, which writes the state
 * again.
 */
import { join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { AlertState } from './alerts.js';
import type { AlertCounts, AlertStore, Versioned } from './alert-store.js';

const KEYS_PAGE = 256;

export class SqliteAlertStores {
  private readonly db: DatabaseSync;
  private readonly st: Record<'get' | 'insert' | 'update' | 'delete' | 'keys', StatementSync>;
  private readonly counts = new Map<string, AlertCounts>();

  /** `dir`: the spool directory, whose outbox.sqlite the outbox created (WAL) already. */
  constructor(dir: string) {
    this.db = new DatabaseSync(join(dir, 'outbox.sqlite'));
    this.db.exec('PRAGMA synchronous = NORMAL');
    this.db.exec(`CREATE TABLE IF NOT EXISTS alerts (
      destination TEXT NOT NULL,
      key TEXT NOT NULL,
      state TEXT NOT NULL,
      version INTEGER NOT NULL,
      PRIMARY KEY (destination, key)
    )`);
    const q = (sql: string): StatementSync => this.db.prepare(sql);
    this.st = {
      get: q('SELECT state, version FROM alerts WHERE destination = ? AND key = ?'),
      insert: q('INSERT OR IGNORE INTO alerts (destination, key, state, version) VALUES (?, ?, ?, 1)'),
      update: q('UPDATE alerts SET state = ?, version = version + 1 WHERE destination = ? AND key = ? AND version = ?'),
      delete: q('DELETE FROM alerts WHERE destination = ? AND key = ?'),
      keys: q('SELECT key FROM alerts WHERE destination = ? AND key > ? ORDER BY key LIMIT ?'),
    };
  }

  store(destination: string): AlertStore {
    return {
      get: async (key): Promise<Versioned | undefined> => {
        const row = this.st.get.get(destination, key) as { state: string; version: number } | undefined;
        return row ? { state: JSON.parse(row.state) as AlertState, version: row.version } : undefined;
      },
      put: async (state, version) => {
        const data = JSON.stringify(state);
        const changes =
          version === 0
            ? this.st.insert.run(destination, state.key, data).changes
            : this.st.update.run(data, destination, state.key, version).changes;
        return Number(changes) > 0 ? version + 1 : false;
      },
      delete: async (key) => void this.st.delete.run(destination, key),
      keys: () => this.keys(destination),
      loadCounts: async () => this.counts.get(destination),
      saveCounts: async (counts) => void this.counts.set(destination, counts),
      holdResendLease: async () => true,
    };
  }

  /** Keyset pages: a delete between pages (a spent state) does not shift the next page. */
  private async *keys(destination: string): AsyncGenerator<string> {
    let after = '';
    for (;;) {
      const rows = this.st.keys.all(destination, after, KEYS_PAGE) as unknown as Array<{ key: string }>;
      for (const r of rows) yield r.key;
      if (rows.length < KEYS_PAGE) return;
      after = (rows.at(-1) as { key: string }).key;
    }
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }
}
