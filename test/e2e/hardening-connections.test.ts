/**
 * Attacks on the listeners themselves, through the built process over real sockets: descriptor
 * exhaustion by idle connections, uploads that never finish, requests Node refuses itself,
 * `Expect: 100-continue` before authentication, and SIGTERM with keep-alive connections.
 */
import { request, Agent } from 'node:http';
import type { Socket } from 'node:net';
import { basic, DEMO, post, startIngester, type RunningIngester } from './support/ingester.js';
import { openSocket, rawJsonBody, readAll, waitForText } from './support/raw-http.js';

const AUTH = basic(DEMO.user, DEMO.password);
const EVENT = JSON.stringify({ source: 'web-01', severity: 3 });

describe('descriptor exhaustion by idle connections (no credentials needed)', () => {
  let ing: RunningIngester;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    ing = await startIngester((c) => (c.limits = { ...(c.limits as object), headersTimeout: '1500ms' }), {
      fdLimit: 256,
    });
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await ing.stop();
  });

  it('refuses connections past its cap instead of exiting, keeps the admin port, and closes connections that send nothing', async () => {
    // More idle connections than the process has descriptors.
    const attempts = await Promise.allSettled(Array.from({ length: 400 }, () => openSocket(ing.port)));
    for (const a of attempts) if (a.status === 'fulfilled') sockets.push(a.value);
    const closedByServer = sockets.map((s) => readAll(s, 8000));
    // Past under-pressure's old 1 s memory sample, which crashed the process with EMFILE.
    await new Promise((r) => setTimeout(r, 2500));
    expect(ing.child.exitCode).toBeNull();
    expect((await fetch(`${ing.adminUrl}/healthz`)).status).toBe(200);
    // Connections that sent nothing are closed by the server after headersTimeout.
    const results = await Promise.all(closedByServer);
    expect(results.filter((r) => r.closed).length).toBe(sockets.length);
    const res = await post(`${ing.url}/events/webhook_demo`, EVENT, { authorization: AUTH });
    expect(res.status).toBe(200);
    expect(ing.stderr()).not.toMatch(/EMFILE/);
  }, 30_000);
});

describe('slow and malformed requests', () => {
  let ing: RunningIngester;
  beforeAll(async () => {
    ing = await startIngester((c) => {
      c.limits = { ...(c.limits as object), requestTimeout: '1500ms', headersTimeout: '1s' };
      c.shutdown = { timeout: '8s' };
    });
  });
  afterAll(async () => {
    await ing.stop();
  });

  it('answers 408 in JSON to an authenticated upload that never completes', async () => {
    const socket = await openSocket(ing.port);
    socket.write(
      `POST /events/webhook_demo HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"source":`,
    );
    const { text, closed } = await readAll(socket, 6000);
    expect(closed).toBe(true);
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toMatch(/x-content-type-options: nosniff/i);
    expect(rawJsonBody(text)).toMatchObject({ success: false, code: 'REQUEST_TIMEOUT' });
  });

  it('answers a malformed request in the JSON error shape with the security headers', async () => {
    const socket = await openSocket(ing.port);
    socket.write('GARBAGE / HTTP/1.1\r\n\r\n');
    const { text } = await readAll(socket);
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(text).toMatch(/content-type: application\/json/i);
    expect(text).toMatch(/x-content-type-options: nosniff/i);
    expect(rawJsonBody(text)).toMatchObject({ success: false, code: 'BAD_REQUEST' });
  });

  it('sends 100 Continue only after authentication', async () => {
    const wrong = await openSocket(ing.port);
    wrong.write(
      `POST /events/webhook_demo HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic('demo', 'wrong')}\r\nContent-Type: application/json\r\nContent-Length: ${EVENT.length}\r\nExpect: 100-continue\r\n\r\n`,
    );
    const refused = await waitForText(wrong, /\r\n\r\n\{.*\}$/s);
    expect(refused).not.toMatch(/100 Continue/);
    expect(refused).toMatch(/^HTTP\/1\.1 401 /);
    wrong.destroy();

    const right = await openSocket(ing.port);
    right.write(
      `POST /events/webhook_demo HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH}\r\nContent-Type: application/json\r\nContent-Length: ${EVENT.length}\r\nExpect: 100-continue\r\n\r\n`,
    );
    expect(await waitForText(right, /100 Continue\r\n\r\n/)).toMatch(/^HTTP\/1\.1 100 Continue/);
    right.write(EVENT);
    expect(await waitForText(right, /"success":true/)).toMatch(/HTTP\/1\.1 200 /);
    right.destroy();
  });

  it('finishes SIGTERM within its timeout although an upload is still open', async () => {
    const socket = await openSocket(ing.port);
    socket.write(
      `POST /events/webhook_demo HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`,
    );
    const closed = readAll(socket, 10_000);
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    expect(await ing.stop('SIGTERM')).toBe(0);
    expect(Date.now() - started).toBeLessThan(8000);
    await closed;
  });
});

