/**
 * The address guard on real connections, to loopback only: the guard is proved by denying
 * loopback ranges and checking that nothing connected. A resolver of the test's stands in for DNS,
 * so a name can resolve to what the test wants (a rebinding answer) without any network.
 */
import { execFileSync } from 'node:child_process';
import type { LookupAddress } from 'node:dns';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { AddressPolicy, type AddressPolicyRanges } from '../../../../ingester/outbound/address-policy.js';
import { ADDRESS_REFUSED, guardedConnector, type Refusal } from '../../../../ingester/outbound/guarded-connect.js';
import { OutboundClient } from '../../../../ingester/outbound/http-client.js';
import { Agent } from 'undici';

/** A loopback HTTP server that counts the connections made to it and answers 200 (or `answer`). */
interface Counted {
  server: Server;
  port: number;
  connections: number;
  requests: number;
  close(): Promise<void>;
}
async function counted(
  host = '127.0.0.1',
  answer: (res: ServerResponse) => void = (res) => res.end('ok'),
  port = 0,
): Promise<Counted> {
  const c = { connections: 0, requests: 0 } as Counted;
  c.server = createServer((_req, res) => {
    c.requests++;
    answer(res);
  });
  c.server.on('connection', () => c.connections++);
  await new Promise<void>((resolve) => c.server.listen(port, host, resolve));
  c.port = (c.server.address() as AddressInfo).port;
  c.close = () =>
    new Promise<void>((resolve) => {
      c.server.closeAllConnections();
      c.server.close(() => resolve());
    });
  return c;
}

const ranges = (r: Partial<AddressPolicyRanges>): AddressPolicy =>
  new AddressPolicy({ denied: [], allowed: [], cluster: [], own: [], ...r });

