/**
 * A signed integration's request refused before any byte of its body is read is answered by the
 * direct events route (http/endpoints/events-direct.ts, refusedBeforeBody), ahead of fastify: a
 * stranger's refused uploads come hundreds a second. Through the built process over real sockets,
 * each refusal is the same bytes as fastify's route gives the same request sent with
 * `Expect: 100-continue` (which the direct route leaves to fastify): the unproven senders' body
 * budget, unreadable a missing signature header, and the brute-force guard's block; each is counted alike.
 * A body that fits still goes to fastify's route, and a correctly signed one is accepted.
 */
import { createHmac } from 'node:crypto';
import type { Socket } from 'node:net';
import { post, startIngester, type RunningIngester } from './support/ingester.js';
import { openSocket } from './support/raw-http.js';

const SECRET = 'direct-refusal-github-secret';
/** What this address may have being received before it proved itself (one held upload takes most of it). */
const ADDRESS_SHARE = 64 * 1024;
const HELD = 60_000;
const BOGUS = `sha256=${'0'.repeat(64)}`;

let ing: RunningIngester;
const sockets: Socket[] = [];

beforeAll(async () => {
  ing = await startIngester((c) => {
    c.limits = {
      ...(c.limits as object),
      maxUnauthenticatedBodyBytesPerAddress: ADDRESS_SHARE,
      // The held upload sends one byte: not cut while the test runs.
      bodyRateGrace: '60s',
    };
    c.authThrottle = { failures: 3, window: '1m', block: '1m', failureDelay: '0s' };
    (c.routes as unknown[]).push({
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'WebhookIntegration',
      name: 'gh-direct',
      namespace: 'team-a',
      credentials: [],
      authentication: { mode: 'signature', signature: { scheme: 'github', secrets: [{ value: SECRET }] } },
    });
  });
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await ing.stop();
});

/** Sends a request's head (and the body's first byte), announcing `length` bytes; the socket stays open. No signature: ''. */
async function announce(length: number, signature: string, expect100 = false): Promise<Socket> {
  const socket = await openSocket(ing.port);
  sockets.push(socket);
  socket.write(
    `POST /events/webhook_gh-direct HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n` +
      `content-length: ${length}\r\n` +
      (signature ? `x-hub-signature-256: ${signature}\r\n` : '') +
      (expect100 ? 'expect: 100-continue\r\n' : '') +
      '\r\n' +
      (expect100 ? '' : '['),
  );
  return socket;
}

/** The first answer on the socket: its status line, headers and Content-Length bytes of body. */
function answerOf(socket: Socket, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0);
    const timer = setTimeout(
      () => reject(new Error(`no answer within ${timeoutMs} ms: ${received.toString('latin1')}`)),
      timeoutMs,
    );
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = received.toString('latin1', 0, end);
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (received.length < end + 4 + length) return;
      clearTimeout(timer);
      resolve(received.toString('utf8', 0, end + 4 + length));
    });
  });
}

/**
 * An answer without what differs between two requests a moment apart (the date, a block's seconds
 * left) and between the two ways of asking: Node closes a connection whose body it never invited
 * (Expect: 100-continue refused), and keeps the other one for the rest of the body.
 */
const comparable = (answer: string): string =>
  answer
    .replace(/\r\ndate: [^\r]*/i, '')
    .replace(/\r\nconnection: [^\r]*/i, '')
    .replace(/\r\nkeep-alive: [^\r]*/i, '')
    .replace(/retry-after: \d+/i, 'retry-after: N')
    .replace(/retry after \d+s/, 'retry after Ns');

/** The same request refused by the direct route and by fastify's (sent with Expect: 100-continue). */
async function refusedBothWays(length: number, signature: string): Promise<{ direct: string; fastify: string }> {
  const direct = await answerOf(await announce(length, signature));
  const fastify = await answerOf(await announce(length, signature, true));
  return { direct, fastify };
}

async function eventsAnswered(status: number): Promise<number> {
  const text = await (await fetch(`${ing.adminUrl}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`intake_http_requests_total{endpoint="events",status="${status}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

it("answers a refusal before the body as fastify's route does: the body budget, a missing signature, the guard's block", async () => {
  // One upload takes most of this address's share and stays: the next announced body does not fit.
  await announce(HELD, BOGUS);
  await new Promise((r) => setTimeout(r, 200));

  const before429 = await eventsAnswered(429);
  const budget = await refusedBothWays(10_000, BOGUS);
  expect(budget.direct).toMatch(/^HTTP\/1\.1 429 /);
  expect(budget.direct).toMatch(/"setting":"limits.maxUnauthenticatedBodyBytesPerAddress"/);
  expect(comparable(budget.direct)).toBe(comparable(budget.fastify));
  expect((await eventsAnswered(429)) - before429).toBe(2);

  // A small body still fits: fastify's route reads it, checks its signature and accepts it.
  const body = JSON.stringify({ source: 'gh-direct-real', severity: 2 });
  const signature = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
  expect((await post(`${ing.url}/events/webhook_gh-direct`, body, { 'x-hub-signature-256': signature })).status).toBe(
    200,
  );

  // No signature header, and a body that would not fit either: the 401 comes first, both ways.
  const unreadable = await refusedBothWays(10_000, '');
  expect(unreadable.direct).toMatch(/^HTTP\/1\.1 401 /);
  expect(comparable(unreadable.direct)).toBe(comparable(unreadable.fastify));

  // Those were two failures for the guard (of 3): one more blocks this address for gh-direct.
  await answerOf(await announce(10_000, ''));
  await answerOf(await announce(10_000, ''));
  const blocked = await refusedBothWays(10_000, BOGUS);
  expect(blocked.direct).toMatch(/^HTTP\/1\.1 429 /);
  expect(blocked.direct).toMatch(/"code":"AUTH_THROTTLED"/);
  expect(comparable(blocked.direct)).toBe(comparable(blocked.fastify));
  // Blocked, a body that would fit is refused before it is read too, even correctly signed.
  const small = await refusedBothWays(Buffer.byteLength(body), signature);
  expect(small.direct).toMatch(/"code":"AUTH_THROTTLED"/);
  expect(comparable(small.direct)).toBe(comparable(small.fastify));
});
