/**
 * The first sink: one JSON line per event on stdout (or appended to a file), for a cluster log
 * pipeline to pick up. An event counts as delivered once its line is handed to the kernel: the
 * write is synchronous (stdout to a pipe or file is synchronous in Node on Linux; a file path is
 * written with writeSync), so a 200 is never sent for a line still sitting in a buffer, and no
 * thread-pool round trip sits on the request path.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import type { Writable } from 'node:stream';
import type { NormalisedEvent } from '../events.js';
import { SinkError, type DeliveryReport, type EventSink } from './sink.js';

export class LogSink implements EventSink {
  readonly name = 'log';
  private readonly fd?: number;
  private readonly stream?: Writable;

  /** `path` undefined or "-" means stdout; `stream` is for tests. */
  constructor(path?: string, stream?: Writable) {
    if (stream) this.stream = stream;
    else if (path === undefined || path === '-') this.stream = process.stdout;
    else this.fd = openSync(path, 'a');
  }

  deliver(events: readonly NormalisedEvent[]): Promise<DeliveryReport> {
    let lines = '';
    for (const event of events) lines += `${JSON.stringify(event)}\n`;
    // One write per request: the batch reaches the log whole or not at all.
    if (this.fd !== undefined) {
      try {
        writeAll(this.fd, Buffer.from(lines));
      } catch (err) {
        return Promise.reject(new SinkError(this.name, `writing events failed: ${(err as Error).message}`, { cause: err }));
      }
      return Promise.resolve({ delivered: events.length, cached: 0 });
    }
    const stream = this.stream as Writable;
    return new Promise((resolve, reject) => {
      stream.write(lines, (err) =>
        err ? reject(new SinkError(this.name, `writing events failed: ${err.message}`, { cause: err })) : resolve({ delivered: events.length, cached: 0 }),
      );
    });
  }

  flush(): Promise<void> {
    if (!this.stream?.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => this.stream?.once('drain', () => resolve()));
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
