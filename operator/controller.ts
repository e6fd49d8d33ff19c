/**
 * The operator's control loop: informers fill caches and enqueue keys; workers reconcile one key
 * at a time. Reconcile reads the caches, plans, writes only what differs, and patches status once.
 */
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type KubernetesObject, type V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ExpressionRunner } from '../api/mapping/engine.js';
import { ROUTE_LABEL, ROUTE_SECRET_KEY } from '../api/route.js';
import { API_VERSION, FINALIZER, GROUP, PLURALS, VERSION, type ApiKey, type IntakeResource, type WebhookIntegration } from '../api/v1alpha1/types.js';
import { isNamespaceTerminating } from '../kube/config.js';
import { Informer } from '../kube/informer.js';
import { isTransition, setReady } from './conditions.js';
import { ScryptVerifiers } from './credentials.js';
import type { OperatorMetrics } from './metrics.js';
import { credentialsSecretName, integrationNameOf, parseQueueKey, queueKey, routeSecretName } from './naming.js';
import { planApiKey, planWebhook, routeFromSecret, ROTATED_FOR_ANNOTATION, type Plan, type PlanContext } from './plan.js';
import { WorkQueue, type ReconcileResult } from '../kube/workqueue.js';
import { Writer } from './writer.js';

export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'intake-operator' };
const CREDENTIALS_LABEL = 'intake.dev/credentials';
const SOURCE_ANNOTATION = 'intake.dev/source';

export interface ControllerOptions {
  kubeConfig: KubeConfig;
  /** Where route Secrets live (the ingesters' namespace). */
  namespace: string;
  /** Namespaces to watch for resources; empty means all. */
  watchNamespaces: string[];
  publicBaseUrl: string;
  defaultMaxSeries: number;
  /** Destination names the ingesters are configured with. */
  destinations: readonly string[];
  resyncPeriodMs: number;
  workers: number;
  metrics: OperatorMetrics;
  logger: Logger;
  /** Runs tenants' mapping tests away from the controller's thread (api/mapping/worker-pool.ts). */
  mappingRunner?: ExpressionRunner;
}

export class Controller {
  private readonly queue = new WorkQueue();
  private readonly writer: Writer;
  private readonly webhooks: Array<Informer<WebhookIntegration>> = [];
  private readonly apiKeys: Array<Informer<ApiKey>> = [];
  private readonly credentialSecrets: Array<Informer<V1Secret>> = [];
  private readonly routeSecrets: Informer<V1Secret>;
  private readonly scrypt = new ScryptVerifiers();
  private resync?: NodeJS.Timeout;

  constructor(private readonly o: ControllerOptions) {
    const core = o.kubeConfig.makeApiClient(CoreV1Api);
    const custom = o.kubeConfig.makeApiClient(CustomObjectsApi);
    this.writer = new Writer(core, custom);
    const scopes = o.watchNamespaces.length > 0 ? o.watchNamespaces : [undefined];
    for (const ns of scopes) {
      this.webhooks.push(this.customInformer<WebhookIntegration>('WebhookIntegration', ns, custom));
      this.apiKeys.push(this.customInformer<ApiKey>('ApiKey', ns, custom));
      const selector = `${CREDENTIALS_LABEL}=true`;
      this.credentialSecrets.push(
        new Informer<V1Secret>({
          name: `credential-secrets${ns ? `/${ns}` : ''}`,
          kubeConfig: o.kubeConfig,
          logger: o.logger,
          labelSelector: selector,
          watchPath: ns ? `/api/v1/namespaces/${ns}/secrets` : '/api/v1/secrets',
          list: async () => {
            const l = ns ? await core.listNamespacedSecret({ namespace: ns, labelSelector: selector }) : await core.listSecretForAllNamespaces({ labelSelector: selector });
            return { items: l.items, resourceVersion: l.metadata?.resourceVersion ?? '' };
          },
          onEvent: (n, old) => this.enqueueOwnerOf(n ?? old),
        }),
      );
    }
    const routeSelector = `${ROUTE_LABEL}=true`;
    this.routeSecrets = new Informer<V1Secret>({
      name: 'route-secrets',
      kubeConfig: o.kubeConfig,
      logger: o.logger,
      labelSelector: routeSelector,
      watchPath: `/api/v1/namespaces/${o.namespace}/secrets`,
      list: async () => {
        const l = await core.listNamespacedSecret({ namespace: o.namespace, labelSelector: routeSelector });
        return { items: l.items, resourceVersion: l.metadata?.resourceVersion ?? '' };
      },
      onEvent: (n, old) => {
        const source = (n ?? old)?.metadata?.annotations?.[SOURCE_ANNOTATION];
        if (source) this.queue.add(source);
      },
    });
  }

