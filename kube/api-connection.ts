/**
 * Where the Kubernetes API server is and how to authenticate to it, without
 * `@kubernetes/client-node`: the ingester needs two list-watches (its route Secrets and, with
 * --service, its Service's EndpointSlices), and loading client-node for them cost about 50 MiB of
 * RSS in every ingester pod (docs/benchmarks.md). The operator keeps client-node.
 *
 * Supported, as client-go reads them:
 * - in cluster: KUBERNETES_SERVICE_HOST/PORT, the ServiceAccount's CA and token files (the token is
 *   re-read every minute: projected tokens are rotated by the kubelet);
 * - a kubeconfig file: its current context's cluster (server, certificate-authority[-data],
 *   insecure-skip-tls-verify, tls-server-name) and user (token, tokenFile,
 *   client-certificate[-data] with client-key[-data], username with password). Relative file
 *   paths are relative to the kubeconfig's directory.
 * Anything else (exec plugins, auth providers, proxies) is refused at startup, naming the field,
 * rather than silently connecting without credentials.
 */
import { readFileSync } from 'node:fs';
import { Agent as HttpAgent } from '../common/node-http.js';
import { Agent as HttpsAgent } from 'node:https';
import { isIPv6 } from 'node:net';
import { dirname, isAbsolute, join } from 'node:path';
import { parsePlainYaml } from '../common/plain-yaml.js';
import { yamlPackage } from '../common/yaml-package.js';

const SERVICEACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** How long a token read from a file is used before the file is read again (client-go: one minute). */
const TOKEN_FILE_TTL_MS = 60_000;
/** Idle keep-alive connections are closed well before kube-apiserver closes them (90 s). */
const IDLE_SOCKET_MS = 30_000;

export class KubeConfigError extends Error {}

export interface ApiConnection {
  /** The API server's base URL, without a trailing slash. */
  readonly server: string;
  readonly agent: HttpAgent;
  /** The Authorization header for the next request, if the user has credentials that go in one. */
  authorization(): string | undefined;
}

interface TlsFiles {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  rejectUnauthorized: boolean;
  servername?: string;
}

/** A token read from a file, re-read once it is a minute old (so a rotated token is picked up). */
function tokenFromFile(path: string): () => string {
  let token = '';
  let readAt = -Infinity;
  return () => {
    const now = Date.now();
    if (now - readAt >= TOKEN_FILE_TTL_MS) {
      try {
        token = readFileSync(path, 'utf8').trim();
        readAt = now;
      } catch (err) {
        // Keep the last good token (a rotation replaces the file under us); fail only with none.
        if (!token) throw new KubeConfigError(`cannot read the token file ${path}: ${(err as Error).message}`);
      }
    }
    return token;
  };
}

function connection(server: string, tls: TlsFiles, authorization: () => string | undefined): ApiConnection {
  const options = { keepAlive: true, maxFreeSockets: 4, scheduling: 'lifo' as const, timeout: IDLE_SOCKET_MS };
  const agent = server.startsWith('https:')
    ? new HttpsAgent({
        ...options,
        ca: tls.ca,
        cert: tls.cert,
        key: tls.key,
        rejectUnauthorized: tls.rejectUnauthorized,
        servername: tls.servername,
      })
    : new HttpAgent(options);
  return { server: server.replace(/\/+$/, ''), agent, authorization };
}