const clients: OutboundClient[] = [];
const servers: Counted[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function guardedClient(policy: AddressPolicy, refusals: Refusal[] = []): OutboundClient {
  const c = new OutboundClient({
    where: 'test',
    auth: {},
    timeoutMs: 5000,
    guard: { policy, onRefused: (r) => refusals.push(r) },
  });
  clients.push(c);
  return c;
}

it('refuses an address in a denied loopback range, in the URL or resolved from localhost, and never connects', async () => {
  const receiver = await counted();
  servers.push(receiver);
  const refusals: Refusal[] = [];
  const client = guardedClient(ranges({ denied: ['127.0.0.0/8', '::1/128'] }), refusals);
  for (const url of [
    `http://127.0.0.1:${receiver.port}/`,
    `http://[::ffff:127.0.0.1]:${receiver.port}/`,
    `http://[::ffff:7f00:1]:${receiver.port}/`,
    `http://localhost:${receiver.port}/`,
    `http://0x7f.1:${receiver.port}/`,
  ]) {
    const outcome = await client.post(url, '{}', {});
    expect([url, outcome]).toEqual([
      url,
      {
        kind: 'reject',
        reason: 'address_refused',
        error: expect.stringMatching(/the address guard refused .*denied range/),
      },
    ]);
  }
  expect(refusals.map((r) => r.by)).toEqual(['denied', 'denied', 'denied', 'denied', 'denied']);
  expect(refusals[3]).toMatchObject({
    host: 'localhost',
    range: expect.stringMatching(/^(127\.0\.0\.0\/8|::1\/128)$/),
  });
  expect(receiver.connections).toBe(0);
});

it('refuses loopback by default and delivers once the admin allows it', async () => {
  const receiver = await counted();
  servers.push(receiver);
  const url = `http://127.0.0.1:${receiver.port}/`;
  expect(await guardedClient(ranges({})).post(url, '{}', {})).toMatchObject({
    kind: 'reject',
    reason: 'address_refused',
    error: expect.stringContaining('127.0.0.0/8 (loopback, refused by default)'),
  });
  expect(receiver.connections).toBe(0);
  expect(await guardedClient(ranges({ allowed: ['127.0.0.1/32'] })).post(url, '{}', {})).toMatchObject({
    kind: 'accepted',
    status: 200,
  });
  expect(receiver.requests).toBe(1);
});

it('resolves once per connection and connects to the address it checked (a rebinding answer is refused)', async () => {
  // The name resolves to 127.0.0.1 (allowed), then to 127.0.0.2 (loopback, refused), then back:
  // the same port on both addresses, and the allowed receiver closes every connection, so each
  // request is a new connection, resolved anew.
  const victim = await counted('127.0.0.2');
  const allowed = await counted('127.0.0.1', (res) => res.setHeader('connection', 'close').end('ok'), victim.port);
  servers.push(allowed, victim);
  const answers = ['127.0.0.1', '127.0.0.2', '127.0.0.1'];
  const asked: string[] = [];
  const resolve = (host: string, cb: (err: Error | null, a: LookupAddress[]) => void): void => {
    asked.push(host);
    const address = answers.shift() ?? '127.0.0.2';
    setImmediate(() => cb(null, [{ address, family: 4 }]));
  };
  const refusals: Refusal[] = [];
  const policy = ranges({ allowed: ['127.0.0.1/32'] });
  const agent = new Agent({ connect: guardedConnector({ policy, onRefused: (r) => refusals.push(r) }, {}, resolve) });
  const port = victim.port;
  try {
    const statuses: Array<number | string> = [];
    for (let i = 0; i < 3; i++) {
      try {
        const res = await agent.request({ origin: `http://rebind.test:${port}`, path: '/', method: 'GET' });
        await res.body.text();
        statuses.push(res.statusCode);
      } catch (err) {
        statuses.push((err as { code?: string }).code ?? String(err));
      }
    }
    expect(statuses).toEqual([200, ADDRESS_REFUSED, 200]);
    expect(asked).toEqual(['rebind.test', 'rebind.test', 'rebind.test']);
    expect(refusals).toEqual([expect.objectContaining({ host: 'rebind.test', address: '127.0.0.2', by: 'loopback' })]);
    expect(allowed.connections).toBe(2);
    expect(victim.connections).toBe(0);
  } finally {
    await agent.close();
  }
});

it('connects to the allowed addresses of a name whose other addresses are refused', async () => {
  const receiver = await counted();
  servers.push(receiver);
  const resolve = (_h: string, cb: (err: Error | null, a: LookupAddress[]) => void): void =>
    cb(null, [
      { address: '127.0.0.9', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ]);
  const agent = new Agent({
    connect: guardedConnector(
      { policy: ranges({ allowed: ['127.0.0.1/32'] }), onRefused: () => undefined },
      {},
      resolve,
    ),
  });
  try {
    const res = await agent.request({ origin: `http://two.test:${receiver.port}`, path: '/', method: 'GET' });
    await res.body.text();
    expect(res.statusCode).toBe(200);
    expect(receiver.connections).toBe(1);
  } finally {
    await agent.close();
  }
});

it('never follows a redirect: a 3xx is a final answer and its Location is not reached', async () => {
  const elsewhere = await counted();
  const redirecting = await counted('127.0.0.1', (res) => {
    res.statusCode = 302;
    res.setHeader('location', `http://127.0.0.1:${elsewhere.port}/`);
    res.end();
  });
  servers.push(elsewhere, redirecting);
  const client = guardedClient(ranges({ allowed: ['127.0.0.0/8'] }));
  expect(await client.post(`http://127.0.0.1:${redirecting.port}/`, '{}', {})).toMatchObject({
    kind: 'reject',
    reason: 'http_302',
  });
  const plain = new OutboundClient({ where: 'test', auth: {}, timeoutMs: 5000 });
  clients.push(plain);
  expect(await plain.post(`http://127.0.0.1:${redirecting.port}/`, '{}', {})).toMatchObject({ reason: 'http_302' });
  expect(redirecting.requests).toBe(2);
  expect(elsewhere.connections).toBe(0);
});

it('keeps TLS checking the name of the URL while it connects to the checked address', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'intake-guard-tls-'));
  const [cert, key] = [join(dir, 'tls.crt'), join(dir, 'tls.key')];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
    ].concat(['-days', '1', '-subj', '/CN=guarded.test', '-addext', 'subjectAltName=DNS:guarded.test']),
    { stdio: 'ignore' },
  );
  let connections = 0;
  const server = createHttpsServer({ cert: readFileSync(cert), key: readFileSync(key) }, (_req, res) => res.end('ok'));
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const resolve = (_h: string, cb: (err: Error | null, a: LookupAddress[]) => void): void =>
    cb(null, [{ address: '127.0.0.1', family: 4 }]);
  const agentFor = (policy: AddressPolicy): Agent =>
    new Agent({
      connect: guardedConnector({ policy, onRefused: () => undefined }, { ca: readFileSync(cert) }, resolve),
    });
  const get = async (agent: Agent, name: string): Promise<number | string> => {
    try {
      const res = await agent.request({ origin: `https://${name}:${port}`, path: '/', method: 'GET' });
      await res.body.text();
      return res.statusCode;
    } catch (err) {
      return (err as { code?: string }).code ?? String(err);
    }
  };
  const allowed = agentFor(ranges({ allowed: ['127.0.0.1/32'] }));
  const denied = agentFor(ranges({ denied: ['127.0.0.0/8'] }));
  try {
    expect(await get(denied, 'guarded.test')).toBe(ADDRESS_REFUSED);
    expect(connections).toBe(0);
    expect(await get(allowed, 'guarded.test')).toBe(200);
    // The certificate names guarded.test: another name resolving to the same address is not accepted.
    expect(await get(allowed, 'other.test')).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
  } finally {
    await Promise.all([allowed.close(), denied.close()]);
    server.closeAllConnections();
    server.close();
  }
});
