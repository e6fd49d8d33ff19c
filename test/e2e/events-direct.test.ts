/**
 * The common webhook request (Basic, unsigned, a JSON body with a Content-Length) is served by a
 * node:http handler ahead of fastify (ingester/http/endpoints/events-direct.ts); everything else
 * by fastify's route. A query string sends the same request to fastify's route, so each case
 * here is sent both ways to the running process and must be answered alike: status, body, the
 * headers a sender reads, what reaches the log, and the request metrics.
 */
import { Agent, request as httpRequest } from 'node:http';
import {
  basic,
  DEMO,
  eventLines,
  startIngester,
  tenantAuth,
  tenantRoute,
  type RunningIngester,
} from './support/ingester.js';
import { waitFor } from '../support/waiting.js';

let ing: RunningIngester;
beforeAll(async () => {
  ing = await startIngester((config) => {
    (config.routes as unknown[]).push(
      tenantRoute('limited', 'team-l', { limits: { eventsPerSecond: 1, eventsBurst: 2 } }),
      tenantRoute('neighbour', 'team-n'),
    );
  });
});
afterAll(async () => {
  await ing.stop();
});

const AUTH = basic(DEMO.user, DEMO.password);
/** Headers a sender reads; Date and the connection's own differ run to run. */
const SENDER_HEADERS = [
  'content-type',
  'content-length',
  'retry-after',
  'www-authenticate',
  'content-security-policy',
  'x-frame-options',
  'x-content-type-options',
  'strict-transport-security',
  'referrer-policy',
];

interface Answer {
  status: number;
  text: string;
  headers: Record<string, string | null>;
}

