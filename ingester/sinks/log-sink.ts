/**
 * The first sink: one JSON line per event on stdout (or appended to a file), for a cluster log
 * pipeline to pick up. An event counts as delivered once its line is handed to the kernel.
 *
 * Group commit: the lines of every request that arrives within one turn of the event loop go out
 * in one write, and each of those requests is acknowledged only after that write returned. Under
 * load that turns one write system call per request into one per turn. A request's lines stay
 * together (one string), so a batch reaches the log whole or not at all.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import type { Writable } from 'node:stream';
import type { NormalisedEvent } from '../events.js';
import { SinkError, type DeliveryReport, type EventSink } from './sink.js';

interface Pending {
  lines: string;
  count: number;
  resolve: (report: DeliveryReport) => void;
  reject: (err: SinkError) => void;
}

export class LogSink implements EventSink {
  readonly name = 'log';
  private readonly fd?: number;
  private readonly stream?: Writable;
  private pending: Pending[] = [];
  private scheduled = false;
  private inFlight: Promise<void> = Promise.resolve();

  /** `path` undefined or "-" means stdout; `stream` is for tests. */
  constructor(path?: string, stream?: Writable) {
    if (stream) this.stream = stream;
    else if (path === undefined || path === '-') this.stream = process.stdout;
    else this.fd = openSync(path, 'a');
    // A failed write (EPIPE when the log reader goes away) is reported through the write callback
    // and answered 503; the stream's 'error' event must not also crash the process.
    this.stream?.on('error', () => {});
  }

  deliver(events: readonly NormalisedEvent[]): Promise<DeliveryReport> {
    let lines = '';
    for (const event of events) lines += `${JSON.stringify(event)}\n`;
    return new Promise((resolve, reject) => {
      this.pending.push({ lines, count: events.length, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.commit());
      }
    });
  }

  private commit(): void {
    const group = this.pending;
    this.pending = [];
    this.scheduled = false;
    // flush() may already have committed what this scheduled turn was for.
    if (group.length === 0) return;
    const data = group.length === 1 ? (group[0] as Pending).lines : group.map((p) => p.lines).join('');
    const settle = (err?: Error | null): void => {
      for (const p of group) {
        if (err) p.reject(new SinkError(this.name, `writing events failed: ${err.message}`, { cause: err }));
        else p.resolve({ delivered: p.count, cached: 0 });
      }
    };
    if (this.fd !== undefined) {
      try {
        writeAll(this.fd, Buffer.from(data));
        settle();
      } catch (err) {
        settle(err as Error);
      }
      return;
    }
    // stdout to a pipe or file is synchronous in Node on Linux; the callback still tells us it left.
    this.inFlight = new Promise((done) => (this.stream as Writable).write(data, (err) => (settle(err), done())));
  }

  /** Resolves when everything accepted so far has been written. */
  async flush(): Promise<void> {
    if (this.scheduled) this.commit();
    await this.inFlight;
  }

  async close(): Promise<void> {
    await this.flush();
    if (this.fd !== undefined) closeSync(this.fd);
  }
}

/** writeSync may write less than asked (a full pipe, a signal); finish the job. */
function writeAll(fd: number, data: Buffer): void {
  let offset = 0;
  while (offset < data.length) offset += writeSync(fd, data, offset);
}