  private customInformer<T extends IntakeResource>(kind: T['kind'], ns: string | undefined, custom: CustomObjectsApi): Informer<T> {
    const plural = PLURALS[kind];
    return new Informer<T>({
      name: `${plural}${ns ? `/${ns}` : ''}`,
      kubeConfig: this.o.kubeConfig,
      logger: this.o.logger,
      watchPath: ns ? `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${plural}` : `/apis/${GROUP}/${VERSION}/${plural}`,
      list: async () => {
        const l = (ns
          ? await custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural })
          : await custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural })) as { items: T[]; metadata?: { resourceVersion?: string } };
        // Lists omit kind and apiVersion on items; the rest of the operator relies on them.
        return { items: l.items.map((i) => ({ ...i, kind, apiVersion: API_VERSION })), resourceVersion: l.metadata?.resourceVersion ?? '' };
      },
      onEvent: (n, old) => this.onResourceEvent(kind, n, old),
    });
  }

  /** Enqueue only for changes that matter: skips our own status writes (generation unchanged). */
  private onResourceEvent(kind: IntakeResource['kind'], n: IntakeResource | undefined, old: IntakeResource | undefined): void {
    const obj = (n ?? old) as IntakeResource;
    if (n && old && !specOrMetaChanged(n, old)) return;
    this.queue.add(queueKey(kind, obj.metadata.namespace as string, obj.metadata.name as string));
    if (kind !== 'WebhookIntegration') return;
    // A change to one integration can free or take a name another one wants.
    const names = new Set([n, old].filter(Boolean).map((o) => integrationNameOf(o as WebhookIntegration)));
    for (const wi of this.allWebhooks()) {
      if (names.has(integrationNameOf(wi)) && wi.metadata.uid !== obj.metadata.uid) this.queue.add(queueKey('WebhookIntegration', wi.metadata.namespace as string, wi.metadata.name as string));
    }
  }

  private enqueueOwnerOf(secret: V1Secret | undefined): void {
    const owner = secret?.metadata?.ownerReferences?.find((r) => r.controller && r.apiVersion === API_VERSION);
    if (owner && (owner.kind === 'WebhookIntegration' || owner.kind === 'ApiKey')) {
      this.queue.add(queueKey(owner.kind, secret?.metadata?.namespace as string, owner.name));
    }
  }

  private allWebhooks(): WebhookIntegration[] {
    return this.webhooks.flatMap((i) => i.list());
  }

  private informers(): Array<Informer<KubernetesObject>> {
    return [...this.webhooks, ...this.apiKeys, ...this.credentialSecrets, this.routeSecrets] as Array<Informer<KubernetesObject>>;
  }

  /** Starts informers, waits for every cache, then runs the workers. */
  async run(): Promise<void> {
    for (const informer of this.informers()) informer.start();
    await Promise.all(this.informers().map((i) => i.waitForSync()));
    this.o.logger.info('caches synced; reconciling');
    this.enqueueAll();
    this.resync = setInterval(() => this.enqueueAll(), this.o.resyncPeriodMs);
    await this.queue.run(this.o.workers, (key) => this.reconcileTimed(key), (key, err) => {
      this.o.metrics.reconcileErrors.inc({ kind: parseQueueKey(key).kind });
      this.o.logger.warn({ key, err: { message: (err as Error).message, code: (err as { code?: number }).code } }, 'reconcile failed; backing off');
    });
  }

  get synced(): boolean {
    return this.informers().every((i) => i.hasSynced);
  }

  stop(): void {
    if (this.resync) clearInterval(this.resync);
    this.queue.shutdown();
    for (const informer of this.informers()) informer.stop();
  }

  private enqueueAll(): void {
    for (const wi of this.allWebhooks()) this.queue.add(queueKey('WebhookIntegration', wi.metadata.namespace as string, wi.metadata.name as string));
    for (const ak of this.apiKeys.flatMap((i) => i.list())) this.queue.add(queueKey('ApiKey', ak.metadata.namespace as string, ak.metadata.name as string));
    // Route Secrets whose resource is gone (deleted while the operator was down, finalizer forced off).
    for (const secret of this.routeSecrets.list()) {
      const source = secret.metadata?.annotations?.[SOURCE_ANNOTATION];
      if (source) this.queue.add(source);
    }
  }

  private async reconcileTimed(key: string): Promise<ReconcileResult> {
    const kind = parseQueueKey(key).kind;
    const end = this.o.metrics.reconcileDuration.startTimer({ kind });
    try {
      const result = await this.reconcile(key);
      this.o.metrics.reconciles.inc({ kind, result: 'success' });
      return result;
    } catch (err) {
      if (isNamespaceTerminating(err)) {
        // Nothing to repair: the namespace controller is deleting the resource and its Secrets.
        this.o.logger.debug({ key }, 'namespace terminating; not recreating its objects');
        this.o.metrics.reconciles.inc({ kind, result: 'success' });
        return undefined;
      }
      this.o.metrics.reconciles.inc({ kind, result: 'error' });
      throw err;
    } finally {
      end();
    }
  }

  private lookup(kind: IntakeResource['kind'], namespace: string, name: string): IntakeResource | undefined {
    const informers = (kind === 'WebhookIntegration' ? this.webhooks : this.apiKeys) as Array<Informer<IntakeResource>>;
    for (const informer of informers) {
      const found = informer.get(`${namespace}/${name}`);
      if (found) return { ...found, kind, apiVersion: API_VERSION } as IntakeResource;
    }
    return undefined;
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const { kind, namespace, name } = parseQueueKey(key);
    const routeName = routeSecretName(kind, namespace, name);
    let obj = this.lookup(kind, namespace, name);
    if (!obj) {
      // Gone (finalizer already handled, or removed by force): make sure no route outlives it.
      if (this.routeSecrets.get(`${this.o.namespace}/${routeName}`)) await this.writer.deleteSecret(this.o.namespace, routeName);
      return;
    }
    const finalizers = obj.metadata.finalizers ?? [];
    if (obj.metadata.deletionTimestamp) {
      if (!finalizers.includes(FINALIZER)) return;
      await this.writer.deleteSecret(this.o.namespace, routeName);
      await this.writer.setFinalizers(obj, finalizers.filter((f) => f !== FINALIZER));
      return;
    }
    if (!finalizers.includes(FINALIZER)) obj = { ...(await this.writer.setFinalizers(obj, [...finalizers, FINALIZER])), kind, apiVersion: API_VERSION } as IntakeResource;

    const existingRouteSecret = this.routeSecrets.get(`${this.o.namespace}/${routeName}`);
    const ctx: PlanContext = {
      publicBaseUrl: this.o.publicBaseUrl,
      defaultMaxSeries: this.o.defaultMaxSeries,
      now: new Date(),
      webhooks: this.allWebhooks(),
      existingCredentials: this.credentialSecrets.map((i) => i.get(`${namespace}/${credentialsSecretName(obj as IntakeResource)}`)).find(Boolean),
      existingRoute: routeFromSecret(existingRouteSecret),
      readSecret: (ns, n) => this.writer.readSecret(ns, n),
      scrypt: this.scrypt,
      destinations: this.o.destinations,
      ...(this.o.mappingRunner ? { mappingRunner: this.o.mappingRunner } : {}),
    };
    const plan = obj.kind === 'WebhookIntegration' ? await planWebhook(obj, ctx) : await planApiKey(obj, ctx);
    await this.applyCredentials(obj, plan, ctx.existingCredentials);
    await this.applyRoute(obj, plan, routeName, existingRouteSecret);
    await this.applyStatus(obj, plan, ctx.now);
    for (const notice of plan.notices) await this.writer.recordEvent(obj, notice.type, notice.reason, notice.message);
    return plan.requeueAfterMs !== undefined ? { requeueAfterMs: plan.requeueAfterMs } : undefined;
  }

  private async applyCredentials(obj: IntakeResource, plan: Plan, existing: V1Secret | undefined): Promise<void> {
    if (!plan.credentials) return;
    const desired: V1Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: plan.credentials.name,
        namespace: obj.metadata.namespace,
        labels: { ...MANAGED_BY, [CREDENTIALS_LABEL]: 'true' },
        annotations: { [ROTATED_FOR_ANNOTATION]: plan.credentials.rotatedFor },
        ownerReferences: [{ apiVersion: API_VERSION, kind: obj.kind, name: obj.metadata.name as string, uid: obj.metadata.uid as string, controller: true, blockOwnerDeletion: true }],
      },
      data: Object.fromEntries(Object.entries(plan.credentials.data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
    };
    await this.writer.applySecret(desired, existing);
  }

  private async applyRoute(obj: IntakeResource, plan: Plan, routeName: string, existing: V1Secret | undefined): Promise<void> {
    if (!plan.route) {
      if (existing) await this.writer.deleteSecret(this.o.namespace, routeName);
      return;
    }
    const desired: V1Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: routeName,
        namespace: this.o.namespace,
        labels: { ...MANAGED_BY, [ROUTE_LABEL]: 'true' },
        annotations: { [SOURCE_ANNOTATION]: queueKey(obj.kind, obj.metadata.namespace as string, obj.metadata.name as string) },
      },
      data: { [ROUTE_SECRET_KEY]: Buffer.from(JSON.stringify(plan.route)).toString('base64') },
    };
    await this.writer.applySecret(desired, existing);
  }

  private async applyStatus(obj: IntakeResource, plan: Plan, now: Date): Promise<void> {
    const previous = obj.status?.conditions;
    const status = { ...plan.status, observedGeneration: obj.metadata.generation, conditions: setReady(previous, plan.ready, obj.metadata.generation, now) };
    if (JSON.stringify(normaliseStatus(obj.status)) !== JSON.stringify(normaliseStatus(status))) {
      // Merge patch: fields no longer set (url after a conflict) must be removed explicitly.
      const cleared = Object.fromEntries(['integrationName', 'url', 'credentialsSecret', 'username'].filter((k) => !(k in status) && obj.status && k in obj.status).map((k) => [k, null]));
      await this.writer.patchStatus(obj, { ...cleared, ...status });
    }
    if (isTransition(previous, plan.ready)) {
      await this.writer.recordEvent(obj, plan.ready.status === 'True' ? 'Normal' : 'Warning', plan.ready.reason, plan.ready.message);
    }
  }
}

function normaliseStatus(status: object | undefined): object {
  const s = { ...(status ?? {}) } as Record<string, unknown>;
  return Object.fromEntries(Object.keys(s).sort().map((k) => [k, s[k]]));
}

function specOrMetaChanged(a: IntakeResource, b: IntakeResource): boolean {
  const m = (o: IntakeResource) =>
    JSON.stringify([o.metadata.generation, o.metadata.labels ?? {}, o.metadata.annotations ?? {}, o.metadata.finalizers ?? [], o.metadata.deletionTimestamp ?? null]);
  return m(a) !== m(b);
}
