/**
 * Messages between the ingester and its mapping workers over a stream socket
 * (worker-launcher.ts): each one V8-serialized (what node's "advanced" IPC serialization does),
 * after its length as four bytes, big-endian.
 */
import type { Socket } from 'node:net';
import { deserialize, serialize } from 'node:v8';

/** A frame whose length says more than the reader accepts (a broken or hostile peer). */
export class FrameTooLarge extends Error {}

/** How a frame's bytes become a message: V8's deserializer, or JSON (for a peer not yet trusted). */
export type FrameDecoding = 'v8' | 'json';

/** Writes one message as a frame (V8-serialized, or as JSON text for a reader that decodes JSON). */
export function writeFrame(socket: Socket, message: unknown, encoding: FrameDecoding = 'v8'): void {
  const body = encoding === 'v8' ? serialize(message) : Buffer.from(JSON.stringify(message));
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32BE(body.length, 0);
  socket.cork();
  socket.write(head);
  socket.write(body);
  socket.uncork();
}

/** Reads frames from a stream's chunks, whatever their boundaries, and hands each message on. */
export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;

  /**
   * `maxBytes`: the largest frame accepted; `decoding`: how frames are read. The caller may raise
   * the one and switch the other once a peer has said who it is: V8's deserializer is not meant
   * for bytes from anyone, JSON.parse is.
   */
  constructor(
    public onMessage: (message: unknown) => void,
    public maxBytes: number,
    public decoding: FrameDecoding = 'v8',
  ) {}

  /** Takes a chunk; throws FrameTooLarge past maxBytes (the caller ends the connection). */
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    while (this.buffered >= 4) {
      const first = this.contiguous(4);
      const length = first.readUInt32BE(0);
      if (length > this.maxBytes) throw new FrameTooLarge(`a frame of ${length} bytes (at most ${this.maxBytes})`);
      if (this.buffered < 4 + length) return;
      const frame = this.contiguous(4 + length);
      this.consume(4 + length);
      const body = frame.subarray(4, 4 + length);
      this.onMessage(this.decoding === 'v8' ? deserialize(body) : JSON.parse(body.toString('utf8')));
    }
  }

  /** The first `n` buffered bytes in one buffer (chunks joined only when a frame spans them). */
  private contiguous(n: number): Buffer {
    const head = this.chunks[0] as Buffer;
    if (head.length >= n) return head;
    const joined = Buffer.concat(this.chunks);
    this.chunks = [joined];
    return joined;
  }

  private consume(n: number): void {
    const head = this.chunks[0] as Buffer;
    this.buffered -= n;
    if (head.length === n) this.chunks.shift();
    else this.chunks[0] = head.subarray(n);
  }
}