describe('SIGTERM with keep-alive connections', () => {
  it('answers requests sent on an idle keep-alive connection with 503, never a reset', async () => {
    const ing = await startIngester();
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    const send = (): Promise<{ status: number; body: string }> =>
      new Promise((resolve, reject) => {
        const req = request(
          `${ing.url}/events/webhook_demo`,
          {
            method: 'POST',
            agent,
            headers: { authorization: AUTH, 'content-type': 'application/json', 'content-length': EVENT.length },
          },
          (res) => {
            let body = '';
            res.on('data', (d) => (body += d));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.end(EVENT);
      });
    // Four warm keep-alive connections.
    expect((await Promise.all([send(), send(), send(), send()])).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    ing.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 100));
    const after = await Promise.allSettled([send(), send(), send(), send()]);
    agent.destroy();
    for (const r of after) {
      expect(r.status).toBe('fulfilled');
      if (r.status === 'fulfilled') {
        expect([200, 503]).toContain(r.value.status);
        if (r.value.status === 503) expect(JSON.parse(r.value.body)).toMatchObject({ code: 'UNAVAILABLE' });
      }
    }
    expect(await ing.exited).toBe(0);
  });
});

describe('connections held by one address', () => {
  it('closes the connections one address opens past limits.maxConnectionsPerAddress; a trusted proxy is exempt', async () => {
    const opened: Socket[] = [];
    const ing = await startIngester((c) => (c.limits = { ...(c.limits as object), maxConnectionsPerAddress: 20 }));
    try {
      for (let i = 0; i < 30; i++) opened.push(await openSocket(ing.port));
      const outcomes = await Promise.all(opened.map((s) => readAll(s, 1000)));
      // The first 20 stay open (idle, within headersTimeout); the 10 past the bound are closed at once.
      expect(outcomes.filter((o) => o.closed).length).toBe(10);
      for (const s of opened) s.destroy();
      await new Promise((r) => setTimeout(r, 200));
      expect((await post(`${ing.url}/events/webhook_demo`, EVENT, { authorization: AUTH })).status).toBe(200);
    } finally {
      for (const s of opened) s.destroy();
      await ing.stop();
    }
    const proxied = await startIngester((c) => {
      c.trustProxy = '127.0.0.1';
      c.limits = { ...(c.limits as object), maxConnectionsPerAddress: 20 };
    });
    const behindProxy: Socket[] = [];
    try {
      for (let i = 0; i < 30; i++) behindProxy.push(await openSocket(proxied.port));
      const outcomes = await Promise.all(behindProxy.map((s) => readAll(s, 1000)));
      expect(outcomes.filter((o) => o.closed).length).toBe(0);
    } finally {
      for (const s of behindProxy) s.destroy();
      await proxied.stop();
    }
  }, 30_000);
});
