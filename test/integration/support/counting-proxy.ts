/**
 * A counting proxy in front of the test API server: a process given its kubeconfig talks plain
 * HTTP on loopback to this proxy, which forwards every request (watches included, streamed) to
 * the real API server over TLS (plain HTTP needs client-node's insecure-skip-tls-verify; the hop is loopback) and records each write (any method but GET, HEAD and OPTIONS):
 * method, path, the created object's name for a POST, and the answer's status. So a test counts
 * exactly the API writes one client made, through the real API server.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubeClients } from './cluster.js';

export interface RecordedWrite {
  method: string;
  /** The request path without its query. */
  path: string;
  /** For a POST: the body's metadata.name, or for an Event its involvedObject's name. */
  createdName?: string;
  status: number;
  /** The request's body, as text (what a failing test shows). */
  body: string;
}

export interface CountingProxy {
  /** A kubeconfig whose server is this proxy (the test cluster's admin token). */
  kubeconfig: string;
  writes: () => readonly RecordedWrite[];
  /** Forgets what was recorded so far. */
  reset: () => void;
  /**
   * Holds back every chunk of the watches whose path contains `pathPart` (opened from now on) by
   * `delayMs`, in order: the client sees those changes late, as a slow watch would show them.
   */
  delayWatches: (pathPart: string, delayMs: number) => void;
  close: () => Promise<void>;
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

export async function startCountingProxy(): Promise<CountingProxy> {
  const { kc } = kubeClients();
  const cluster = kc.getCurrentCluster();
  const token = kc.getCurrentUser()?.token;
  if (!cluster || !token) throw new Error('the test kubeconfig has no cluster or no token');
  const target = new URL(cluster.server);
  const ca = Buffer.from(cluster.caData ?? '', 'base64');
  let writes: RecordedWrite[] = [];
  let watchDelay: { pathPart: string; delayMs: number } | undefined;

  const forward = (req: IncomingMessage, res: ServerResponse): void => {
    const isWrite = !READS.has(req.method ?? 'GET');
    const chunks: Buffer[] = [];
    const upstream = httpsRequest(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        // Clients send no bearer token over plain HTTP: the proxy adds the test cluster's own.
        headers: { authorization: `Bearer ${token}`, ...req.headers, host: target.host },
        ca,
      },
      (answer) => {
        if (isWrite) {
          const path = (req.url ?? '').split('?')[0] as string;
          const body = Buffer.concat(chunks).toString();
          const write: RecordedWrite = { method: req.method as string, path, status: answer.statusCode ?? 0, body };
          if (req.method === 'POST') {
            try {
              const created = JSON.parse(body) as {
                metadata?: { name?: string };
                involvedObject?: { name?: string };
              };
              const name = created.involvedObject?.name ?? created.metadata?.name;
              if (name) write.createdName = name;
            } catch {
              // Not JSON: counted without a name.
            }
          }
          writes.push(write);
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        const url = req.url ?? '';
        const delay =
          watchDelay && url.includes('watch=true') && url.includes(watchDelay.pathPart) ? watchDelay : undefined;
        if (!delay) {
          answer.pipe(res);
          return;
        }
        answer.on('data', (chunk: Buffer) => setTimeout(() => res.write(chunk), delay.delayMs));
        answer.on('end', () => setTimeout(() => res.end(), delay.delayMs));
      },
    );
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(String(err));
    });
    req.on('data', (chunk: Buffer) => {
      if (isWrite) chunks.push(chunk);
      upstream.write(chunk);
    });
    req.on('end', () => upstream.end());
    // A client that goes (a watch it stopped) takes its upstream request with it.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
  };

  const server = createServer(forward);
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  const { port } = server.address() as { port: number };
  const kubeconfig = join(mkdtempSync(join(tmpdir(), 'intake-proxy-')), 'kubeconfig');
  writeFileSync(
    kubeconfig,
    `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: "${token}"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`,
  );
  return {
    kubeconfig,
    writes: () => writes,
    reset: () => {
      writes = [];
    },
    delayWatches: (pathPart, delayMs) => {
      watchDelay = { pathPart, delayMs };
    },
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
