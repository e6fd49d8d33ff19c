/**
 * Messages between the ingester and its mapping workers over a stream socket
 * (worker-launcher.ts): each one V8-serialized (what node's "advanced" IPC serialization does),
 * after its length as four bytes, big-endian.
 */
import type { Socket } from 'node:net';
import { deserialize, serialize } from 'node:v8';

/** A frame whose length says more than the reader accepts (a broken or hostile peer). */
export class FrameTooLarge extends Error {}

/** Writes one message as a frame. */
export function writeFrame(socket: Socket, message: unknown): void {
  const body = serialize(message);
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

  /** `maxBytes`: the largest frame accepted; the caller may raise it (after a peer has said who it is). */
  constructor(
    public onMessage: (message: unknown) => void,
    public maxBytes: number,
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
      this.onMessage(deserialize(frame.subarray(4, 4 + length)));
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
