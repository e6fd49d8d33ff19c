/** Raw sockets for tests that need what fetch hides: idle connections, partial requests, Expect. */
import { connect, type Socket } from 'node:net';

export function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything the server sends until it closes the connection (or `timeoutMs` passes). */
export function readAll(socket: Socket, timeoutMs = 10_000): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    let text = '';
    // A socket the server reset before this was called has already emitted its 'close'.
    if (socket.destroyed) return resolve({ text, closed: true });
    const timer = setTimeout(() => resolve({ text, closed: false }), timeoutMs);
    socket.on('data', (d) => (text += d.toString()));
    socket.on('error', () => {});
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
  });
}

/** Resolves with what arrived once `pattern` appears in the stream. */
export function waitForText(socket: Socket, pattern: RegExp, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(
      () => reject(new Error(`no ${pattern} within ${timeoutMs} ms; got ${JSON.stringify(text.slice(0, 300))}`)),
      timeoutMs,
    );
    const onData = (d: Buffer): void => {
      text += d.toString();
      if (pattern.test(text)) {
        clearTimeout(timer);
        socket.off('data', onData);
        resolve(text);
      }
    };
    socket.on('data', onData);
  });
}

/** The JSON body of a raw HTTP/1.1 response (Content-Length framing). */
export function rawJsonBody(response: string): Record<string, unknown> {
  const body = response.slice(response.indexOf('\r\n\r\n') + 4);
  return JSON.parse(body) as Record<string, unknown>;
}
