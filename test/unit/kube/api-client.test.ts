/**
 * The ingester's own list-watch client (kube/api-client.ts, kube/api-connection.ts) against an
 * HTTPS server on loopback with a self-signed certificate: the kubeconfig and in-cluster forms it
 * reads, the credentials it sends, TLS verification, connection reuse, API errors, and the watch
 * stream's framing and failures. The real API server path is covered by the integration tests
 * (every ingester there runs in Kubernetes mode) and the chart tests (in-cluster).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError, continueInHead, KubeApiClient } from '../../../kube/api-client.js';
import { inClusterConnection, KubeConfigError, kubeconfigConnection } from '../../../kube/api-connection.js';
import { selfSignedCertificate } from '../../support/certificates.js';

const dir = mkdtempSync(join(tmpdir(), 'intake-api-client-'));
const CERT = join(dir, 'server.crt');

interface Seen {
  path: string;
  authorization?: string;
}

let server: Server;
let url: string;
let handshakes = 0;
const seen: Seen[] = [];
/** How the next request is answered; the default is an empty list. */
let answer: (req: IncomingMessage, res: ServerResponse) => void;
const emptyList = (_req: IncomingMessage, res: ServerResponse): void => {
  res.end(JSON.stringify({ items: [{ metadata: { name: 'a' } }], metadata: { resourceVersion: '7' } }));
};