async function send(path: string, body: string, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(`${ing.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await res.text();
  return { status: res.status, text, headers: Object.fromEntries(SENDER_HEADERS.map((h) => [h, res.headers.get(h)])) };
}

/** The request as the direct route takes it, then the same through fastify (a query string). */
async function bothWays(name: string, body: string, headers: Record<string, string>): Promise<[Answer, Answer]> {
  const direct = await send(`/events/webhook_${name}`, body, headers);
  const viaFastify = await send(`/events/webhook_${name}?via=fastify`, body, headers);
  return [direct, viaFastify];
}

async function requestsCounted(status: number): Promise<number> {
  const text = await (await fetch(`${ing.adminUrl}/metrics`)).text();
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith('intake_http_requests_total{') &&
        l.includes('endpoint="events"') &&
        l.includes(`status="${status}"`),
    );
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

const withoutIdsAndTimes = (e: Record<string, unknown>): Record<string, unknown> => {
  const { id: _id, received_at: _received, agent_time: _agent, ...rest } = e;
  return rest;
};

test('an accepted event: the same 200, headers and log line both ways, counted both ways', async () => {
  const before = await requestsCounted(200);
  const linesBefore = eventLines(ing.stdout()).length;
  const [direct, viaFastify] = await bothWays(
    'demo',
    JSON.stringify({ source: 'web-01', severity: 3, description: 'both ways' }),
    {
      authorization: AUTH,
    },
  );
  expect(direct.status).toBe(200);
  expect(direct).toEqual(viaFastify);
  expect(direct.text).toBe(
    '{"response":{"processed":1,"cached":0,"received":1},"success":true,"message":"Processed 1 event(s)"}',
  );
  expect(direct.headers['content-security-policy']).toContain("default-src 'none'");
  expect(await requestsCounted(200)).toBe(before + 2);
  const lines = eventLines(ing.stdout()).slice(linesBefore);
  expect(lines).toHaveLength(2);
  expect(withoutIdsAndTimes(lines[0]!)).toEqual(withoutIdsAndTimes(lines[1]!));
});

test('a batch, and an Idempotency-Key naming the events: the same ids both ways', async () => {
  const linesBefore = eventLines(ing.stdout()).length;
  const batch = JSON.stringify([
    { source: 'a', severity: 1 },
    { source: 'b', severity: 'critical' },
  ]);
  const [direct, viaFastify] = await bothWays('demo', batch, {
    authorization: AUTH,
    'idempotency-key': 'direct-parity-1',
  });
  expect(direct.status).toBe(200);
  expect(direct.text).toContain('"received":2');
  expect(viaFastify.status).toBe(200);
  const lines = eventLines(ing.stdout()).slice(linesBefore);
  expect(lines.map((l) => l.id)).toEqual(
    lines
      .slice(0, 2)
      .concat(lines.slice(0, 2))
      .map((l) => l.id),
  );
});

test.each([
  ['not JSON', '{"source":"a","sever', 400],
  ['an invalid event', JSON.stringify({ source: 'a', severity: 9 }), 400],
  ['nesting past the limit', `${'['.repeat(100)}${']'.repeat(100)}`, 400],
])('%s: the same refusal both ways', async (_name, body, status) => {
  const [direct, viaFastify] = await bothWays('demo', body, { authorization: AUTH });
  expect(direct.status).toBe(status);
  expect(direct).toEqual(viaFastify);
  expect(JSON.parse(direct.text)).toMatchObject({ success: false });
});

test('wrong and missing credentials: the same 401 both ways, nothing logged', async () => {
  const linesBefore = eventLines(ing.stdout()).length;
  const ok = JSON.stringify({ source: 'a', severity: 1 });
  const [wrong, wrongViaFastify] = await bothWays('demo', ok, { authorization: basic(DEMO.user, 'not-it') });
  expect(wrong.status).toBe(401);
  expect(wrong).toEqual(wrongViaFastify);
  const [missing, missingViaFastify] = await bothWays('demo', ok, {});
  expect(missing.status).toBe(401);
  expect(missing).toEqual(missingViaFastify);
  expect(eventLines(ing.stdout()).length).toBe(linesBefore);
  expect(ing.output()).not.toContain('not-it');
});

test('a tenant over its rate: the same 429 with Retry-After both ways', async () => {
  const ok = JSON.stringify({ source: 'a', severity: 1 });
  const auth = tenantAuth('limited');
  // The burst (2) spent, through either way.
  for (let i = 0; i < 2; i++) expect((await send('/events/webhook_limited', ok, auth)).status).toBe(200);
  const [direct, viaFastify] = await bothWays('limited', ok, auth);
  expect(direct.status).toBe(429);
  expect(direct.headers['retry-after']).not.toBeNull();
  expect({ ...direct, headers: { ...direct.headers, 'retry-after': null } }).toEqual({
    ...viaFastify,
    headers: { ...viaFastify.headers, 'retry-after': null },
  });
});

/** POSTs on `agent`'s one connection: the status, and whether the request reused the connection. */
function postOn(agent: Agent, path: string, authorization: string): Promise<{ status: number; reused: boolean }> {
  const url = new URL(path, ing.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', authorization } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ source: 'same-connection', severity: 2 }));
  });
}

test('one connection carrying several senders (a proxy): each request is checked on its own credentials', async () => {
  // A keep-alive connection's last Authorization header is remembered (its digest is the look-up
  // key of headers that verified before): a different header, or the same one for another
  // integration, on that connection must still be checked in full.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const linesBefore = eventLines(ing.stdout()).length;
    const answers = [
      await postOn(agent, '/events/webhook_demo', AUTH),
      await postOn(agent, '/events/webhook_demo', basic(DEMO.user, 'not-it')),
      await postOn(agent, '/events/webhook_neighbour', tenantAuth('neighbour').authorization),
      await postOn(agent, '/events/webhook_neighbour', AUTH),
      await postOn(agent, '/events/webhook_demo', tenantAuth('neighbour').authorization),
      await postOn(agent, '/events/webhook_demo', AUTH),
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 401, 200, 401, 401, 200]);
    expect(answers.slice(1).every((a) => a.reused)).toBe(true);
    // The log sink's lines reach this process through a pipe, a moment after the answers.
    const lines = await waitFor('the three accepted events in the log', async () => {
      const written = eventLines(ing.stdout()).slice(linesBefore);
      return written.length >= 3 && written;
    });
    expect(lines.map((l) => l.integration)).toEqual(['demo', 'neighbour', 'demo']);
  } finally {
    agent.destroy();
  }
});