/** Inside a pod: the Service environment variables and the ServiceAccount's files. */
export function inClusterConnection(dir = SERVICEACCOUNT_DIR): ApiConnection {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT;
  if (!host || !port)
    throw new KubeConfigError(
      'not running in a cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset): pass --kubeconfig',
    );
  const token = tokenFromFile(join(dir, 'token'));
  token(); // fail at startup, not at the first list, when the token is missing
  return connection(
    `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
    { ca: readFileSync(join(dir, 'ca.crt')), rejectUnauthorized: true },
    () => `Bearer ${token()}`,
  );
}

type Fields = Record<string, unknown>;

function named(list: unknown, name: string, what: string, path: string): Fields {
  const entry = Array.isArray(list) ? (list as Fields[]).find((e) => e?.name === name) : undefined;
  const body = entry?.[what];
  if (!body || typeof body !== 'object') throw new KubeConfigError(`${path}: no ${what} named ${JSON.stringify(name)}`);
  return body as Fields;
}

/** A field given inline (base64, `<field>-data`) or as a file (`<field>`, relative to the kubeconfig). */
function material(fields: Fields, field: string, base: string, path: string): Buffer | undefined {
  const inline = fields[`${field}-data`];
  if (typeof inline === 'string') return Buffer.from(inline, 'base64');
  const file = fields[field];
  if (typeof file !== 'string') return undefined;
  const resolved = isAbsolute(file) ? file : join(base, file);
  try {
    return readFileSync(resolved);
  } catch (err) {
    throw new KubeConfigError(`${path}: ${field} ${resolved}: ${(err as Error).message}`);
  }
}

const UNSUPPORTED_USER_FIELDS = ['exec', 'auth-provider', 'as', 'as-groups', 'as-uid', 'impersonate'];

/** A kubeconfig file's current context. */
export function kubeconfigConnection(path: string): ApiConnection {
  let doc: Fields;
  try {
    const text = readFileSync(path, 'utf8');
    // Most kubeconfigs are plain YAML: the full parser is loaded only for one that is not.
    doc = (parsePlainYaml(text)?.value ?? yamlPackage().parse(text)) as Fields;
  } catch (err) {
    throw new KubeConfigError(`cannot read the kubeconfig ${path}: ${(err as Error).message}`);
  }
  if (!doc || typeof doc !== 'object') throw new KubeConfigError(`${path}: not a kubeconfig`);
  const contextName = doc['current-context'];
  if (typeof contextName !== 'string' || !contextName) throw new KubeConfigError(`${path}: no current-context`);
  const context = named(doc.contexts, contextName, 'context', path);
  const cluster = named(doc.clusters, String(context.cluster), 'cluster', path);
  const user = typeof context.user === 'string' && context.user ? named(doc.users, context.user, 'user', path) : {};
  const base = dirname(path);
  const server = cluster.server;
  if (typeof server !== 'string' || !/^https?:\/\//.test(server))
    throw new KubeConfigError(`${path}: cluster ${String(context.cluster)} has no http(s) server`);
  if (cluster['proxy-url'] !== undefined)
    throw new KubeConfigError(`${path}: cluster.proxy-url is not supported by the ingester's client`);
  const unsupported = UNSUPPORTED_USER_FIELDS.find((f) => user[f] !== undefined);
  if (unsupported)
    throw new KubeConfigError(
      `${path}: user.${unsupported} is not supported by the ingester's client (use a token, a tokenFile or a client certificate)`,
    );
  const tls: TlsFiles = {
    ca: material(cluster, 'certificate-authority', base, path),
    cert: material(user, 'client-certificate', base, path),
    key: material(user, 'client-key', base, path),
    rejectUnauthorized: cluster['insecure-skip-tls-verify'] !== true,
    servername: typeof cluster['tls-server-name'] === 'string' ? cluster['tls-server-name'] : undefined,
  };
  if ((tls.cert === undefined) !== (tls.key === undefined))
    throw new KubeConfigError(
      `${path}: user has a client certificate without its key, or a key without its certificate`,
    );
  return connection(server, tls, userAuthorization(user, base));
}

function userAuthorization(user: Fields, base: string): () => string | undefined {
  if (typeof user.token === 'string' && user.token) {
    const header = `Bearer ${user.token}`;
    return () => header;
  }
  if (typeof user.tokenFile === 'string' && user.tokenFile) {
    const token = tokenFromFile(isAbsolute(user.tokenFile) ? user.tokenFile : join(base, user.tokenFile));
    token();
    return () => `Bearer ${token()}`;
  }
  if (typeof user.username === 'string' && typeof user.password === 'string') {
    const header = `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}`;
    return () => header;
  }
  return () => undefined;
}

/** The connection the ingester uses: the kubeconfig when given, else in-cluster (as client-node's loadFromCluster). */
export function apiConnection(kubeconfig?: string): ApiConnection {
  return kubeconfig ? kubeconfigConnection(kubeconfig) : inClusterConnection();
}
