/**
 * Bodies being received, through the built process over real sockets: a signed integration's
 * body is read before its sender is known, so it is reserved from budgets of its own (per address,
 * per integration), must arrive at a minimum rate, and an upload that never completes counts
 * against the address in the brute-force guard; an authenticated tenant's bodies are reserved
 * from its namespace's share.
 */
import { createHmac } from 'node:crypto';
import type { Socket } from 'node:net';
import { basic, post, startIngester, tenantRoute, type RunningIngester } from './support/ingester.js';
import { openSocket, rawJsonBody, readAll } from './support/raw-http.js';

const SECRET = 'a-github-secret';
const MiB = 1024 * 1024;

/** Opens an upload announcing `length` bytes and sends only the headers (and `first` bytes of body). */
async function startUpload(
  port: number,
  path: string,
  headers: Record<string, string>,
  length: number,
): Promise<Socket> {
  const socket = await openSocket(port);
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n` +
      Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('') +
      '\r\n[',
  );
  return socket;
}

describe('request bodies before and after authentication', () => {
  let ing: RunningIngester;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    ing = await startIngester((c) => {
      c.trustProxy = '127.0.0.1';
      c.limits = {
        ...(c.limits as object),
        maxUnauthenticatedBodyBytesPerAddress: 2 * MiB,
        maxInFlightBodyBytesPerNamespace: 2 * MiB,
        minBodyBytesPerSecond: 4096,
        bodyRateGrace: '1s',
      };
      c.authThrottle = { failures: 3, window: '1m', block: '1m', failureDelay: '0s' };
      (c.routes as unknown[]).push(
        {
          apiVersion: 'intake.dev/v1alpha1',
          kind: 'WebhookIntegration',
          name: 'gh',
          namespace: 'team-a',
          credentials: [],
          authentication: { mode: 'signature', signature: { scheme: 'github', secrets: [{ value: SECRET }] } },
        },
        tenantRoute('slow-a', 'team-a'),
        tenantRoute('other-b', 'team-b'),
      );
    });
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await ing.stop();
  });

  it("refuses an address's unauthenticated bodies past its share at once, cuts slow ones with 408, and blocks the address once they add up", async () => {
    const headers = { 'x-forwarded-for': '198.51.100.9', 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` };
    const held = [await startUpload(ing.port, '/events/webhook_gh', headers, MiB)];
    held.push(await startUpload(ing.port, '/events/webhook_gh', headers, MiB));
    sockets.push(...held);
    const closes = held.map((s) => readAll(s, 8000));
    await new Promise((r) => setTimeout(r, 200));
    // The third 1 MiB body from that address: its share (2 MiB) is held, refused before any byte is read.
    const third = await startUpload(ing.port, '/events/webhook_gh', headers, MiB);
    sockets.push(third);
    const refused = await readAll(third, 3000);
    expect(refused.text).toMatch(/^HTTP\/1\.1 429 /);
    expect(refused.text).toMatch(/retry-after: 1\r\n/i);
    expect(rawJsonBody(refused.text)).toMatchObject({
      code: 'BODY_BYTES_LIMITED',
      limit: { scope: 'address', setting: 'limits.maxUnauthenticatedBodyBytesPerAddress', maxBytes: 2 * MiB },
    });
    // A signed request from another address is served meanwhile.
    const body = JSON.stringify({ source: 'gh-real', severity: 2 });
    const sig = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
    expect(
      (await post(`${ing.url}/events/webhook_gh`, body, { 'x-forwarded-for': '192.0.2.1', 'x-hub-signature-256': sig }))
        .status,
    ).toBe(200);
    // The two held uploads send nothing more: cut after the grace with a JSON 408.
    for (const closed of await Promise.all(closes)) {
      expect(closed.closed).toBe(true);
      expect(closed.text).toMatch(/^HTTP\/1\.1 408 /);
      expect(rawJsonBody(closed.text)).toMatchObject({ code: 'REQUEST_TIMEOUT' });
    }
    // Two abandoned uploads make four incomplete bodies, one past the guard's 3: the address is
    // blocked for gh, even with the right signature.
    for (let i = 0; i < 2; i++) {
      const abandoned = await startUpload(ing.port, '/events/webhook_gh', headers, 1000);
      await new Promise((r) => setTimeout(r, 200));
      abandoned.destroy();
    }
    await new Promise((r) => setTimeout(r, 300));
    const blocked = await post(`${ing.url}/events/webhook_gh`, body, { ...headers, 'x-hub-signature-256': sig });
    expect(blocked.status).toBe(429);
    expect(blocked.json()).toMatchObject({ code: 'AUTH_THROTTLED' });
    const metrics = await (await fetch(`${ing.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/intake_auth_failures_total\{endpoint="events",reason="body_incomplete"\} 4/);
  }, 30_000);

  it("serves an address that proved itself for the integration while strangers hold the integration's share", async () => {
    const stranger = (n: number) => ({
      'x-forwarded-for': `198.51.100.${40 + n}`,
      'x-hub-signature-256': `sha256=${'0'.repeat(64)}`,
    });
    // Two strangers' addresses, two 1 MiB uploads each: gh's share for unproven senders (4 MiB) is held.
    const held = [];
    for (const n of [0, 0, 1, 1]) held.push(await startUpload(ing.port, '/events/webhook_gh', stranger(n), MiB));
    sockets.push(...held);
    await new Promise((r) => setTimeout(r, 150));
    const third = await startUpload(ing.port, '/events/webhook_gh', stranger(2), MiB);
    sockets.push(third);
    const refused = await readAll(third, 3000);
    expect(refused.text).toMatch(/^HTTP\/1\.1 503 /);
    expect(rawJsonBody(refused.text)).toMatchObject({ code: 'BODY_BYTES_LIMITED', limit: { scope: 'integration' } });
    // 192.0.2.1 sent a correctly signed request to gh above: its next one is served.
    const body = JSON.stringify({ source: 'gh-real-2', severity: 2 });
    const sig = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
    const known = await post(`${ing.url}/events/webhook_gh`, body, {
      'x-forwarded-for': '192.0.2.1',
      'x-hub-signature-256': sig,
    });
    expect(known.status).toBe(200);
    for (const s of held) s.destroy();
  });

  it('closes the connection of a refused request whose body keeps trickling in, instead of draining it for the request timeout', async () => {
    const socket = await startUpload(
      ing.port,
      '/events/webhook_slow-a',
      { 'x-forwarded-for': '198.51.100.30', authorization: basic('slow-a', 'wrong') },
      MiB,
    );
    sockets.push(socket);
    const trickle = setInterval(() => socket.writable && socket.write('['), 500);
    const started = performance.now();
    const { text, closed } = await readAll(socket, 10_000);
    clearInterval(trickle);
    expect(text).toMatch(/^HTTP\/1\.1 401 /);
    // Only the 401: nothing is written after the answer, the connection is just closed.
    expect(text.match(/HTTP\/1\.1/g)).toHaveLength(1);
    expect(closed).toBe(true);
    // Grace (1 s) plus a check interval, far below requestTimeout (30 s).
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it("reserves an authenticated tenant's bodies from its namespace's share; another namespace is served", async () => {
    const headers = { 'x-forwarded-for': '198.51.100.20', authorization: basic('slow-a', 'slow-a-password') };
    const held = [
      await startUpload(ing.port, '/events/webhook_slow-a', headers, MiB),
      await startUpload(ing.port, '/events/webhook_slow-a', headers, MiB),
    ];
    sockets.push(...held);
    await new Promise((r) => setTimeout(r, 200));
    const third = await post(`${ing.url}/events/webhook_slow-a`, '{"source":"a","severity":1}', headers);
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('1');
    expect(third.json()).toMatchObject({
      code: 'BODY_BYTES_LIMITED',
      limit: { scope: 'namespace', setting: 'limits.maxInFlightBodyBytesPerNamespace' },
    });
    expect(third.json().message).toMatch(/namespace team-a/);
    const b = await post(`${ing.url}/events/webhook_other-b`, '{"source":"b","severity":1}', {
      'x-forwarded-for': '198.51.100.20',
      authorization: basic('other-b', 'other-b-password'),
    });
    expect(b.status).toBe(200);
    for (const s of held) s.destroy();
  });
});
