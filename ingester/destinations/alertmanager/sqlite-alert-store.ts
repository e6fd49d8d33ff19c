/**
 * Alert states standalone: a table in the outbox's SQLite database (one process, so the resend
 * lease is always ours and the counts need not be shared).
 *
 * Written through a connection of its own with synchronous=NORMAL (no fsync per write), the writes
 * of one event-loop turn in one transaction (a transaction per statement cost about 80 µs an alert).
 * A state only has to be durable once the event that changed it is acknowledged; the
 * acknowledgement is a later commit to the same WAL file, and WAL frames reach the disk in order:
 * a crash that keeps the acknowledgement keeps the state, and one that loses the state loses the
 * acknowledgement too, so the event is delivered again and writes the state again.
 */
import { join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { AlertState } from './alerts.js';
import type { DiskReserve } from '../../storage/disk-reserve.js';
import { GroupCommit } from '../../storage/group-commit.js';
import { WAL_SIZE_LIMIT_BYTES } from '../../storage/sqlite-space.js';
import { WalCheckpointer } from '../../storage/wal-checkpointer.js';
import type { AlertCounts, AlertStore, StateWrite, Versioned } from './alert-store.js';

/** One put, or a batch's putAll: its statements run in the turn's transaction, answered once it is committed. */
interface Write {
  run: () => void;
  resolve: () => void;
  reject: (err: Error) => void;
}

const KEYS_PAGE = 256;

export class SqliteAlertStores {
  private readonly db: DatabaseSync;
  private readonly st: Record<'get' | 'insert' | 'update' | 'delete' | 'keys', StatementSync>;
  private readonly counts = new Map<string, AlertCounts>();
  private readonly writes = new GroupCommit<Write>((group) => this.commit(group));
  private readonly checkpointer: WalCheckpointer;
  private readonly ownCheckpointer: boolean;
  private held: Write[] = [];

  /**
   * `dir`: the storage directory (`spool.path`), whose outbox.sqlite the outbox created (WAL) already. `reserve`:
   * the outbox's (outbox-table.ts): a state changes only while an event held is delivered, so on a
   * full disk it is written like the outbox's own settling. `checkpointer`: the outbox's
   * (wal-checkpointer.ts), one per database file; without it the store runs one of its own.
   */
  constructor(
    dir: string,
    private readonly reserve?: DiskReserve,
    checkpointer?: WalCheckpointer,
  ) {
    const file = join(dir, 'outbox.sqlite');
    this.db = new DatabaseSync(file);
    this.db.exec('PRAGMA synchronous = NORMAL');
    this.ownCheckpointer = !checkpointer;
    this.checkpointer = checkpointer ?? new WalCheckpointer(file, WAL_SIZE_LIMIT_BYTES);
    this.checkpointer.attach(this.db);
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
    const write = (state: AlertState, version: number): number | false => {
      const data = JSON.stringify(state);
      const changes =
        version === 0
          ? this.st.insert.run(destination, state.key, data).changes
          : this.st.update.run(data, destination, state.key, version).changes;
      return Number(changes) > 0 ? version + 1 : false;
    };
    // Answered once the turn's transaction is committed; a failed commit rejects the whole list.
    const putAll = (list: readonly StateWrite[]): Promise<Array<number | false>> => {
      let written: Array<number | false> = [];
      return new Promise((resolve, reject) =>
        this.writes.add({
          run: () => (written = list.map((w) => write(w.state, w.version))),
          resolve: () => resolve(written),
          reject,
        }),
      );
    };
    return {
      get: async (key): Promise<Versioned | undefined> => {
        const row = this.st.get.get(destination, key) as { state: string; version: number } | undefined;
        return row ? { state: JSON.parse(row.state) as AlertState, version: row.version } : undefined;
      },
      put: async (state, version) => (await putAll([{ state, version }]))[0] as number | false,
      putAll,
      delete: async (key) => {
        const remove = (): unknown => this.st.delete.run(destination, key);
        if (this.reserve) this.reserve.withRoom(this.db, remove);
        else remove();
      },
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

  /** The writes of one turn in one transaction, each answered with its compare-and-set result once committed. */
  private commit(group: Write[]): void {
    // While the WAL is checkpointed off the loop the writes wait (in one transaction afterwards):
    // a WAL restarts only after a checkpoint that no write overtook (wal-checkpointer.ts).
    if (this.held.length > 0 || this.checkpointer.holdWrites(() => this.commitHeld())) {
      this.held.push(...group);
      return;
    }
    this.commitNow(group);
  }

  private commitHeld(): void {
    const group = this.held;
    this.held = [];
    if (group.length > 0) this.commitNow(group);
  }

  private commitNow(group: Write[]): void {
    const write = (): void => {
      try {
        this.db.exec('BEGIN IMMEDIATE');
        for (const w of group) w.run();
        this.db.exec('COMMIT');
      } catch (err) {
        if (this.db.isTransaction) this.db.exec('ROLLBACK');
        throw err;
      }
    };
    try {
      if (this.reserve) this.reserve.withRoom(this.db, write);
      else write();
    } catch (err) {
      for (const w of group) w.reject(err as Error);
      return;
    }
    this.checkpointer.afterCommit(this.db);
    for (const w of group) w.resolve();
  }

  close(): void {
    this.writes.flush();
    this.commitHeld();
    if (this.ownCheckpointer) this.checkpointer.close();
    if (this.db.isOpen) this.db.close();
  }
}