beforeAll(async () => {
  const { key } = selfSignedCertificate(dir, 'server');
  server = createServer({ cert: readFileSync(CERT), key: readFileSync(key) }, (req, res) => {
    seen.push({ path: req.url ?? '', authorization: req.headers.authorization });
    answer(req, res);
  });
  server.on('secureConnection', () => handshakes++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 30_000);

afterEach(() => {
  seen.length = 0;
  answer = emptyList;
  jest.restoreAllMocks();
});
answer = emptyList;

afterAll(() => new Promise<void>((r) => server.close(() => r())));

let n = 0;
function kubeconfig(cluster: string, user: string): string {
  const path = join(dir, `kubeconfig-${++n}`);
  writeFileSync(
    path,
    `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n${cluster}\nusers:\n- name: u\n  user:\n${user}\ncontexts:\n- name: ctx\n  context: {cluster: c, user: u}\ncurrent-context: ctx\n`,
  );
  return path;
}
const caData = (): string => `    certificate-authority-data: ${readFileSync(CERT).toString('base64')}`;

describe('kubeconfig connections', () => {
  it('verifies the server against the CA, sends the token, and reuses one connection', async () => {
    const client = new KubeApiClient(
      kubeconfigConnection(kubeconfig(`    server: ${url}\n${caData()}`, '    token: t0ken')),
    );
    const before = handshakes;
    const list = await client.list('/api/v1/namespaces/x/secrets', { labelSelector: 'intake.dev/route=true' });
    await client.list('/api/v1/namespaces/x/secrets');
    expect(list).toEqual({ items: [{ metadata: { name: 'a' } }], resourceVersion: '7' });
    expect(seen[0]).toEqual({
      path: '/api/v1/namespaces/x/secrets?labelSelector=intake.dev%2Froute%3Dtrue&limit=500',
      authorization: 'Bearer t0ken',
    });
    expect(handshakes - before).toBe(1);
  });

  it('reads a list page by page (limit and continue), mapping each item as its page arrives', async () => {
    answer = (req, res) => {
      const token = new URL(req.url ?? '', 'http://x').searchParams.get('continue');
      const next = token === null ? 'p2' : token === 'p2' ? 'p3' : undefined;
      res.end(
        JSON.stringify({
          items: [{ metadata: { name: token ?? 'p1', uid: 'x' } }],
          metadata: { resourceVersion: '9', ...(next ? { continue: next } : {}) },
        }),
      );
    };
    const client = new KubeApiClient(
      kubeconfigConnection(kubeconfig(`    server: ${url}\n${caData()}`, '    token: t0ken')),
    );
    const list = await client.list<{ metadata: { name: string } }, string>(
      '/api/v1/secrets',
      { labelSelector: 'a=b' },
      (item) => item.metadata.name,
    );
    expect(list).toEqual({ items: ['p1', 'p2', 'p3'], resourceVersion: '9' });
    expect(seen.map((s) => s.path)).toEqual([
      '/api/v1/secrets?labelSelector=a%3Db&limit=500',
      '/api/v1/secrets?labelSelector=a%3Db&limit=500&continue=p2',
      '/api/v1/secrets?labelSelector=a%3Db&limit=500&continue=p3',
    ]);
  });

  it('asks for the next page as soon as the continue token has arrived, before the page itself has', async () => {
    // The API server writes a list's metadata before its items: page 1's head carries the token,
    // and its items come only once page 2 was asked for (or after 5 s, when nothing asked).
    let askedEarly = false;
    let secondAsked: () => void = () => undefined;
    const second = new Promise<void>((r) => (secondAsked = r));
    answer = (req, res) => {
      const token = new URL(req.url ?? '', 'http://x').searchParams.get('continue');
      if (token === null) {
        res.write(
          '{"kind":"SecretList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"p2"},"items":[',
        );
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise((r) => (timer = setTimeout(r, 5000)));
        void Promise.race([second.then(() => 'asked'), timeout]).then((first) => {
          askedEarly = first === 'asked';
          clearTimeout(timer);
          res.end('{"metadata":{"name":"a"}}]}');
        });
        return;
      }
      secondAsked();
      res.end(
        '{"kind":"SecretList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"b"}}]}',
      );
    };
    const client = new KubeApiClient(
      kubeconfigConnection(kubeconfig(`    server: ${url}\n${caData()}`, '    token: t0ken')),
    );
    const list = await client.list<{ metadata: { name: string } }, string>(
      '/api/v1/secrets',
      {},
      (i) => i.metadata.name,
    );
    expect(list).toEqual({ items: ['a', 'b'], resourceVersion: '9' });
    expect(askedEarly).toBe(true);
    expect(seen.map((s) => s.path)).toEqual(['/api/v1/secrets?limit=500', '/api/v1/secrets?limit=500&continue=p2']);
  });

  it('fails the list when a page fails, with the page asked for early dropped', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown): void => void unhandled.push(err);
    process.on('unhandledRejection', onUnhandled);
    answer = (req, res) => {
      const token = new URL(req.url ?? '', 'http://x').searchParams.get('continue');
      if (token === null) {
        // The head, then a connection that breaks before the page ends.
        res.write('{"metadata":{"resourceVersion":"9","continue":"p2"},"items":[{"metadata":');
        setTimeout(() => res.destroy(), 50);
        return;
      }
      setTimeout(() => res.end('{"metadata":{"resourceVersion":"9"},"items":[]}'), 20);
    };
    const client = new KubeApiClient(
      kubeconfigConnection(kubeconfig(`    server: ${url}\n${caData()}`, '    token: t0ken')),
    );
    await expect(client.list('/api/v1/secrets')).rejects.toThrow();
    await new Promise((r) => setTimeout(r, 200));
    process.off('unhandledRejection', onUnhandled);
    expect(unhandled).toEqual([]);
  });

  it('reads a CA file and a token file relative to the kubeconfig, and re-reads the token a minute later', async () => {
    writeFileSync(join(dir, 'token'), 'first\n');
    const path = kubeconfig(`    server: ${url}\n    certificate-authority: server.crt`, '    tokenFile: token');
    const client = new KubeApiClient(kubeconfigConnection(path));
    await client.list('/api/v1/secrets');
    writeFileSync(join(dir, 'token'), 'second\n');
    await client.list('/api/v1/secrets');
    const now = Date.now();
    jest.spyOn(Date, 'now').mockReturnValue(now + 61_000);
    await client.list('/api/v1/secrets');
    expect(seen.map((s) => s.authorization)).toEqual(['Bearer first', 'Bearer first', 'Bearer second']);
  });

  it('refuses a server whose certificate the CA does not sign, unless TLS verification is off', async () => {
    const otherCa = selfSignedCertificate(dir, 'other', false).cert;
    const wrong = new KubeApiClient(
      kubeconfigConnection(kubeconfig(`    server: ${url}\n    certificate-authority: ${otherCa}`, '    token: x')),
    );
    await expect(wrong.list('/api/v1/secrets')).rejects.toThrow(/self-signed|unable to verify|certificate/i);
    const insecure = new KubeApiClient(
      kubeconfigConnection(kubeconfig(`    server: ${url}\n    insecure-skip-tls-verify: true`, '    token: x')),
    );
    await expect(insecure.list('/api/v1/secrets')).resolves.toMatchObject({ resourceVersion: '7' });
  });

  it('reads a kubeconfig the plain YAML reader declines (double-quoted escapes) with the full parser', async () => {
    const client = new KubeApiClient(
      kubeconfigConnection(kubeconfig(`    server: "${url}"\n${caData()}`, '    token: "t0k\\x65n"')),
    );
    await client.list('/api/v1/secrets');
    expect(seen[0]?.authorization).toBe('Bearer t0ken');
  });

  it('sends Basic credentials for a username and password', async () => {
    const client = new KubeApiClient(
      kubeconfigConnection(kubeconfig(`    server: ${url}\n${caData()}`, '    username: admin\n    password: pw')),
    );
    await client.list('/api/v1/secrets');
    expect(seen[0]?.authorization).toBe(`Basic ${Buffer.from('admin:pw').toString('base64')}`);
  });

  it.each([
    ['an exec plugin', `    server: ${'https://x'}`, '    exec: {command: aws}', /user\.exec is not supported/],
    [
      'an auth provider',
      '    server: https://x',
      '    auth-provider: {name: gcp}',
      /user\.auth-provider is not supported/,
    ],
    ['a proxy', '    server: https://x\n    proxy-url: http://proxy', '    token: x', /proxy-url is not supported/],
    ['a certificate without its key', '    server: https://x', `    client-certificate: ${CERT}`, /without its key/],
    ['no server', '    insecure-skip-tls-verify: true', '    token: x', /has no http\(s\) server/],
    [
      'a missing CA file',
      '    server: https://x\n    certificate-authority: nope.crt',
      '    token: x',
      /certificate-authority .*nope\.crt/,
    ],
  ])('refuses a kubeconfig with %s, naming it', (_what, cluster, user, message) => {
    const path = kubeconfig(cluster, user);
    expect(() => kubeconfigConnection(path)).toThrow(KubeConfigError);
    expect(() => kubeconfigConnection(path)).toThrow(message);
  });

  it('refuses a kubeconfig without a current context, and a file that is not there', () => {
    const path = join(dir, 'no-context');
    writeFileSync(path, 'clusters: []\n');
    expect(() => kubeconfigConnection(path)).toThrow(/no current-context/);
    expect(() => kubeconfigConnection(join(dir, 'absent'))).toThrow(/cannot read the kubeconfig/);
  });
});

