/**
 * Hostile and malformed requests against the running process: each gets the right 4xx and a JSON
 * body, nothing of a rejected request reaches the log, secrets never reach the logs, and the
 * process is alive and serving afterwards.
 */
import { connect } from 'node:net';
import { API_KEY, basic, DEMO, eventLines, startIngester, type RunningIngester } from './support/ingester.js';

let ing: RunningIngester;
beforeAll(async () => {
  ing = await startIngester();
});
afterAll(async () => {
  await ing.stop();
});

const AUTH = basic(DEMO.user, DEMO.password);
const ok = { source: 'web-01', severity: 3 };
const point = { metric: 'm', data: 1, source: 's' };
const deep = (n: number, open: string, close: string) => open.repeat(n) + close.repeat(n);
const nested = (n: number): unknown => {
  let v: unknown = 'leaf';
  for (let i = 0; i < n; i++) v = { n: v };
  return v;
};

type Case = [
  name: string,
  path: 'events' | 'metrics',
  body: string | Buffer,
  status: number,
  headers?: Record<string, string>,
  field?: string,
];
// Every row has all six columns: jest.each needs a rectangular table.
const raw = (
  name: string,
  path: Case[1],
  body: string | Buffer,
  status: number,
  headers?: Record<string, string>,
): Case => [name, path, body, status, headers, undefined];
const ev = (name: string, body: unknown, status: number, field?: string): Case => [
  name,
  'events',
  typeof body === 'string' ? body : JSON.stringify(body),
  status,
  undefined,
  field,
];
const mp = (name: string, body: unknown, status: number, field?: string): Case => [
  name,
  'metrics',
  typeof body === 'string' ? body : JSON.stringify(body),
  status,
  undefined,
  field,
];

