/**
 * A remote write receiver that fails one tenant (the noisy-neighbour benchmark's "failing remote
 * write tenant" shape, bench/noisy/noisy-shapes.ts): requests whose tenant header names FAILING are
 * answered 429 and 500 in turn (Mimir's per-tenant rate limit, and a broken tenant), every other
 * tenant's 204. Bodies are read and dropped; nothing is decoded.
 *
 *   node tenant-receiver.js <port> <tenant header> <failing tenant>
 */
import { createServer } from 'node:http';

const [port, header, failing] = process.argv.slice(2);
if (!port || !header || !failing) throw new Error('usage: tenant-receiver <port> <tenant header> <failing tenant>');
const name = header.toLowerCase();
let failures = 0;
createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.headers[name] !== failing) {
      res.writeHead(204).end();
      return;
    }
    const status = failures++ % 2 === 0 ? 429 : 500;
    res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 429 ? 'tenant over its rate' : 'failed');
  });
}).listen(Number(port), '127.0.0.1');
