/**
 * The floor the ingester is compared against in `make bench`: bare node:http doing the minimum of
 * the same work for a single-event webhook request: read the body, JSON.parse it, check Basic
 * credentials (constant-time compare of SHA-256 digests) and answer the same 200 JSON body.
 * It validates nothing, writes no event, sets no security headers and keeps no metrics.
 *
 * Usage: node dist/bench/ingest/baseline.js PORT USER PASSWORD   (listens on 127.0.0.1 only)
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createRequire } from 'node:module';

// Through require(), as intake takes node:http (common/node-http.ts): an ESM import of it loads
// Node's bundled undici, 12 MiB of resident memory a floor should not carry.
const { createServer } = createRequire(import.meta.url)('node:http') as typeof import('node:http');

const [port, user, password] = process.argv.slice(2);
if (!port || !user || password === undefined) {
  process.stderr.write('usage: baseline PORT USER PASSWORD\n');
  process.exit(2);
}
const expected = createHash('sha256').update(`${user}:${password}`, 'utf8').digest();
const OK = '{"response":{"processed":1,"cached":0,"received":1},"success":true,"message":"Processed 1 event(s)"}';
const UNAUTHORIZED = '{"success":false,"message":"unauthorized"}';
const INVALID = '{"success":false,"message":"the body is not valid JSON"}';

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const header = req.headers.authorization ?? '';
    const given = createHash('sha256')
      .update(Buffer.from(header.slice(6), 'base64').toString('utf8'), 'utf8')
      .digest();
    if (!header.startsWith('Basic ') || !timingSafeEqual(given, expected)) {
      res
        .writeHead(401, { 'content-type': 'application/json; charset=utf-8', 'www-authenticate': 'Basic' })
        .end(UNAUTHORIZED);
      return;
    }
    try {
      JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-type': 'application/json; charset=utf-8' }).end(INVALID);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(OK);
  });
});
server.listen(Number(port), '127.0.0.1');
process.once('SIGTERM', () => server.close(() => process.exit(0)).closeAllConnections());
