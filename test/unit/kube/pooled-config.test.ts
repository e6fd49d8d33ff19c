/** The operator's API calls reuse their connections instead of a TLS handshake each (the ingester's: api-client.test.ts). */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { PooledKubeConfig } from '../../../kube/config.js';
import { selfSignedCertificate } from '../../support/certificates.js';

const dir = mkdtempSync(join(tmpdir(), 'intake-kubeconfig-'));

interface TestServer {
  server: Server;
  url: string;
  caData: string;
  handshakes: number;
}

/** An HTTPS server on loopback with its own self-signed certificate, answering every call with an empty NamespaceList. */
async function startServer(name: string): Promise<TestServer> {
  const { cert, key } = selfSignedCertificate(dir, name);
  const server = createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: {}, items: [] }));
  });
  const started: TestServer = { server, url: '', caData: readFileSync(cert).toString('base64'), handshakes: 0 };
  server.on('secureConnection', () => started.handshakes++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  started.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return started;
}

let first: TestServer;
let second: TestServer;

beforeAll(async () => {
  first = await startServer('first');
  second = await startServer('second');
}, 30_000);

afterAll(() => Promise.all([first, second].map((t) => new Promise<void>((r) => t.server.close(() => r())))));

function configured(kc: KubeConfig, target: TestServer): CoreV1Api {
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: target.url, caData: target.caData, skipTLSVerify: false }],
    users: [{ name: 'u', token: 'not-a-secret' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc.makeApiClient(CoreV1Api);
}

async function handshakesFor(api: CoreV1Api, target: TestServer, calls: number): Promise<number> {
  const before = target.handshakes;
  for (let i = 0; i < calls; i++) await api.listNamespace();
  return target.handshakes - before;
}

describe('PooledKubeConfig', () => {
  it('makes one TLS handshake for many sequential calls', async () => {
    expect(await handshakesFor(configured(new PooledKubeConfig(), first), first, 5)).toBe(1);
  });

  it('is needed: the library alone makes a handshake per call', async () => {
    expect(await handshakesFor(configured(new KubeConfig(), first), first, 5)).toBe(5);
  });

  it('follows a changed TLS identity (another server and CA) with a new agent', async () => {
    const kc = new PooledKubeConfig();
    expect(await handshakesFor(configured(kc, first), first, 2)).toBe(1);
    expect(await handshakesFor(configured(kc, second), second, 2)).toBe(1);
  });
});
