/**
 * The noisy-neighbour benchmark's control server: answers every request with one canned answer
 * (a real 429 of the ingester, status, headers and body), reading each body first, or, with
 * `at-once`, as soon as the request's headers are in (as the ingester answers a body it refuses
 * before reading it: the slow pre-auth bodies shape), the rest of the body read and dropped as
 * Node does for the ingester. It stands in
 * for the ingester in the control phase, so that tenant A's load generators run exactly as
 * beside the ingester while the ingester serves B alone: B's p99 in that phase is the floor that
 * the load generators and the loopback network cost B without any work in the ingester.
 *
 *   node canned-refusal.js <port> <status> <headers as JSON> <body> [at-once]
 */
import { createServer, type ServerResponse } from 'node:http';

const [port, status, headers, body, when] = process.argv.slice(2);
if (!port || !status || !headers || body === undefined)
  throw new Error('usage: canned-refusal <port> <status> <headers as JSON> <body>');
const head = JSON.parse(headers) as Record<string, string>;
const payload = Buffer.from(body);
const answer = (res: ServerResponse): void => {
  res.writeHead(Number(status), { ...head, 'content-length': String(payload.length) });
  res.end(payload);
};
createServer((req, res) => {
  if (when === 'at-once') return answer(res);
  req.resume();
  req.on('end', () => answer(res));
}).listen(Number(port), '127.0.0.1');
