/** HTTP requests a well-behaved client library would not send, for tests of what a hostile sender can do. */
import { connect } from 'node:net';

/**
 * A POST with its head sent byte for byte (each header character below 0x100 as one byte, as a
 * sender's raw bytes arrive: U+009B is the one byte 0x9b), from a chosen loopback address.
 */
export function rawPost(
  url: string,
  headers: Record<string, string>,
  body: string,
  localAddress = '127.0.0.1',
): Promise<{ status: number; text: string }> {
  const { hostname, port, pathname } = new URL(url);
  const all: Record<string, string> = {
    host: `${hostname}:${port}`,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
    ...headers,
  };
  const head = `POST ${pathname} HTTP/1.1\r\n${Object.entries(all)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: hostname, port: Number(port), localAddress }, () => {
      socket.write(Buffer.from(head, 'latin1'));
      // Not end(): a half-closed request is dropped by the server before its answer.
      socket.write(body);
    });
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', reject);
    socket.on('close', () => {
      const answer = Buffer.concat(chunks).toString('utf8');
      const at = answer.indexOf('\r\n\r\n');
      resolve({ status: Number(answer.slice(9, 12)), text: at < 0 ? '' : answer.slice(at + 4) });
    });
  });
}
