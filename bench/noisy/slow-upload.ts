/**
 * Slow uploads for the noisy-neighbour benchmark's "slow pre-auth bodies" shape (bench/noisy/noisy-shapes.ts):
 * CONNECTIONS connections from this one address, each announcing a body of CONTENT_LENGTH bytes
 * and sending one byte of it every INTERVAL_MS, so that a server that reads a body before it can
 * refuse holds every announced byte for as long as the upload lasts. A connection the server
 * answers or closes is opened again after a pause (an attacker reconnects), so each phase keeps
 * CONNECTIONS uploads going; the pause bounds how often. Everything stops after SECONDS.
 *
 *   node slow-upload.js <url> <headers as JSON> <connections> <content length> <interval ms> <seconds>
 *
 * Prints one JSON line: { byStatus, errors, opened }: the answers by status (an upload refused or
 * timed out by the server), `errors` the connections closed without an answer, `opened` how many
 * connections were opened in all.
 */
import { connect, type Socket } from 'node:net';

const REOPEN_PAUSE_MS = 250;

const [url, headers, connections, contentLength, intervalMs, seconds] = process.argv.slice(2);
if (!url || !headers || !connections || !contentLength || !intervalMs || !seconds)
  throw new Error('usage: slow-upload <url> <headers as JSON> <connections> <content length> <interval ms> <seconds>');
const target = new URL(url);
const head = Buffer.from(
  `POST ${target.pathname} HTTP/1.1\r\nhost: ${target.host}\r\ncontent-type: application/json\r\ncontent-length: ${contentLength}\r\n` +
    Object.entries(JSON.parse(headers) as Record<string, string>)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('') +
    '\r\n{',
);

const byStatus: Record<string, number> = {};
let errors = 0;
let opened = 0;
let running = true;
const open = new Set<Socket>();

/** One upload: the head and the body's first byte now, one more byte at every tick until answered or closed. */
function upload(): void {
  if (!running) return;
  opened++;
  const socket = connect(Number(target.port), target.hostname);
  let answered = false;
  open.add(socket);
  socket.setNoDelay(true);
  socket.on('connect', () => socket.write(head));
  socket.once('data', (chunk: Buffer) => {
    answered = true;
    const status = chunk.toString('latin1', 9, 12);
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    socket.destroy();
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    open.delete(socket);
    if (!running) return;
    if (!answered) errors++;
    setTimeout(upload, REOPEN_PAUSE_MS);
  });
}

for (let i = 0; i < Number(connections); i++) upload();
const trickle = setInterval(() => {
  for (const socket of open) if (socket.writable && !socket.connecting) socket.write('a');
}, Number(intervalMs));
setTimeout(
  () => {
    running = false;
    clearInterval(trickle);
    for (const socket of open) socket.destroy();
    process.stdout.write(`${JSON.stringify({ byStatus, errors, opened })}\n`);
  },
  Number(seconds) * 1000,
);
