/**
 * The first sink: one JSON line per event on stdout (or appended to a file), for a cluster log
 * pipeline to pick up. An event counts as delivered once its line is handed to the kernel.
 */
import { createWriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import type { NormalisedEvent } from '../events.js';
import { SinkError, type DeliveryReport, type EventSink } from './sink.js';

export class LogSink implements EventSink {
  readonly name = 'log';
  private readonly stream: Writable;
  private readonly ownsStream: boolean;

  /** `path` undefined or "-" means stdout. */
  constructor(path?: string, stream?: Writable) {
    if (stream) {
      this.stream = stream;
      this.ownsStream = false;
    } else if (path === undefined || path === '-') {
      this.stream = process.stdout;
      this.ownsStream = false;
    } else {
      this.stream = createWriteStream(path, { flags: 'a' });
      this.ownsStream = true;
    }
  }

  deliver(events: readonly NormalisedEvent[]): Promise<DeliveryReport> {
    let lines = '';
    for (const event of events) lines += `${JSON.stringify(event)}\n`;
    return new Promise((resolve, reject) => {
      // One write per request: the batch reaches the log whole or not at all.
      this.stream.write(lines, (err) =>
        err ? reject(new SinkError(this.name, `writing events failed: ${err.message}`, { cause: err })) : resolve({ delivered: events.length, cached: 0 }),
      );
    });
  }

  flush(): Promise<void> {
    if (!this.stream.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => this.stream.once('drain', () => resolve()));
  }

  async close(): Promise<void> {
    await this.flush();
    if (!this.ownsStream) return;
    await new Promise<void>((resolve) => this.stream.end(() => resolve()));
  }
}
