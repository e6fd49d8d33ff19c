/**
 * The console's Kubernetes access: every call is made as the user. Locally that is the caller's
 * kubeconfig (like `kubectl proxy`); in token mode it is the user's bearer token against the
 * cluster's API server, never the console's own ServiceAccount (which has no rights on intake's
 * resources), so RBAC decides what each user sees and may do.
 */
import { createHash } from 'node:crypto';
import {
  AuthenticationV1Api,
  AuthorizationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  setHeaderOptions,
  Watch,
} from '@kubernetes/client-node';
import { LRUCache } from 'lru-cache';
import { GROUP, VERSION } from '../../api/v1alpha1/types.js';
import { statusOf } from '../../kube/config.js';

/** The two kinds the console manages, by their plural (the URL segment the browser uses). */
export const KINDS = { webhookintegrations: 'WebhookIntegration', apikeys: 'ApiKey' } as const;
export type Plural = keyof typeof KINDS;
export const isPlural = (s: string): s is Plural => Object.hasOwn(KINDS, s);

const MERGE_PATCH = setHeaderOptions('Content-Type', 'application/merge-patch+json');

/** What an API call refused, as the API server said it: its status code and its message unchanged. */
export class KubeError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason?: string,
  ) {
    super(message);
  }

  static from(err: unknown): KubeError {
    if (err instanceof KubeError) return err;
    const status = statusOf(err);
    if (status === undefined)
      return new KubeError(502, `the Kubernetes API server could not be reached: ${String(err)}`);
    let body = (err as { body?: unknown }).body;
    if (typeof body === 'string') {
      try {
        body = JSON.parse(body);
      } catch {
        // not a Status object: its text is the message
      }
    }
    const s = body as { message?: string; reason?: string } | string | undefined;
    const message = typeof s === 'string' ? s : (s?.message ?? `HTTP ${status}`);
    return new KubeError(status, message, typeof s === 'object' ? s?.reason : undefined);
  }
}

/** One user's view of the cluster: the API clients built for their identity. */
export class UserClient {
  readonly custom: CustomObjectsApi;
  readonly core: CoreV1Api;
  readonly watch: Watch;

  constructor(readonly kc: KubeConfig) {
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.core = kc.makeApiClient(CoreV1Api);
    this.watch = new Watch(kc);
  }

  private async call<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      throw KubeError.from(err);
    }
  }

  list(namespace: string, plural: Plural) {
    return this.call(
      () =>
        this.custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural }) as Promise<{
          metadata?: { resourceVersion?: string };
          items: Array<Record<string, unknown>>;
        }>,
    );
  }

  get(namespace: string, plural: Plural, name: string) {
    return this.call(
      () =>
        this.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, name }) as Promise<
          Record<string, unknown>
        >,
    );
  }

  create(namespace: string, plural: Plural, body: object) {
    return this.call(() =>
      this.custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, body }),
    );
  }

  replace(namespace: string, plural: Plural, name: string, body: object) {
    return this.call(() =>
      this.custom.replaceNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, name, body }),
    );
  }

  patch(namespace: string, plural: Plural, name: string, body: object) {
    return this.call(() =>
      this.custom.patchNamespacedCustomObject(
        { group: GROUP, version: VERSION, namespace, plural, name, body },
        MERGE_PATCH,
      ),
    );
  }

  delete(namespace: string, plural: Plural, name: string) {
    return this.call(() =>
      this.custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, name }),
    );
  }

  secret(namespace: string, name: string) {
    return this.call(() => this.core.readNamespacedSecret({ namespace, name }));
  }

  /** The namespaces the user may list, or undefined when they may not list namespaces at all. */
  async namespaces(): Promise<string[] | undefined> {
    try {
      const list = await this.core.listNamespace();
      return list.items.map((n) => n.metadata?.name ?? '').filter(Boolean);
    } catch (err) {
      if (statusOf(err) === 403) return undefined;
      throw KubeError.from(err);
    }
  }

  private name?: Promise<string>;
  /** Who the API server said this identity is, once it has: the token is known good (until evicted). */
  confirmedName?: string;

  /** Whether userName() is waiting for the API server's answer. */
  get asking(): boolean {
    return this.name !== undefined && this.confirmedName === undefined;
  }

  /**
   * Who this identity is, asked once (whoAmI) and remembered with the client: what the console's
   * per-user bounds count by for a proxy's bearer token, which has no session to keep the name in.
   */
  userName(): Promise<string> {
    if (!this.name) {
      const asked = this.whoAmI();
      this.name = asked;
      asked.catch(() => {
        if (this.name === asked) this.name = undefined;
      });
    }
    return this.name;
  }

  /**
   * Whether the API server's authorizer lets this user do `verb` on one resource: a
   * SelfSubjectAccessReview made with the user's own identity (so RBAC, or any authorizer the
   * cluster runs, decides; the console's ServiceAccount needs no right to review others).
   */
  async can(namespace: string, verb: string, plural: Plural | 'destinations', name: string): Promise<boolean> {
    const review = await this.call(() =>
      this.kc.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SelfSubjectAccessReview',
          spec: { resourceAttributes: { group: GROUP, namespace, verb, resource: plural, name } },
        },
      }),
    );
    return review.status?.allowed === true;
  }

  /** Who the API server says this identity is (SelfSubjectReview): proves a pasted token is valid. */
  async whoAmI(): Promise<string> {
    const review = await this.call(() =>
      this.kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      }),
    );
    const name = review.status?.userInfo?.username ?? 'unknown';
    this.confirmedName = name;
    return name;
  }
}

/**
 * Where the users come from. `kubeconfig`: one identity, the caller's. `token`: the cluster of the
 * given configuration (in-cluster or a kubeconfig's current cluster) with each user's own token;
 * the configuration's own credentials are never used.
 */
export class Identities {
  private readonly byToken = new LRUCache<string, UserClient>({ max: 1000, ttl: 15 * 60_000 });
  private readonly own?: UserClient;

  constructor(
    private readonly base: KubeConfig,
    readonly mode: 'kubeconfig' | 'token',
  ) {
    if (mode === 'kubeconfig') this.own = new UserClient(base);
  }

  /** The caller's own identity (kubeconfig mode). */
  kubeconfigUser(): UserClient {
    if (!this.own) throw new Error('not in kubeconfig mode');
    return this.own;
  }

  /** A client that authenticates with exactly this bearer token and nothing else. */
  forToken(token: string): UserClient {
    const key = createHash('sha256').update(token).digest('hex');
    let client = this.byToken.get(key);
    if (!client) {
      const cluster = this.base.getCurrentCluster();
      if (!cluster) throw new Error('the Kubernetes configuration names no cluster');
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [cluster],
        users: [{ name: 'console-user', token }],
        contexts: [{ name: 'console', cluster: cluster.name, user: 'console-user' }],
        currentContext: 'console',
      });
      client = new UserClient(kc);
      this.byToken.set(key, client);
    }
    return client;
  }

  /** The namespace the kubeconfig's context names, to open first. */
  defaultNamespace(): string {
    return this.base.getContextObject(this.base.getCurrentContext())?.namespace ?? 'default';
  }
}
