import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { NormalisedEvent } from '../../../../ingester/core/event.js';
import { LogSink } from '../../../../ingester/sinks/log-sink.js';
import { SinkError } from '../../../../ingester/sinks/sink.js';

const ev = (id: string) => ({ id, source: 's', severity: 1 }) as unknown as NormalisedEvent;

function recorder(fail = false) {
  const writes: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      writes.push(chunk.toString());
      cb(fail ? new Error('disk full') : null);
    },
  });
  return { writes, stream };
}

describe('LogSink', () => {
  it('writes one JSON line per event, and the requests of one turn in one write', async () => {
    const { writes, stream } = recorder();
    const sink = new LogSink(undefined, stream);
    const [a, b] = await Promise.all([sink.handOff([ev('1'), ev('2')]), sink.handOff([ev('3')])]);
    expect(a).toEqual({ processed: 2, cached: 0 });
    expect(b).toEqual({ processed: 1, cached: 0 });
    expect(writes).toHaveLength(1);
    expect(
      (writes[0] as string)
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).id),
    ).toEqual(['1', '2', '3']);
  });

  it('rejects every request of a failed write with a SinkError', async () => {
    const sink = new LogSink(undefined, recorder(true).stream);
    await expect(sink.handOff([ev('1')])).rejects.toBeInstanceOf(SinkError);
  });

  it('appends to a file and has written everything once flushed', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'intake-sink-')), 'events.log');
    const sink = new LogSink(path);
    const pending = sink.handOff([ev('a')]);
    await sink.flush();
    expect(readFileSync(path, 'utf8')).toContain('"id":"a"');
    await pending;
    await sink.close();
  });

  it('answers a write that outlives its deadline with an error, takes nothing until it completes, then recovers', async () => {
    let finish: (() => void) | undefined;
    const stream = new Writable({ write: (_c, _e, cb) => void (finish = () => cb()) });
    const sink = new LogSink(undefined, { stream, timeoutMs: 50 });
    await expect(sink.handOff([ev('1')])).rejects.toThrow(/within 50 ms/);
    expect(sink.unavailable()).toMatch(/stalled/);
    await expect(sink.handOff([ev('2')])).rejects.toBeInstanceOf(SinkError);
    (finish as () => void)();
    expect(sink.unavailable()).toBeUndefined();
    const next = sink.handOff([ev('3')]);
    await new Promise((r) => setImmediate(r));
    (finish as () => void)();
    await expect(next).resolves.toEqual({ processed: 1, cached: 0 });
  });

  it('is unavailable for good once its stream failed, and starts the next line anew', async () => {
    const sink = new LogSink(undefined, recorder(true).stream);
    await expect(sink.handOff([ev('1')])).rejects.toBeInstanceOf(SinkError);
    expect(sink.unavailable()).toMatch(/writing failed: disk full/);
  });
});
