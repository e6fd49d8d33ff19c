/**
 * The dead letters in one SQLite file (node:sqlite, WAL): `deadletters.sqlite` in the storage
 * directory standalone, or next to `deadLetter.path` when there is neither bus nor spool. A letter
 * is committed and its WAL fdatasynced before `put` resolves (before the sender gets its 422), so
 * it survives kill -9 and a power loss. The fdatasync runs in libuv's thread pool, not in SQLite's
 * commit on the request thread (synchronous=NORMAL): a tenant whose expressions fail at the time
 * limit keeps a letter a second, and the disk's flush (2-8 ms here, more on a busy disk) held every
 * other tenant's requests on the loop for each. Room is made by deleting rows (shares.ts), in the
 * same transaction as the insert: no rewrite of the file on the request path.
 *
 * Claims for replay are a column (`claimed_until`): one process owns the file, and SQLite's
 * statements run one at a time, so a conditional UPDATE is an exclusive claim.
 *
 * On a full disk, a replay still claims, releases and removes its letters (a letter left after
 * its replay would be sent again by the next one): those writes may use a disk reserve
 * (storage/disk-reserve.ts) kept beside the file, with the WAL bounded (sqlite-space.ts). Keeping
 * a new letter (with the drops that make room for it) needs the reserve in place.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { DISK_RESERVE_BYTES, DiskReserve } from '../storage/disk-reserve.js';
import { GroupCommit } from '../storage/group-commit.js';
import { configureSpace, walLimitFor } from '../storage/sqlite-space.js';
import { WalFlush } from '../storage/wal-flush.js';
import {
  atMsOf,
  indexedReason,
  metaOf,
  type DeadLetter,
  type DeadLetterLimits,
  type DeadLetterQuery,
  type DeadLetterStore,
  type DroppedLetter,
  type LetterMeta,
  type NewDeadLetter,
} from './model.js';
import { ShareLedger } from './shares.js';

interface PendingPut {
  letter: DeadLetter;
  /** Serialised once (a payload can be a megabyte): what the row holds and what it counts. */
  json: string;
  resolve: (id: string) => void;
  reject: (err: Error) => void;
}

type Row = { seq: number; letter: string; bytes: number };

export class SqliteDeadLetters implements DeadLetterStore {
  readonly description: string;
  private readonly db: DatabaseSync;
  private readonly st: Record<'insert' | 'remove' | 'get' | 'getId' | 'claim' | 'release', StatementSync>;
  private readonly ledger: ShareLedger;
  private readonly puts = new GroupCommit<PendingPut>((g) => this.commit(g));
  /** Room for claims, releases and removals on a full disk (none for an in-memory file). */
  private readonly reserve?: DiskReserve;
  /** What must be durable before an answer (a kept letter, a removal), flushed off the loop. */
  private readonly wal: WalFlush;

