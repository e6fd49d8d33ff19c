/**
 * The dead letter: payloads that authenticated but could not be mapped into valid events, kept so
 * they can be replayed once the mapping is fixed (docs/design.md §3-4, README "Data mapping"). Behind a small interface so a
 * JetStream subject or the spool can hold them instead; this file-backed store is the default.
 *
 * The file holds one JSON line per payload. Each append is fsynced before the sender gets its 422.
 * The store is bounded: past maxBytes the oldest entries are dropped (and counted) by rewriting the
 * file to a temporary one and renaming it over, so a crash leaves either the old or the new file. A
 * line torn by a crash mid-append is cut off when the file is opened.
 */
import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { FieldError } from '../errors.js';

export interface DeadLetterEntry {
  id: string;
  receivedAt: string;
  integration: string;
  namespace: string;
  /** Why the payload was not accepted, as the 422 said. */
  reason: string;
  errors?: FieldError[];
  contentType?: string;
  payload: unknown;
}

export type NewDeadLetter = Omit<DeadLetterEntry, 'id' | 'receivedAt'>;

export interface DeadLetterStore {
  /** Keeps the payload durably; resolves with its id, or rejects when it cannot be kept. */
  put(entry: NewDeadLetter): Promise<string>;
  list(filter?: { integration?: string; id?: string }): Promise<DeadLetterEntry[]>;
  /** Removes entries (after a successful replay); resolves with how many were removed. */
  remove(ids: ReadonlySet<string>): Promise<number>;
  readonly bytes: number;
  close(): Promise<void>;
}

export interface DeadLetterHooks {
  /** Called with the entries dropped to stay under maxBytes. */
  onDropped?(entries: ReadonlyArray<{ integration: string; namespace: string }>): void;
}

interface Meta {
  id: string;
  integration: string;
  namespace: string;
  bytes: number;
}

const metaOf = (e: DeadLetterEntry, bytes: number): Meta => ({ id: e.id, integration: e.integration, namespace: e.namespace, bytes });

