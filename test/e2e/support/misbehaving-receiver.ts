/**
 * A receiver on 127.0.0.1 that holds its senders the ways receivers do in the wild, to check that
 * every outgoing request of intake is bounded:
 * - `trickle-headers`: reads the request, sends a status line, then one header byte a second and
 *   never finishes the headers (the answer never says whether the request was taken);
 * - `trickle-body`: answers 200 with its headers, then one body byte a second, never ending;
 * - `huge-body`: answers 200 and streams `hugeBytes` of body as fast as the sender reads;
 * - `ok`: answers `okStatus` at once.
 * It records each request's body and what happened to its answer, and counts the requests whose
 * answer is still open (what the sender holds in flight).
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Behaviour = 'ok' | 'trickle-headers' | 'trickle-body' | 'huge-body';

export interface ReceivedCall {
  atMs: number;
  behaviour: Behaviour;
  /** The status an `ok` answer had. */
  status?: number;
  /** The request's body; empty when it was answered with an error (a failing receiver is asked many times). */
  body: Buffer;
  /** When the sender closed the connection before the answer was complete (undefined: not closed early). */
  closedAtMs?: number;
  /** Answer bytes the receiver managed to hand to its socket before the sender went away. */
  bytesWritten: number;
}

export interface MisbehavingReceiver {
  url: string;
  behaviour: Behaviour;
  okStatus: number;
  hugeBytes: number;
  calls: ReceivedCall[];
  /** Requests whose answer is not finished and whose connection is open, now and at most so far. */
  open: number;
  peakOpen: number;
  close(): Promise<void>;
}

/** A trickling answer gives up after this long, so a test run against a sender without deadline ends. */
const TRICKLE_LIMIT_MS = 120_000;
const CHUNK = Buffer.alloc(64 * 1024, 'x');

export async function startMisbehavingReceiver(path = '/receive'): Promise<MisbehavingReceiver> {
  const r: Omit<MisbehavingReceiver, 'url' | 'close'> = {
    behaviour: 'ok',
    okStatus: 200,
    hugeBytes: 256 * 1024 * 1024,
    calls: [],
    open: 0,
    peakOpen: 0,
  };
  const handle = (req: IncomingMessage, res: ServerResponse, body: Buffer): void => {
    const call: ReceivedCall = { atMs: Date.now(), behaviour: r.behaviour, body, bytesWritten: 0 };
    r.calls.push(call);
    if (call.behaviour === 'ok') {
      call.status = r.okStatus;
      if (r.okStatus >= 300) call.body = Buffer.alloc(0);
      res.writeHead(r.okStatus, { 'content-type': 'text/plain' });
      res.end('ok');
      return;
    }
    r.open++;
    r.peakOpen = Math.max(r.peakOpen, r.open);
    let finished = false;
    const finish = (early: boolean): void => {
      if (finished) return;
      finished = true;
      r.open--;
      if (early) call.closedAtMs = Date.now();
    };
    const socket = req.socket;
    socket.on('error', () => {});
    socket.once('close', () => finish(true));
    const trickle = (first: string, next: () => string): void => {
      socket.write(first, () => (call.bytesWritten += first.length));
      const started = Date.now();
      const timer = setInterval(() => {
        if (socket.destroyed) return void clearInterval(timer);
        if (Date.now() - started > TRICKLE_LIMIT_MS) {
          clearInterval(timer);
          socket.destroy();
          return;
        }
        socket.write(next(), () => call.bytesWritten++);
      }, 1000).unref();
    };
    if (call.behaviour === 'trickle-headers') return trickle('HTTP/1.1 200 OK\r\nX-Slow: ', () => 'a');
    if (call.behaviour === 'trickle-body')
      return trickle('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n', () => 'x');
    // huge-body: as fast as the sender reads (backpressure), until hugeBytes or the sender leaves.
    res.on('error', () => {});
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(r.hugeBytes) });
    const pump = (): void => {
      while (!res.destroyed && call.bytesWritten < r.hugeBytes) {
        const n = Math.min(CHUNK.length, r.hugeBytes - call.bytesWritten);
        call.bytesWritten += n;
        if (!res.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n))) return void res.once('drain', pump);
      }
      if (!res.destroyed) {
        res.end();
        finish(false);
      }
    };
    pump();
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(r, {
    url: `http://127.0.0.1:${port}${path}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

/** The peak resident memory of a process so far (VmHWM), in MiB. */
export function peakRssMiB(pid: number): number {
  return vmField(pid, 'VmHWM');
}

/** The resident memory of a process now (VmRSS), in MiB. */
export function rssMiB(pid: number): number {
  return vmField(pid, 'VmRSS');
}

function vmField(pid: number, field: string): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  return match ? Number(match[1]) / 1024 : Number.NaN;
}
