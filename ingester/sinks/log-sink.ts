/**
 * The log sink: one JSON line per event on stdout (or appended to a file), for a cluster log
 * pipeline to pick up. An event counts as processed once its line is handed to the kernel.
 *
 * Group commit: the lines of every request that arrives within one turn of the event loop go out
 * in one write, and each of those requests is acknowledged only after that write returned. Under
 * load that turns one write system call per request into one per turn.
 *
 * A failed write acknowledges nothing of its group and leaves the log as it was: a file is
 * truncated back to its size before the write (a full disk leaves no partial line for the next
 * acknowledged event to be glued to, and no whole line of a request answered 503 that a retry
 * would duplicate). Where truncation is impossible (a pipe), the next write starts on a new line.
 *
 * stdout with a stalled reader: a write not done within `timeoutMs` is answered 503, and until it
 * completes the sink takes nothing more and reports itself unavailable (readiness). A reader that
 * went away (EPIPE) makes the sink unavailable for good.
 *
 * Log rotation: a file is reopened on reopen() (SIGHUP) and when its path no longer names the file
 * being written (renamed or deleted).
 */
import { closeSync, fstatSync, ftruncateSync, openSync, statSync, writeSync } from 'node:fs';
import type { Writable } from 'node:stream';
import type { NormalisedEvent } from '../core/event.js';
import { GroupCommit } from '../storage/group-commit.js';
import { SinkError, type HandOffResult, type EventSink } from './sink.js';

interface Pending {
  lines: string;
  count: number;
  resolve: (report: HandOffResult) => void;
  reject: (err: SinkError) => void;
}

export interface LogSinkOptions {
  /** How long a request waits for its write before it is answered 503 (stdout/stream only). */
  timeoutMs?: number;
  /** How often a file's path is checked for rotation. */
  rotationCheckMs?: number;
  /** Instead of stdout (tests). */
  stream?: Writable;
}

const DEFAULT_TIMEOUT_MS = 5000;

export class LogSink implements EventSink {
  readonly name = 'log';
  private fd?: number;
  private readonly stream?: Writable;
  private readonly timeoutMs: number;
  private readonly rotationTimer?: NodeJS.Timeout;
  private readonly group = new GroupCommit<Pending>((group) => this.commit(group));
  private inFlight: Promise<void> = Promise.resolve();
  /** A line may have been cut short: the next write begins with a newline. */
  private partialLine = false;
  /** Set while a stream write has outlived its deadline. */
  private stalled = false;
  /** Set once the stream failed for good (its reader went away). */
  private broken?: string;

  /** `path` undefined or "-" means stdout. */
  constructor(
    private readonly path?: string,
    options: LogSinkOptions | Writable = {},
  ) {
    const o: LogSinkOptions = isWritable(options) ? { stream: options } : options;
    this.timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (o.stream) this.stream = o.stream;
    else if (path === undefined || path === '-') this.stream = process.stdout;
    else {
      this.openFile();
      this.rotationTimer = setInterval(() => this.reopenIfRotated(), o.rotationCheckMs ?? 1000);
      this.rotationTimer.unref();
    }
    // A failed write (EPIPE when the log reader goes away) is reported through the write callback
    // and answered 503; the stream's 'error' event must not also crash the process.
    this.stream?.on('error', () => {});
  }

  unavailable(): string | undefined {
    if (this.broken) return this.broken;
    if (this.stalled) return `a write has not completed within ${this.timeoutMs} ms (is the log reader stalled?)`;
    return undefined;
  }

  handOff(events: readonly NormalisedEvent[]): Promise<HandOffResult> {
    const problem = this.unavailable();
    if (problem) return Promise.reject(new SinkError(this.name, problem));
    let lines = '';
    for (const event of events) lines += `${JSON.stringify(event)}\n`;
    return new Promise((resolve, reject) => {
      this.group.add({ lines, count: events.length, resolve, reject });
    });
  }

  private commit(group: Pending[]): void {
    let data = group.length === 1 ? (group[0] as Pending).lines : group.map((p) => p.lines).join('');
    if (this.partialLine) data = `\n${data}`;
    if (this.fd !== undefined) return this.commitToFile(this.fd, data, group);
    this.commitToStream(this.stream as Writable, data, group);
  }

  private commitToFile(fd: number, data: string, group: Pending[]): void {
    // Where a failed write is truncated back to: read per group, not tracked, because a
    // copytruncate rotation may shrink the file underneath us.
    let sizeBefore: number | undefined;
    try {
      sizeBefore = fstatSync(fd).size;
      writeAll(fd, Buffer.from(data));
      this.partialLine = false;
      settle(group, this.name);
    } catch (err) {
      this.undoPartialWrite(fd, sizeBefore);
      settle(group, this.name, err as Error);
    }
  }

  private undoPartialWrite(fd: number, sizeBefore: number | undefined): void {
    try {
      if (sizeBefore === undefined) throw new Error('size unknown');
      ftruncateSync(fd, sizeBefore);
    } catch {
      this.partialLine = true;
    }
  }

  private commitToStream(stream: Writable, data: string, group: Pending[]): void {
    const deadline = setTimeout(() => {
      this.stalled = true;
      settle(group, this.name, new Error(`write not completed within ${this.timeoutMs} ms`));
    }, this.timeoutMs);
    this.inFlight = new Promise((done) =>
      stream.write(data, (err) => {
        clearTimeout(deadline);
        this.stalled = false;
        if (err) {
          this.partialLine = true;
          this.broken = `writing failed: ${err.message}`;
        }
        settle(group, this.name, err ?? undefined);
        done();
      }),
    );
  }

  /** Opens the path anew (log rotation); a no-op for stdout. */
  reopen(): void {
    if (this.path === undefined || this.path === '-' || this.fd === undefined) return;
    const old = this.fd;
    this.openFile();
    closeSync(old);
  }

  private openFile(): void {
    this.fd = openSync(this.path as string, 'a');
  }

  private reopenIfRotated(): void {
    if (this.fd === undefined) return;
    try {
      const open = fstatSync(this.fd);
      const named = statSync(this.path as string, { throwIfNoEntry: false });
      if (!named || named.ino !== open.ino || named.dev !== open.dev) this.reopen();
    } catch {
      // The next check tries again; writes go on to the open file meanwhile.
    }
  }

  /** Resolves when everything accepted so far has been written. */
  async flush(): Promise<void> {
    this.group.flush();
    await this.inFlight;
  }

  async close(): Promise<void> {
    clearInterval(this.rotationTimer);
    await this.flush();
    if (this.fd !== undefined) closeSync(this.fd);
  }
}

/** Settles a group once: a deadline may have answered it before its write finished. */
function settle(group: Pending[], sink: string, err?: Error): void {
  for (const p of group) {
    if (err) p.reject(new SinkError(sink, `writing events failed: ${err.message}`, { cause: err }));
    else p.resolve({ processed: p.count, cached: 0 });
  }
  group.length = 0;
}

function isWritable(value: unknown): value is Writable {
  return typeof (value as Writable).write === 'function';
}

/** writeSync may write less than asked (a full pipe, a signal); finish the job. */
function writeAll(fd: number, data: Buffer): void {
  let offset = 0;
  while (offset < data.length) offset += writeSync(fd, data, offset);
}