export class FileDeadLetter implements DeadLetterStore {
  private metas: Meta[] = [];
  private total = 0;
  private handle?: FileHandle;
  /** Operations run one at a time: appends, rewrites and reads never interleave. */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    readonly path: string,
    readonly maxBytes: number,
    private readonly hooks: DeadLetterHooks = {},
  ) {
    mkdirSync(dirname(path), { recursive: true });
    for (const { entry, bytes } of this.readLines()) this.metas.push(metaOf(entry, bytes));
    this.total = this.metas.reduce((n, m) => n + m.bytes, 0);
    this.cutTornTail();
  }

  get bytes(): number {
    return this.total;
  }

  put(input: NewDeadLetter): Promise<string> {
    return this.serial(async () => {
      const entry: DeadLetterEntry = { id: randomUUID(), receivedAt: new Date().toISOString(), ...input };
      const line = `${JSON.stringify(entry)}\n`;
      const bytes = Buffer.byteLength(line);
      if (bytes > this.maxBytes) throw new Error(`the payload (${bytes} bytes) is larger than the dead letter bound (${this.maxBytes} bytes)`);
      if (this.total + bytes > this.maxBytes) {
        let freed = 0;
        let drop = 0;
        while (this.total - freed + bytes > this.maxBytes && drop < this.metas.length) freed += (this.metas[drop++] as Meta).bytes;
        const dropped = this.metas.slice(0, drop);
        await this.rewrite(new Set(dropped.map((m) => m.id)), line);
        this.metas = [...this.metas.slice(drop), metaOf(entry, bytes)];
        this.total = this.total - freed + bytes;
        this.hooks.onDropped?.(dropped);
        return entry.id;
      }
      this.handle ??= await open(this.path, 'a');
      await this.handle.write(line);
      await this.handle.datasync();
      this.metas.push(metaOf(entry, bytes));
      this.total += bytes;
      return entry.id;
    });
  }

  list(filter: { integration?: string; id?: string } = {}): Promise<DeadLetterEntry[]> {
    return this.serial(async () =>
      this.readLines()
        .map((l) => l.entry)
        .filter((e) => (filter.integration === undefined || e.integration === filter.integration) && (filter.id === undefined || e.id === filter.id)),
    );
  }

  remove(ids: ReadonlySet<string>): Promise<number> {
    return this.serial(async () => {
      const before = this.metas.length;
      if (!this.metas.some((m) => ids.has(m.id))) return 0;
      await this.rewrite(ids, '');
      this.metas = this.metas.filter((m) => !ids.has(m.id));
      this.total = this.metas.reduce((n, m) => n + m.bytes, 0);
      return before - this.metas.length;
    });
  }

  async close(): Promise<void> {
    await this.serial(async () => {
      await this.handle?.close();
      this.handle = undefined;
    });
  }

  private serial<T>(op: () => Promise<T>): Promise<T> {
    const next = this.chain.then(op, op);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Every complete, parseable line with its size; a line that does not parse is skipped. */
  private readLines(): Array<{ entry: DeadLetterEntry; bytes: number; line: string }> {
    if (!existsSync(this.path)) return [];
    const text = readFileSync(this.path, 'utf8');
    const out: Array<{ entry: DeadLetterEntry; bytes: number; line: string }> = [];
    let start = 0;
    for (let end = text.indexOf('\n'); end >= 0; start = end + 1, end = text.indexOf('\n', start)) {
      const line = text.slice(start, end + 1);
      try {
        out.push({ entry: JSON.parse(line) as DeadLetterEntry, bytes: Buffer.byteLength(line), line });
      } catch {
        // A damaged line (disk trouble, a hand edit): skipped, and gone at the next rewrite.
      }
    }
    return out;
  }

  /** An append cut short by a crash leaves a line without its newline: drop it before appending. */
  private cutTornTail(): void {
    if (!existsSync(this.path)) return;
    const text = readFileSync(this.path);
    const keep = text.lastIndexOf(0x0a) + 1;
    if (keep === text.length) return;
    const fd = openSync(this.path, 'r+');
    try {
      ftruncateSync(fd, keep);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }

  /** Writes the file without `drop` (plus `append`) to a temporary file, fsyncs it, renames it over. */
  private async rewrite(drop: ReadonlySet<string>, append: string): Promise<void> {
    const kept = this.readLines()
      .filter((l) => !drop.has(l.entry.id))
      .map((l) => l.line)
      .join('');
    await this.handle?.close();
    this.handle = undefined;
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, kept + append);
    const fd = openSync(tmp, 'r+');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.path);
    syncDirectory(dirname(this.path));
  }
}

function syncDirectory(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself is still atomic.
  }
}

/** A bounded in-memory store, for an ingester built without a dead-letter file (unit tests). */
export class MemoryDeadLetter implements DeadLetterStore {
  private entries: Array<{ entry: DeadLetterEntry; bytes: number }> = [];
  private total = 0;
  constructor(private readonly maxBytes = 1024 * 1024) {}
  get bytes(): number {
    return this.total;
  }
  async put(input: NewDeadLetter): Promise<string> {
    const entry: DeadLetterEntry = { id: randomUUID(), receivedAt: new Date().toISOString(), ...input };
    const bytes = Buffer.byteLength(JSON.stringify(entry));
    if (bytes > this.maxBytes) throw new Error('the payload is larger than the dead letter bound');
    while (this.total + bytes > this.maxBytes) this.total -= (this.entries.shift() as { bytes: number }).bytes;
    this.entries.push({ entry, bytes });
    this.total += bytes;
    return entry.id;
  }
  async list(filter: { integration?: string; id?: string } = {}): Promise<DeadLetterEntry[]> {
    return this.entries.map((e) => e.entry).filter((e) => (filter.integration === undefined || e.integration === filter.integration) && (filter.id === undefined || e.id === filter.id));
  }
  async remove(ids: ReadonlySet<string>): Promise<number> {
    const before = this.entries.length;
    this.entries = this.entries.filter((e) => !ids.has(e.entry.id));
    this.total = this.entries.reduce((n, e) => n + e.bytes, 0);
    return before - this.entries.length;
  }
  async close(): Promise<void> {}
}
