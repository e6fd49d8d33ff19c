/** The operator's and ingesters' API calls reuse their connections instead of a TLS handshake each. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { PooledKubeConfig } from '../../../kube/config.js';

const dir = mkdtempSync(join(tmpdir(), 'intake-kubeconfig-'));
let server: Server;
let handshakes = 0;
let url = '';
let caData = '';

beforeAll(async () => {
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
    ].concat(['-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1']),
    { stdio: 'ignore' },
  );
  caData = readFileSync(cert).toString('base64');
  server = createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: {}, items: [] }));
  });
  server.on('secureConnection', () => handshakes++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 30_000);

afterAll(() => new Promise<void>((r) => server.close(() => r())));

function configured(kc: KubeConfig): CoreV1Api {
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: url, caData, skipTLSVerify: false }],
    users: [{ name: 'u', token: 'not-a-secret' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc.makeApiClient(CoreV1Api);
}

async function handshakesFor(api: CoreV1Api, calls: number): Promise<number> {
  const before = handshakes;
  for (let i = 0; i < calls; i++) await api.listNamespace();
  return handshakes - before;
}

describe('PooledKubeConfig', () => {
  it('makes one TLS handshake for many sequential calls', async () => {
    expect(await handshakesFor(configured(new PooledKubeConfig()), 5)).toBe(1);
  });

  it('is needed: the library alone makes a handshake per call', async () => {
    expect(await handshakesFor(configured(new KubeConfig()), 5)).toBe(5);
  });
});
