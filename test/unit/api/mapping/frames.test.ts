/** Framing of the messages between the pool and its workers (api/mapping/frames.ts). */
import { PassThrough } from 'node:stream';
import type { Socket } from 'node:net';
import { FrameReader, FrameTooLarge, writeFrame } from '../../../../api/mapping/frames.js';

/** The bytes writeFrame writes for each message, as one buffer. */
function framed(...messages: unknown[]): Buffer {
  return written(messages, 'v8');
}

function framedJson(...messages: unknown[]): Buffer {
  return written(messages, 'json');
}

function written(messages: unknown[], encoding: 'v8' | 'json'): Buffer {
  const sink = new PassThrough();
  const chunks: Buffer[] = [];
  sink.on('data', (c: Buffer) => chunks.push(c));
  const socket = Object.assign(sink, { cork: () => undefined, uncork: () => undefined }) as unknown as Socket;
  for (const m of messages) writeFrame(socket, m, encoding);
  return Buffer.concat(chunks);
}

describe('frames', () => {
  const messages = [
    { ready: true, processCpuMs: 12.5 },
    { replies: [{ id: 1, ok: true, json: '[{"a":1}]' }], processCpuMs: 3 },
    { tasks: [{ id: 2, expression: 0, json: new Uint8Array([123, 125]) }] },
  ];

  it('reads every message back, whatever the chunks: one byte at a time, all at once, split anywhere', () => {
    const bytes = framed(...messages);
    for (const size of [1, 3, 7, bytes.length]) {
      const got: unknown[] = [];
      const reader = new FrameReader((m) => got.push(m), 1024);
      for (let at = 0; at < bytes.length; at += size) reader.push(bytes.subarray(at, at + size));
      expect(got).toEqual(messages);
    }
  });

  it('a JSON reader refuses bytes that are not JSON (the caller ends the connection)', () => {
    const reader = new FrameReader(() => undefined, 1024, 'json');
    expect(() => reader.push(Buffer.from([0, 0, 0, 3, 0xff, 0x0d, 0x01]))).toThrow(SyntaxError);
  });

  it('refuses a frame longer than its bound (before reading it), and takes it once the bound is raised', () => {
    const bytes = framed({ text: 'x'.repeat(200) });
    const got: unknown[] = [];
    const reader = new FrameReader((m) => got.push(m), 64);
    expect(() => reader.push(bytes.subarray(0, 4))).toThrow(FrameTooLarge);
    const raised = new FrameReader((m) => got.push(m), 64);
    raised.maxBytes = 1024;
    raised.push(bytes);
    expect(got).toEqual([{ text: 'x'.repeat(200) }]);
  });

  it('hands each message to the handler set when it is read, decoded as set then (a JSON hello, then the worker it named)', () => {
    const seen: string[] = [];
    const reader = new FrameReader(() => seen.push('hello'), 1024, 'json');
    reader.onMessage = (m) => {
      seen.push(`hello ${(m as { id: number }).id}`);
      reader.decoding = 'v8';
      reader.onMessage = (n) => seen.push(`worker ${(n as { n: number }).n}`);
    };
    reader.push(Buffer.concat([framedJson({ id: 7 }), framed({ n: 1 }, { n: 2 })]));
    expect(seen).toEqual(['hello 7', 'worker 1', 'worker 2']);
  });
});
