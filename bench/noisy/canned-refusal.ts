/**
 * The noisy-neighbour benchmark's control server: answers every request with one canned answer
 * (a real 429 of the ingester, status, headers and body), reading each body first. It stands in
 * for the ingester in the control phase, so that tenant A's load generators run exactly as
 * beside the ingester while the ingester serves B alone: B's p99 in that phase is the floor that
 * the load generators and the loopback network cost B without any work in the ingester.
 *
 *   node canned-refusal.js <port> <status> <headers as JSON> <body>
 */
import { createServer } from 'node:http';

const [port, status, headers, body] = process.argv.slice(2);
if (!port || !status || !headers || body === undefined)
  throw new Error('usage: canned-refusal <port> <status> <headers as JSON> <body>');
const head = JSON.parse(headers) as Record<string, string>;
const payload = Buffer.from(body);
createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(Number(status), { ...head, 'content-length': String(payload.length) });
    res.end(payload);
  });
}).listen(Number(port), '127.0.0.1');