  constructor(
    readonly file: string,
    limits: DeadLetterLimits,
    private readonly onDropped: (dropped: DroppedLetter[]) => void = () => undefined,
    /** Told each time the disk filled and the room kept for replays is used. */
    onDiskFull: () => void = () => undefined,
  ) {
    this.description = `SQLite file ${file}`;
    this.wal = new WalFlush(file);
    if (file !== ':memory:') {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      this.reserve = new DiskReserve(`${file.replace(/\.sqlite$/, '')}.reserve`, DISK_RESERVE_BYTES, onDiskFull);
    }
    this.db = new DatabaseSync(file);
    // A restart on a full disk: the WAL and its index need room; a bounded WAL is restarted in place.
    this.settle(() => configureSpace(this.db, walLimitFor(limits.maxBytes)));
    this.settle(() => this.db.exec('PRAGMA journal_mode = WAL'));
    // Commits are not flushed by SQLite on the request thread: storage/wal-flush.ts says why.
    this.db.exec('PRAGMA synchronous = NORMAL');
    // Two processes pointed at one file (a second ingester with the same deadLetter.path) wait instead of failing.
    this.db.exec('PRAGMA busy_timeout = 5000');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS letters (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        namespace TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        claimed_until INTEGER NOT NULL DEFAULT 0,
        letter TEXT NOT NULL
      );`);
    const p = (sql: string): StatementSync => this.db.prepare(sql);
    this.st = {
      insert: p('INSERT INTO letters (id, kind, namespace, bytes, letter) VALUES (?, ?, ?, ?, ?)'),
      remove: p('DELETE FROM letters WHERE seq = ?'),
      get: p('SELECT seq, letter, bytes FROM letters WHERE seq = ?'),
      getId: p('SELECT seq FROM letters WHERE id = ?'),
      claim: p('UPDATE letters SET claimed_until = ? WHERE seq = ? AND claimed_until <= ?'),
      release: p('UPDATE letters SET claimed_until = 0 WHERE seq = ?'),
    };
    this.ledger = new ShareLedger(limits);
    // Metadata only (json_extract reads inside SQLite; the bodies never reach JavaScript).
    const rows = this.db
      .prepare(
        "SELECT seq, id, kind, namespace, bytes, json_extract(letter, '$.integration') AS integration, json_extract(letter, '$.destination') AS destination, json_extract(letter, '$.at') AS at, substr(json_extract(letter, '$.reason'), 1, 300) AS reason FROM letters ORDER BY seq",
      )
      .all() as Array<{
      seq: number;
      id: string;
      kind: 'mapping' | 'delivery';
      namespace: string;
      bytes: number;
      integration: string;
      destination: string | null;
      at: string | null;
      reason: string | null;
    }>;
    for (const r of rows)
      this.ledger.add({
        seq: r.seq,
        id: r.id,
        kind: r.kind,
        namespace: r.namespace,
        bytes: r.bytes,
        integration: r.integration,
        atMs: atMsOf(r.at ?? undefined),
        reason: indexedReason(r.reason ?? undefined),
        ...(r.destination ? { destination: r.destination } : {}),
      });
  }

  put(input: NewDeadLetter): Promise<string> {
    const letter = {
      ...input,
      id: input.id ?? randomUUID(),
      at: input.at ?? new Date().toISOString(),
      seq: 0,
      bytes: 0,
    } as DeadLetter;
    const json = JSON.stringify(letter);
    letter.bytes = Buffer.byteLength(json);
    return new Promise((resolve, reject) => this.puts.add({ letter, json, resolve, reject }));
  }

  /** One transaction (one fsync) for the letters of one turn, with the drops that made room. */
  private commit(group: PendingPut[]): void {
    // The disk is full: what room is left is for replays to remove what they handed on.
    if (this.reserve && !this.reserve.held) {
      const err = new Error('writing the dead letter failed: its disk is full');
      for (const p of group) p.reject(err);
      return;
    }
    const kept: Array<{ p: PendingPut; seq: number }> = [];
    const dropped: DroppedLetter[] = [];
    const droppedSeqs: Array<{ seq: number; namespace: string }> = [];
    const replaced: number[] = [];
    try {
      this.db.exec('BEGIN IMMEDIATE');
      for (const p of group) {
        const l = p.letter;
        // The same id again (the same event refused again for the same destination): the newer
        // letter takes the older one's place, so an id is listed once.
        const older = this.st.getId.get(l.id) as { seq: number } | undefined;
        if (older) {
          this.st.remove.run(older.seq);
          const meta = this.ledger.delete(older.seq);
          if (meta) replaced.push(meta.seq);
        }
        let room;
        try {
          room = this.ledger.makeRoom(l.namespace, l.bytes);
        } catch (err) {
          p.reject(err as Error);
          dropped.push({ kind: l.kind, namespace: l.namespace, reason: 'too_large' });
          continue;
        }
        for (const { meta, reason } of room) {
          this.st.remove.run(meta.seq);
          this.ledger.delete(meta.seq, meta.namespace);
          droppedSeqs.push({ seq: meta.seq, namespace: meta.namespace });
          dropped.push({ kind: meta.kind, namespace: meta.namespace, reason });
        }
        const seq = Number(this.st.insert.run(l.id, l.kind, l.namespace, l.bytes, p.json).lastInsertRowid);
        this.ledger.add({ ...metaOf(l), seq });
        kept.push({ p, seq });
      }
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      // The ledger must match the file again: what this transaction added or dropped did not happen.
      for (const { seq } of kept) this.ledger.delete(seq);
      this.reloadDropped([...droppedSeqs, ...replaced.map((seq) => ({ seq }))]);
      for (const p of group)
        p.reject(new Error(`writing the dead letter failed: ${(err as Error).message}`, { cause: err }));
      return;
    }
    if (dropped.length > 0) this.onDropped(dropped);
    if (kept.length === 0) return;
    this.wal.flush().then(
      () => {
        for (const { p } of kept) p.resolve(p.letter.id);
      },
      // Committed, but not known to be on the disk: the sender is told it was not kept and
      // retries (the row stays; a letter listed twice is better than one lost).
      (err: Error) => {
        for (const { p } of kept) p.reject(new Error(`writing the dead letter failed: ${err.message}`, { cause: err }));
      },
    );
  }

  private reloadDropped(seqs: Array<{ seq: number }>): void {
    for (const { seq } of seqs) {
      const row = this.st.get.get(seq) as Row | undefined;
      if (row) this.ledger.add({ ...metaOf(JSON.parse(row.letter) as DeadLetter), seq, bytes: row.bytes });
    }
  }

  async list(q: DeadLetterQuery): Promise<DeadLetter[]> {
    return this.ledger
      .select(q)
      .map((m) => this.read(m.seq))
      .filter((l): l is DeadLetter => l !== undefined);
  }

  select(q: DeadLetterQuery): LetterMeta[] {
    return this.ledger.select(q);
  }

  census(q: DeadLetterQuery): { matched: number; lastSeq: number } {
    return this.ledger.census(q);
  }

  private read(seq: number): DeadLetter | undefined {
    const row = this.st.get.get(seq) as Row | undefined;
    return row ? { ...(JSON.parse(row.letter) as DeadLetter), seq, bytes: row.bytes } : undefined;
  }

  async claim(letter: Pick<DeadLetter, 'seq'>, leaseMs: number): Promise<DeadLetter | undefined> {
    const now = Date.now();
    if (Number(this.settle(() => this.st.claim.run(now + leaseMs, letter.seq, now)).changes) === 0) return undefined;
    return this.read(letter.seq);
  }

  async release(letter: DeadLetter): Promise<void> {
    this.settle(() => this.st.release.run(letter.seq));
  }

  async remove(letter: DeadLetter): Promise<void> {
    this.puts.flush();
    if (Number(this.settle(() => this.st.remove.run(letter.seq)).changes) > 0) {
      this.ledger.delete(letter.seq, letter.namespace);
      // A letter handed on is not sent again after a power loss. (Claims and releases need no
      // flush: a lease lost with the machine is taken again by the sweep of interrupted replays.)
      await this.wal.flush();
    }
    this.reserve?.refill();
  }

  /** A write that settles what is kept (never adds to it): on a full disk it may use the reserve. */
  private settle<T>(write: () => T): T {
    return this.reserve ? this.reserve.withRoom(this.db, write) : write();
  }

  usage(): { bytes: number; namespaces: ReadonlyMap<string, number> } {
    return { bytes: this.ledger.bytes, namespaces: this.ledger.namespaces() };
  }

  async close(): Promise<void> {
    if (!this.db.isOpen) return;
    this.puts.flush();
    await this.wal.settled();
    if (!this.db.isOpen) return;
    this.wal.release();
    this.db.close();
  }
}