const cases: Case[] = [
  ev('truncated JSON', '{"source":"a","sever', 400),
  ev('trailing garbage', '{"source":"a","severity":1} x', 400),
  ev('single quotes', "{'source':'a','severity':1}", 400),
  ev('NaN literal', '{"source":"a","severity":NaN}', 400),
  ev('Infinity literal', '{"source":"a","severity":Infinity}', 400),
  ev('empty body', '', 400),
  ev('whitespace body', '   \n ', 400),
  ev('JSON null', 'null', 400),
  ev('JSON string', '"hello"', 400),
  ev('JSON number', '42', 400),
  ev('empty array', [], 400),
  ev(
    '1001 events',
    Array.from({ length: 1001 }, () => ok),
    400,
  ),
  ev('array of arrays', [[ok]], 400, ''),
  ev('missing source', { severity: 1 }, 400, 'source'),
  ev('missing severity', { source: 'a' }, 400, 'severity'),
  ev('empty source', { source: '', severity: 1 }, 400, 'source'),
  ev('numeric source', { source: 5, severity: 1 }, 400, 'source'),
  ev('object source', { source: { a: 1 }, severity: 1 }, 400, 'source'),
  ev('severity 6', { source: 'a', severity: 6 }, 400, 'severity'),
  ev('severity -1', { source: 'a', severity: -1 }, 400, 'severity'),
  ev('severity 2.5', { source: 'a', severity: 2.5 }, 400, 'severity'),
  ev('severity "7"', { source: 'a', severity: '7' }, 400, 'severity'),
  ev('severity "urgent"', { source: 'a', severity: 'urgent' }, 400, 'severity'),
  ev('severity true', { source: 'a', severity: true }, 400, 'severity'),
  ev('severity null', { source: 'a', severity: null }, 400, 'severity'),
  ev('agent_time text', { ...ok, agent_time: 'yesterday' }, 400, 'agent_time'),
  ev('agent_time negative', { ...ok, agent_time: -1 }, 400, 'agent_time'),
  ev('agent_time array', { ...ok, agent_time: [1] }, 400, 'agent_time'),
  ev('agent_time past year 9999', { ...ok, agent_time: 1e15 }, 400, 'agent_time'),
  ev('signature number', { ...ok, signature: 1 }, 400, 'signature'),
  ev('type too long', { ...ok, type: 'x'.repeat(257) }, 400, 'type'),
  ev('class object', { ...ok, class: {} }, 400, 'class'),
  ev('description over 64 KiB', { ...ok, description: 'x'.repeat(65537) }, 400, 'description'),
  ev('source_id boolean', { ...ok, source_id: false }, 400, 'source_id'),
  ev('manager array', { ...ok, manager: ['a'] }, 400, 'manager'),
  ev('custom_info string', { ...ok, custom_info: 'x' }, 400, 'custom_info'),
  ev('unknown field nested 40 deep', { ...ok, extra: nested(40) }, 400, 'extra'),
  ev('100k nested arrays', deep(100_000, '[', ']'), 400),
  ev('100k nested objects', deep(100_000, '{"a":', '}').replace(/}$/, '1}'), 400),
  ev('__proto__ key', '{"source":"a","severity":1,"__proto__":{"admin":true}}', 400),
  ev('constructor.prototype key', '{"source":"a","severity":1,"constructor":{"prototype":{"admin":true}}}', 400),
  ev('mixed valid and invalid batch', [ok, ok, { source: 'a', severity: 'bad' }, ok], 400, 'severity'),
  raw('invalid UTF-8', 'events', Buffer.from([0x7b, 0x22, 0x73, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), 400),
  raw('body over 1 MiB', 'events', JSON.stringify({ ...ok, description: 'x'.repeat(1024 * 1024 + 10) }), 413),
  raw('text/html', 'events', JSON.stringify(ok), 415, { 'content-type': 'text/html' }),
  raw('multipart/form-data', 'events', JSON.stringify(ok), 415, { 'content-type': 'multipart/form-data; boundary=x' }),
  raw('application/xml', 'events', '<event/>', 415, { 'content-type': 'application/xml' }),
  raw('charset latin1', 'events', JSON.stringify(ok), 415, { 'content-type': 'application/json; charset=latin1' }),
  raw('malformed Basic base64', 'events', JSON.stringify(ok), 401, { authorization: 'Basic %%%' }),
  raw('Basic without colon', 'events', JSON.stringify(ok), 401, {
    authorization: `Basic ${Buffer.from('demo').toString('base64')}`,
  }),
  raw('Bearer scheme', 'events', JSON.stringify(ok), 401, { authorization: 'Bearer demo-password' }),
  raw('empty authorization', 'events', JSON.stringify(ok), 401, { authorization: '' }),
  raw('huge authorization header value', 'events', JSON.stringify(ok), 401, {
    authorization: `Basic ${'A'.repeat(8000)}`,
  }),
  raw('empty apiKey', 'metrics', JSON.stringify(point), 401, { apikey: '' }),
  raw('apiKey of another form', 'metrics', JSON.stringify(point), 401, { apikey: 'default_' }),
  mp('data "NaN"', { ...point, data: 'NaN' }, 400, 'data'),
  mp('data "Infinity"', { ...point, data: 'Infinity' }, 400, 'data'),
  mp('data 1e999', '{"metric":"m","data":1e999,"source":"s"}', 400, 'data'),
  mp('data hex string', { ...point, data: '0x10' }, 400, 'data'),
  mp('data object', { ...point, data: { v: 1 } }, 400, 'data'),
  mp('missing metric', { data: 1, source: 's' }, 400, 'metric'),
  mp('metric too long', { ...point, metric: 'm'.repeat(201) }, 400, 'metric'),
  mp('tags as string', { ...point, tags: 'env=prod' }, 400, 'tags'),
  mp('tag value object', { ...point, tags: { env: { a: 1 } } }, 400, 'tags.env'),
  mp(
    '33 tags',
    { ...point, tags: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`t${i}`, 'v'])) },
    400,
    'tags',
  ),
  mp('utc_offset malformed', { ...point, utc_offset: '+01:00' }, 400, 'utc_offset'),
  mp('time text', { ...point, time: 'now' }, 400, 'time'),
  mp('unknown field', { ...point, host: 'x' }, 400, 'host'),
  mp(
    '10001 points',
    Array.from({ length: 10001 }, () => point),
    400,
  ),
];