describe('in-cluster connections', () => {
  const env = { ...process.env };
  afterEach(() => {
    process.env = { ...env };
  });

  it('uses the Service variables, the ServiceAccount CA and its token', async () => {
    const sa = mkdtempSync(join(tmpdir(), 'intake-sa-'));
    writeFileSync(join(sa, 'token'), 'sa-token\n');
    writeFileSync(join(sa, 'ca.crt'), readFileSync(CERT));
    process.env.KUBERNETES_SERVICE_HOST = '127.0.0.1';
    process.env.KUBERNETES_SERVICE_PORT = new URL(url).port;
    await new KubeApiClient(inClusterConnection(sa)).list('/api/v1/secrets');
    expect(seen[0]?.authorization).toBe('Bearer sa-token');
  });

  it('says what is missing outside a cluster or without a token', () => {
    delete process.env.KUBERNETES_SERVICE_HOST;
    expect(() => inClusterConnection(dir)).toThrow(/not running in a cluster.*--kubeconfig/);
    process.env.KUBERNETES_SERVICE_HOST = '127.0.0.1';
    process.env.KUBERNETES_SERVICE_PORT = '443';
    expect(() => inClusterConnection(join(dir, 'absent'))).toThrow(/cannot read the token file/);
  });
});

describe('API calls', () => {
  const client = (): KubeApiClient =>
    new KubeApiClient(kubeconfigConnection(kubeconfig(`    server: ${url}\n${caData()}`, '    token: t')));

  it('reports a refused list with its status and the API server message, never the token', async () => {
    answer = (_req, res) => {
      res.statusCode = 403;
      res.end(JSON.stringify({ kind: 'Status', message: 'secrets is forbidden: User "x" cannot list' }));
    };
    const err = (await client()
      .list('/api/v1/secrets')
      .catch((e: unknown) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.statusCode).toBe(403);
    expect(err.message).toBe('list /api/v1/secrets: HTTP 403: secrets is forbidden: User "x" cannot list');
    expect(err.message).not.toContain('Bearer');
  });

  it('watches: events split across writes, bookmarks, then the server ends the watch', async () => {
    answer = (req, res) => {
      expect(new URL(req.url ?? '', url).searchParams.get('watch')).toBe('true');
      const line = `${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'b', resourceVersion: '8' } } })}\n`;
      res.write(line.slice(0, 10));
      setTimeout(() => {
        res.write(
          line.slice(10) + `${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '9' } } })}\n`,
        );
        setTimeout(() => res.end(), 20);
      }, 20);
    };
    const events: string[] = [];
    const ended = new Promise<unknown>((resolve) => {
      void client().watch<{ metadata: { name?: string; resourceVersion: string } }>(
        '/api/v1/secrets',
        { resourceVersion: '7', timeoutSeconds: 5 },
        (phase, obj) => events.push(`${phase}:${obj.metadata.name ?? ''}@${obj.metadata.resourceVersion}`),
        resolve,
      );
    });
    expect(await ended).toBeUndefined();
    expect(events).toEqual(['ADDED:b@8', 'BOOKMARK:@9']);
    expect(seen[0]?.path).toContain('resourceVersion=7');
  });

  it('rejects a watch the server answers 410 with statusCode 410 (the informer relists)', async () => {
    answer = (_req, res) => {
      res.statusCode = 410;
      res.end(JSON.stringify({ kind: 'Status', message: 'too old resource version' }));
    };
    await expect(
      client().watch(
        '/api/v1/secrets',
        { timeoutSeconds: 5 },
        () => {},
        () => {},
      ),
    ).rejects.toMatchObject({
      statusCode: 410,
    });
  });

  it('ends a watch whose connection drops mid-stream with an error, and one stopped by its controller with AbortError', async () => {
    answer = (_req, res) => {
      res.write(`${JSON.stringify({ type: 'ADDED', object: {} })}\n`);
      setTimeout(() => res.socket?.destroy(), 20);
    };
    const dropped = await new Promise<unknown>((resolve) => {
      void client().watch('/api/v1/secrets', { timeoutSeconds: 5 }, () => {}, resolve);
    });
    expect((dropped as Error).message).toMatch(/closed before the watch ended/);

    answer = (_req, res) => res.write('\n');
    const stopped = await new Promise<unknown>((resolve) => {
      void client()
        .watch('/api/v1/secrets', { timeoutSeconds: 5 }, () => {}, resolve)
        .then((controller) => setTimeout(() => controller.abort(), 20));
    });
    expect((stopped as Error).name).toBe('AbortError');
  });

  it('ends a watch that sends a line that is not JSON', async () => {
    answer = (_req, res) => res.write('not json\n');
    const failed = await new Promise<unknown>((resolve) => {
      void client().watch('/api/v1/secrets', { timeoutSeconds: 5 }, () => {}, resolve);
    });
    expect((failed as Error).message).toMatch(/an event that is not JSON/);
  });
});

describe('continueInHead', () => {
  it('finds the token in the metadata before the items, and says when more of the page is needed', () => {
    expect(
      continueInHead(
        '{"kind":"SecretList","metadata":{"resourceVersion":"9","continue":"eyJ2IjoxfQ","remainingItemCount":5},"items":[',
      ),
    ).toBe('eyJ2IjoxfQ');
    expect(
      continueInHead('{"kind":"SecretList","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"continue":"x"}}]'),
    ).toBe('');
    expect(continueInHead('{"kind":"SecretList","metadata":{"resourceVersion":"9","contin')).toBeNull();
    // Items before the metadata (not what the API server writes): nothing is taken from them.
    expect(continueInHead('{"items":[{"continue":"x"}],"metadata":{"continue":"y"}}')).toBe('');
  });
});
