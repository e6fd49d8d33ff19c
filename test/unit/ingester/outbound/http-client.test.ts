/** The outbound client against real loopback receivers: deadline, answer cap, classification, headers. */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OutboundClient, USER_AGENT } from '../../../../ingester/outbound/http-client.js';
import { classify } from '../../../../ingester/outbound/outcome.js';
import { ROOT } from '../../../support/paths.js';
import { waitFor } from '../../../support/waiting.js';
import { startMisbehavingReceiver, type MisbehavingReceiver } from '../../../e2e/support/misbehaving-receiver.js';

let receiver: MisbehavingReceiver;
let client: OutboundClient | undefined;

beforeEach(async () => {
  receiver = await startMisbehavingReceiver();
});
afterEach(async () => {
  await client?.close();
  client = undefined;
  await receiver.close();
});

const make = (o: Partial<ConstructorParameters<typeof OutboundClient>[0]> = {}): OutboundClient => {
  client = new OutboundClient({ where: 'test', auth: {}, timeoutMs: 1000, ...o });
  return client;
};

it('sends User-Agent intake/<package.json version> and the credentials from a file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'intake-outbound-'));
  writeFileSync(join(dir, 'token'), 's3cret\n');
  let headers: Record<string, string | string[] | undefined> = {};
  const server: Server = createServer((req, res) => {
    headers = req.headers;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const outcome = await make({ auth: { bearerTokenFile: join(dir, 'token') } }).post(
      `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
      '{}',
      { 'content-type': 'application/json' },
    );
    expect(outcome).toMatchObject({ kind: 'accepted', status: 200 });
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    expect(USER_AGENT).toBe(`intake/${version}`);
    expect(headers['user-agent']).toBe(USER_AGENT);
    expect(headers.authorization).toBe('Bearer s3cret');
    expect(headers['content-length']).toBe('2');
  } finally {
    server.close();
  }
});

it('aborts a request whose answer headers trickle at the total deadline and closes its socket', async () => {
  receiver.behaviour = 'trickle-headers';
  const started = Date.now();
  const outcome = await make({ timeoutMs: 1500 }).post(receiver.url, 'x', {});
  expect(outcome).toMatchObject({ kind: 'retry', reason: 'timeout' });
  expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
  expect(Date.now() - started).toBeLessThan(3000);
  await waitFor('socket closed', async () => receiver.calls[0]?.closedAtMs !== undefined);
});

it('counts a 200 whose body trickles as accepted at the deadline, and closes the socket', async () => {
  receiver.behaviour = 'trickle-body';
  const outcome = await make({ timeoutMs: 1200 }).post(receiver.url, 'x', {});
  expect(outcome).toMatchObject({ kind: 'accepted', status: 200 });
  await waitFor('socket closed', async () => receiver.calls[0]?.closedAtMs !== undefined);
});

it('stops reading an answer past maxResponseBytes and closes the socket', async () => {
  receiver.behaviour = 'huge-body';
  receiver.hugeBytes = 64 * 1024 * 1024;
  const outcome = await make({ timeoutMs: 10_000, maxResponseBytes: 16 * 1024 }).post(receiver.url, 'x', {});
  expect(outcome).toMatchObject({ kind: 'accepted', status: 200 });
  await waitFor('socket closed', async () => receiver.calls[0]?.closedAtMs !== undefined);
  expect(receiver.calls[0]!.bytesWritten).toBeLessThan(16 * 1024 * 1024);
});

it("keeps 512 characters of an error answer and the receiver's Retry-After", async () => {
  const server: Server = createServer((_req, res) => {
    res.writeHead(503, { 'retry-after': '7' });
    res.end('y'.repeat(5000));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const outcome = await make().post(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, 'x', {});
    expect(outcome).toEqual({
      kind: 'retry',
      reason: 'http_503',
      status: 503,
      retryAfterMs: 7000,
      error: `HTTP 503: ${'y'.repeat(512)}`,
    });
  } finally {
    server.close();
  }
});

it('times out a request still waiting for a socket at its deadline, and never sends it afterwards', async () => {
  let requests = 0;
  const server: Server = createServer((req, res) => {
    requests++;
    setTimeout(() => res.end(), 2000);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const c = make({ timeoutMs: 500, maxConnections: 1 });
    const started = Date.now();
    // One socket: the second request waits behind the first, which the receiver holds.
    const outcomes = await Promise.all([c.post(url, 'x', {}), c.post(url, 'y', {})]);
    expect(outcomes).toMatchObject([
      { kind: 'retry', reason: 'timeout' },
      { kind: 'retry', reason: 'timeout' },
    ]);
    expect(Date.now() - started).toBeLessThan(1500);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(requests).toBe(1);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

it('tells a refused connection, an abort by the caller and a bad header apart', async () => {
  const c = make();
  const port = Number(new URL(receiver.url).port);
  await receiver.close();
  expect(await c.post(`http://127.0.0.1:${port}/`, 'x', {})).toMatchObject({ kind: 'retry', reason: 'network' });
  receiver = await startMisbehavingReceiver();
  receiver.behaviour = 'trickle-headers';
  const abort = new AbortController();
  setTimeout(() => abort.abort(), 100);
  expect(await c.post(receiver.url, 'x', {}, abort.signal)).toMatchObject({ kind: 'retry', reason: 'aborted' });
  expect(await c.post(receiver.url, 'x', { 'x-bad': 'a\nb' })).toMatchObject({
    kind: 'reject',
    reason: 'invalid_request',
  });
  expect(await c.post('not a url', 'x', {})).toMatchObject({ kind: 'reject', reason: 'invalid_request' });
});

it.each([
  [200, 'accepted'],
  [301, 'reject'],
  [308, 'reject'],
  [400, 'reject'],
  [408, 'retry'],
  [429, 'retry'],
  [500, 'retry'],
])('classifies HTTP %i as %s, for destinations and remote write alike', (status, kind) => {
  expect(classify(status, '', {}).kind).toBe(kind);
});