describe('hostile and malformed input', () => {
  it('has at least 50 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(50);
  });

  it.each(cases)('%s → %i', async (_name, path, body, status, headers, field) => {
    const url = path === 'events' ? `${ing.url}/events/webhook_demo` : `${ing.url}/v1/integrations/metrics`;
    const auth: Record<string, string> = path === 'events' ? { authorization: AUTH } : { apikey: API_KEY };
    const before = eventLines(ing.stdout()).length;
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth, ...headers },
      body: typeof body === 'string' ? body : new Uint8Array(body),
    });
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const json = (await res.json()) as {
      success: boolean;
      message: string;
      errors?: Array<{ index?: number; field: string }>;
    };
    expect(json.success).toBe(false);
    expect(json.message.length).toBeGreaterThan(0);
    if (field !== undefined) expect(json.errors?.map((e) => e.field)).toContain(field);
    expect(eventLines(ing.stdout()).length).toBe(before);
  });

  it('refuses two Authorization headers (raw socket)', async () => {
    const { port } = new URL(ing.url);
    const body = JSON.stringify(ok);
    const raw = await new Promise<string>((resolve) => {
      // write, not end: Node's server drops a request whose client half-closes before the answer,
      // and a 401 is answered only after authThrottle.failureDelay (Connection: close ends it).
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(
          `POST /events/webhook_demo HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH}\r\nAuthorization: ${basic('x', 'y')}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
        );
      });
      let data = '';
      socket.on('data', (d) => (data += d));
      socket.on('close', () => resolve(data));
    });
    expect(raw).toMatch(/^HTTP\/1\.1 (400|401) /);
  });

  // fastify closes the connection after a 413; a sender still writing its body then got a broken
  // pipe instead of the answer (a CI run of this file saw fetch fail with EPIPE).
  it('answers a body over the limit with 413 on a connection that stays open, and serves the next request on it', async () => {
    const { port } = new URL(ing.url);
    const big = JSON.stringify({ ...ok, description: 'x'.repeat(1024 * 1024 + 10) });
    const small = JSON.stringify(ok);
    const request = (body: string, close: boolean): string =>
      `POST /events/webhook_demo HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n${close ? 'Connection: close\r\n' : ''}\r\n${body}`;
    const answers = await rawExchange(Number(port), [request(big, false), request(small, true)]);
    expect(answers).toMatch(/^HTTP\/1\.1 413 /);
    expect(answers.split('\r\n\r\n')[0]).not.toMatch(/^connection: close/im);
    expect(answers).toMatch(/\r\n\r\n\{[^]*HTTP\/1\.1 200 /);
  });

  it('closes the connection after a 413 for a body declared far over the limit, without reading it', async () => {
    const { port } = new URL(ing.url);
    const head =
      `POST /events/webhook_demo HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${100 * 1024 * 1024}\r\n\r\n{"source":`;
    const answer = await rawExchange(Number(port), [head]);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer.split('\r\n\r\n')[0]).toMatch(/^connection: close/im);
  });

  it('is alive afterwards, accepts a valid request, and never logged a secret', async () => {
    expect((await fetch(`${ing.adminUrl}/healthz`)).status).toBe(200);
    const res = await fetch(`${ing.url}/events/webhook_demo`, {
      method: 'POST',
      headers: { authorization: AUTH, 'content-type': 'application/json' },
      body: JSON.stringify(ok),
    });
    expect(res.status).toBe(200);
    expect(ing.stderr()).not.toContain(DEMO.password);
    expect(ing.stderr()).not.toContain(API_KEY);
  });
});

/** Writes `requests` on one connection and resolves with everything read until the server closes it. */
function rawExchange(port: number, requests: string[]): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      for (const r of requests) socket.write(r);
    });
    let data = '';
    socket.on('data', (d) => (data += d));
    socket.on('error', reject);
    socket.on('close', () => resolve(data));
  });
}
