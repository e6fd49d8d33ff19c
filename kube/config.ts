/** Loads Kubernetes client configuration: a kubeconfig file when given, else in-cluster. */
import { createHash } from 'node:crypto';
import { Agent } from 'node:https';
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';

/** Idle connections to the API server kept open for the next call (most writes come in bursts). */
const MAX_FREE_SOCKETS = 8;
/**
 * Idle connections are closed after this long: well before an API server closes them (kube-apiserver
 * keeps idle HTTP/1.1 connections for 90 s), so a call rarely picks one the server is closing.
 */
const IDLE_SOCKET_MS = 30_000;
/** How long an agent whose TLS identity was replaced keeps serving the calls that were under way on it. */
const RETIRED_AGENT_GRACE_MS = 120_000;

/**
 * client-node 1.x builds a new https.Agent for every API call (`KubeConfig.createAgent`), so each
 * call opened a connection, made a TLS handshake and built an OpenSSL context: 40% of the
 * operator's CPU when 500 integrations were applied at once, and most of the time from applying
 * one integration to its first accepted event (docs/benchmarks.md; upstream:
 * kubernetes-client/javascript#2893, where 2.0 caches its agents but still builds a dispatcher per
 * call). This keeps one keep-alive agent per distinct TLS identity instead. Anything the pooled
 * agent cannot stand for (a proxy agent) is left as the library made it.
 */
export class PooledKubeConfig extends KubeConfig {
  private pooled?: { identity: string; agent: Agent };

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    if (this.getCurrentCluster()?.proxyUrl) return;
    const made = context.getAgent();
    if (!(made instanceof Agent)) return;
    context.setAgent(this.agentFor(made.options));
  }

  /** The agent for these TLS options: the same one while they stay the same (rotated files re-read by client-node change them). */
  private agentFor(options: Agent['options']): Agent {
    const identity = tlsIdentity(options);
    if (this.pooled?.identity !== identity) {
      // Calls already under way on the old identity finish; its idle connections go later.
      const retired = this.pooled?.agent;
      if (retired) setTimeout(() => retired.destroy(), RETIRED_AGENT_GRACE_MS).unref();
      this.pooled = {
        identity,
        agent: new Agent({
          ...options,
          keepAlive: true,
          maxFreeSockets: MAX_FREE_SOCKETS,
          scheduling: 'lifo',
          timeout: IDLE_SOCKET_MS,
        }),
      };
    }
    return this.pooled.agent;
  }
}

function tlsIdentity(o: Agent['options']): string {
  const hash = createHash('sha256');
  for (const part of [o.ca, o.cert, o.key, o.pfx, o.passphrase, o.servername, o.rejectUnauthorized])
    hash.update(`${part === undefined ? '' : String(part)}\0`);
  return hash.digest('hex');
}

export function loadKubeConfig(path?: string): KubeConfig {
  const kc = new PooledKubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromCluster();
  return kc;
}

/** The HTTP status of a failed client-node call, if it was an API error. */
export function statusOf(err: unknown): number | undefined {
  const e = err as { code?: unknown; statusCode?: unknown };
  if (typeof e?.code === 'number') return e.code;
  if (typeof e?.statusCode === 'number') return e.statusCode;
  return undefined;
}

/** The API server refuses new objects in a namespace being deleted; the namespace takes ours with it. */
export function isNamespaceTerminating(err: unknown): boolean {
  const e = err as { body?: unknown; message?: unknown };
  return statusOf(err) === 403 && /NamespaceTerminating/.test(`${String(e?.body ?? '')} ${String(e?.message ?? '')}`);
}
