/**
 * The floor the ingester is compared against: bare node:http doing the minimum of the same work
 * (read the body, JSON.parse, check Basic credentials in constant time, answer the same body).
 * Usage: node dist/bench/baseline.js PORT USER PASSWORD
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const [port, user, password] = process.argv.slice(2) as [string, string, string];
const expected = createHash('sha256').update(`${user}:${password}`).digest();
const OK = '{"response":{"processed":1,"cached":0,"received":1},"success":true,"message":"Processed 1 event(s)"}';

createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const header = req.headers.authorization ?? '';
    const given = createHash('sha256').update(Buffer.from(header.slice(6), 'base64').toString()).digest();
    if (!header.startsWith('Basic ') || !timingSafeEqual(given, expected)) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"success":false}');
      return;
    }
    try {
      JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"success":false}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(OK);
  });
}).listen(Number(port), '127.0.0.1');
