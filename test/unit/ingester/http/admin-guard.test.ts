/**
 * The admin listener's request checks (http/admin-guard.ts): which Host headers it answers, and
 * what a state-changing call must carry; through fastify.inject on the real admin server, with a
 * POST route of its own standing in for the dead-letter replay.
 */
import pino from 'pino';
import { Registry } from 'prom-client';
import type { FastifyInstance } from 'fastify';
import { hostAllowed, hostOf, isHostName } from '../../../../ingester/http/admin-guard.js';
import { buildAdminServer } from '../../../../ingester/http/admin-listener.js';
import { SeriesStore } from '../../../../ingester/series/series-store.js';

describe('hostOf', () => {
  it.each([
    ['example.com', 'example.com'],
    ['example.com:8081', 'example.com'],
    ['10.0.0.1:8081', '10.0.0.1'],
    ['[::1]:8081', '::1'],
    ['[fe80::1]', 'fe80::1'],
  ])('%s -> %s', (header, host) => expect(hostOf(header)).toBe(host));

  it.each(['::1', '[not-ip]:80', 'a:b', 'a:80:90', 'example.com:123456', '[::1]x'])('%s: no host', (header) =>
    expect(hostOf(header)).toBeUndefined(),
  );
});

describe('hostAllowed', () => {
  const names = new Set(['intake-ingester-admin.intake.svc']);
  it.each([
    '127.0.0.1',
    '127.0.0.1:8081',
    '10.244.3.9:8081',
    '[::1]:8081',
    '[2001:db8::7]',
    'localhost',
    'LOCALHOST:8081',
    'localhost.',
    'intake-ingester-admin.intake.svc:8081',
    'Intake-Ingester-Admin.Intake.Svc.',
  ])('answers %s', (host) => expect(hostAllowed(host, names)).toBe(true));
  it.each([
    undefined,
    '',
    'attacker.example',
    'localhost.attacker.example',
    'attacker.localhost.example',
    '127.0.0.1.nip.io',
    'intake-ingester-admin.intake.svc.evil',
    '::1',
    '0x7f000001.example',
  ])('refuses %p', (host) => expect(hostAllowed(host, names)).toBe(false));
});

describe('isHostName', () => {
  it.each(['intake-ingester-admin', 'intake-ingester-admin.intake.svc.cluster.local', 'admin.example.com.'])(
    '%s is a name',
    (name) => expect(isHostName(name)).toBe(true),
  );
  it.each(['', '10.0.0.1', 'host:8081', '*.example.com', '-bad.example', 'a..b', 'with space', 'x'.repeat(254)])(
    '%p is not',
    (name) => expect(isHostName(name)).toBe(false),
  );
});

describe('the admin server with the guard', () => {
  let app: FastifyInstance;
  const writes: unknown[] = [];
  beforeAll(async () => {
    app = buildAdminServer({
      registry: new Registry(),
      series: new SeriesStore({ ttlMs: 60_000, maxSeriesTotal: 10, maxSeriesPerNamespace: 10 }),
      lifecycle: { ready: true, closing: false },
      logger: pino({ level: 'silent' }),
      allowedHosts: ['Intake-Ingester-Admin.intake.svc'],
    });
    app.get('/boom', async () => {
      throw new Error('a secret-looking detail');
    });
    app.post('/write', async (req) => {
      writes.push(req.body);
      return { done: true };
    });
    await app.ready();
  });
  afterAll(() => app.close());

  const write = { 'x-intake-admin': 'true', 'content-type': 'application/json; charset=utf-8' };

  it('answers GET for an IP, localhost or a configured name, 421 in the JSON error shape otherwise', async () => {
    for (const host of ['127.0.0.1:8081', 'localhost', 'intake-ingester-admin.intake.svc:8081'])
      expect((await app.inject({ url: '/healthz', headers: { host } })).statusCode).toBe(200);
    const refused = await app.inject({ url: '/healthz', headers: { host: 'rebound.example:8081' } });
    expect(refused.statusCode).toBe(421);
    expect(refused.headers['content-type']).toMatch(/^application\/json/);
    expect(refused.json()).toEqual({
      success: false,
      code: 'HOST_NOT_ALLOWED',
      message: expect.stringContaining('"rebound.example:8081"'),
    });
  });

  it('lets a write through with the header and a JSON object body', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/write',
      headers: { host: 'localhost', ...write },
      payload: '{"kind":"mapping"}',
    });
    expect(res.statusCode).toBe(200);
    expect(writes).toEqual([{ kind: 'mapping' }]);
  });

  it.each([
    ['no header', { 'content-type': 'application/json' }, '{}', 403, 'ADMIN_HEADER_REQUIRED'],
    [
      'the header twice',
      { 'x-intake-admin': ['true', 'true'], 'content-type': 'application/json' },
      '{}',
      403,
      'ADMIN_HEADER_REQUIRED',
    ],
    [
      'a form',
      { 'x-intake-admin': 'true', 'content-type': 'application/x-www-form-urlencoded' },
      'a=1',
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    [
      'application/json-seq',
      { 'x-intake-admin': 'true', 'content-type': 'application/json-seq' },
      '{}',
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    ['an empty body', write, '', 400, 'BAD_REQUEST'],
    ['malformed JSON', write, '{', 400, 'BAD_REQUEST'],
    ['null', write, 'null', 400, 'INVALID_JSON'],
    ['a string', write, '"x"', 400, 'INVALID_JSON'],
    ['an array', write, '[{}]', 400, 'INVALID_JSON'],
    ['a body past 64 KiB', write, JSON.stringify({ id: 'x'.repeat(70_000) }), 413, 'PAYLOAD_TOO_LARGE'],
  ])('refuses a write with %s', async (_what, headers, payload, status, code) => {
    const before = writes.length;
    const res = await app.inject({
      method: 'POST',
      url: '/write',
      headers: { host: 'localhost', ...headers },
      payload,
    });
    expect({ status: res.statusCode, code: (res.json() as { code: string }).code }).toEqual({ status, code });
    expect(res.json()).toMatchObject({ success: false });
    expect(writes.length).toBe(before);
  });

  it('checks the Host before anything else: a rebound page with every header still gets 421', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/write',
      headers: { host: 'rebound.example', ...write },
      payload: '{}',
    });
    expect(res.statusCode).toBe(421);
  });

  it('treats DELETE and OPTIONS as writes too; no CORS header anywhere', async () => {
    for (const method of ['DELETE', 'OPTIONS', 'PUT', 'PATCH'] as const) {
      const res = await app.inject({
        method,
        url: '/write',
        headers: { host: 'localhost', origin: 'https://a.example' },
      });
      expect(res.statusCode).toBe(403);
      expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    }
  });

  it('answers a route that fails with the catalogue’s 500, without its message', async () => {
    const res = await app.inject({ url: '/boom', headers: { host: 'localhost' } });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toMatchObject({ success: false, code: 'INTERNAL' });
    expect(res.body).not.toContain('secret-looking');
  });
});
