/**
 * The operator's control loop: informers fill caches and enqueue keys; workers reconcile one key
 * at a time. Reconcile reads the caches, plans, writes only what differs, and patches status once.
 */
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  type V1Secret,
  Watch,
} from '@kubernetes/client-node';
import { stringify as stableStringify } from 'safe-stable-stringify';
import type { Logger } from 'pino';
import type { ExpressionRunner } from '../api/mapping/engine.js';
import { ROUTE_LABEL, ROUTE_SECRET_KEY } from '../api/route.js';
import type { TenantLimitDefaults } from '../api/limits.js';
import {
  API_VERSION,
  GROUP,
  PLURALS,
  VERSION,
  type ApiKey,
  type Destination,
  type IntakeQuota,
  type IntakeResource,
  type WebhookIntegration,
} from '../api/v1alpha1/types.js';
import { isNamespaceTerminating, statusOf } from '../kube/config.js';
import { Informer } from '../kube/informer.js';
import { isTransition, setCondition, setReady } from './conditions.js';
import { namespaceLimits, quotaUsage, type NamespaceEffectiveLimits } from './limits.js';
import { ScryptVerifiers } from './credentials.js';
import type { OperatorMetrics } from './metrics.js';
import { NameClaims } from './name-claims.js';
import { OwnWrites } from './own-writes.js';
import { WrittenStatus } from './written-status.js';
import { DESTINATION_LABEL, DESTINATION_SECRET_KEY } from '../api/destination-document.js';
import { planDestination } from './destination-plan.js';
import { keptResource, keptSecret, pagedList, type ListPage } from './cached.js';
import {
  credentialsSecretName,
  destinationSecretName,
  integrationNameOf,
  MANAGED_BY,
  parseQueueKey,
  queueKey,
  routeSecretName,
} from './naming.js';
import {
  planApiKey,
  planWebhook,
  routeFromSecret,
  ROTATED_FOR_ANNOTATION,
  type Plan,
  type PlanContext,
} from './plan.js';
import { WorkQueue, type ReconcileResult } from '../kube/workqueue.js';
import { Writer } from './writer.js';
import { ActivitySync, type ActivitySettings } from './activity/sync.js';
import { receivingOf, type Receiving } from './receiving.js';
import { DeliverySync } from './delivery/sync.js';
import { circuitCondition, runtimePauseCondition } from './delivery/merge.js';
import {
  destinationsNaming,
  integrationsNaming,
  keptWatchedSecret,
  WATCH_SELECTOR,
} from './delivery/watched-secrets.js';
import type { ConditionState } from './conditions.js';

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
  /**
   * A namespace's own Destinations published, the oldest first: each costs every ingester a
   * dispatcher and a delivery loop (or two bus consumers), so one team cannot make thousands.
   */
  maxDestinationsPerNamespace?: number;
  /** Cluster defaults of the per-tenant limits (--default-limits), under any IntakeQuota. */
  limitDefaults: TenantLimitDefaults;
  resyncPeriodMs: number;
  workers: number;
  metrics: OperatorMetrics;
  logger: Logger;
  /** Runs tenants' mapping tests away from the controller's thread (api/mapping/worker-pool.ts). */
  mappingRunner?: ExpressionRunner;
  /** Collect the ingesters' activity into status.activity (operator/activity/); absent: off. */
  activity?: ActivitySettings;
}

export class Controller {
  private readonly queue = new WorkQueue();
  private readonly writer: Writer;
  private readonly webhooks: Array<Informer<WebhookIntegration>> = [];
  private readonly apiKeys: Array<Informer<ApiKey>> = [];
  private readonly quotas: Array<Informer<IntakeQuota>> = [];
  private readonly teamDestinations: Array<Informer<Destination>> = [];
  /** The documents of team Destinations published for the ingesters (destination-reconcile.ts). */
  private readonly destinationSecrets: Informer<V1Secret>;
  private readonly credentialSecrets: Array<Informer<V1Secret>> = [];
  /** Teams' Secrets labelled intake.dev/watch=true (metadata only): a change reconciles the resources naming them. */
  private readonly watchedSecrets: Array<Informer<V1Secret>> = [];
  private readonly routeSecrets: Informer<V1Secret>;
  private readonly scrypt = new ScryptVerifiers();
  private readonly nameClaims = new NameClaims();
  private readonly ownWrites = new OwnWrites();
  private readonly writtenStatus = new WrittenStatus();
  private resync?: NodeJS.Timeout;
  private readonly activity?: ActivitySync;
  /** The ingesters' delivery per team Destination, merged in the activity loop's rounds. */
  private readonly delivery?: DeliverySync;
  private readonly watcher: Watch;

  constructor(private readonly o: ControllerOptions) {
    this.watcher = new Watch(o.kubeConfig);
    const core = o.kubeConfig.makeApiClient(CoreV1Api);
    const custom = o.kubeConfig.makeApiClient(CustomObjectsApi);
    this.writer = new Writer(core, custom);
    if (o.activity)
      this.delivery = new DeliverySync({
        logger: o.logger,
        metrics: o.metrics,
        destinations: () => this.allDestinations(),
        write: (d, delivery) => this.writer.replaceStatusField(d, 'delivery', delivery),
        afterMerge: () => this.enqueueDeliveryConditionChanges(),
        retainMs: Math.max(5 * o.activity.intervalMs, 60_000),
      });
    if (o.activity)
      this.activity = new ActivitySync({
        ...(this.delivery ? { alongside: this.delivery } : {}),
        ...o.activity,
        kubeConfig: o.kubeConfig,
        namespace: o.namespace,
        logger: o.logger,
        metrics: o.metrics,
        resources: () => [
          ...this.allWebhooks().map(
            (wi) => ({ ...wi, kind: 'WebhookIntegration', apiVersion: API_VERSION }) as IntakeResource,
          ),
          ...this.allApiKeys().map((ak) => ({ ...ak, kind: 'ApiKey', apiVersion: API_VERSION }) as IntakeResource),
        ],
        write: (obj, activity) => this.writer.replaceActivity(obj, activity),
        afterMerge: () => this.enqueueReceivingChanges(),
      });
    const scopes = o.watchNamespaces.length > 0 ? o.watchNamespaces : [undefined];
    for (const ns of scopes) {
      this.webhooks.push(this.customInformer<WebhookIntegration>('WebhookIntegration', ns, custom));
      this.apiKeys.push(this.customInformer<ApiKey>('ApiKey', ns, custom));
      this.quotas.push(this.customInformer<IntakeQuota>('IntakeQuota', ns, custom));
      this.teamDestinations.push(this.customInformer<Destination>('Destination', ns, custom));
      const selector = `${CREDENTIALS_LABEL}=true`;
      this.credentialSecrets.push(
        new Informer<V1Secret>({
          name: `credential-secrets${ns ? `/${ns}` : ''}`,
          watcher: this.watcher,
          logger: o.logger,
          labelSelector: selector,
          watchPath: ns ? `/api/v1/namespaces/${ns}/secrets` : '/api/v1/secrets',
          list: () =>
            pagedList(
              (limit, token) =>
                ns
                  ? core.listNamespacedSecret({ namespace: ns, labelSelector: selector, limit, _continue: token })
                  : core.listSecretForAllNamespaces({ labelSelector: selector, limit, _continue: token }),
              keptSecret,
            ),
          keep: keptSecret,
          onEvent: (n, old) => {
            if (!n) this.ownWrites.forget('Secret', old);
            else if (this.ownWrites.isOwn('Secret', n)) return;
            this.enqueueOwnerOf(n ?? old);
          },
        }),
      );
      this.watchedSecrets.push(
        new Informer<V1Secret>({
          name: `watched-secrets${ns ? `/${ns}` : ''}`,
          watcher: this.watcher,
          logger: o.logger,
          labelSelector: WATCH_SELECTOR,
          watchPath: ns ? `/api/v1/namespaces/${ns}/secrets` : '/api/v1/secrets',
          list: () =>
            pagedList(
              (limit, token) =>
                ns
                  ? core.listNamespacedSecret({ namespace: ns, labelSelector: WATCH_SELECTOR, limit, _continue: token })
                  : core.listSecretForAllNamespaces({ labelSelector: WATCH_SELECTOR, limit, _continue: token }),
              keptWatchedSecret,
            ),
          keep: keptWatchedSecret,
          onEvent: (n, old) => {
            const m = (n ?? old)?.metadata;
            if (!m?.namespace || !m.name) return;
            if (n && old && n.metadata?.resourceVersion === old.metadata?.resourceVersion) return;
            for (const d of destinationsNaming(this.allDestinations(), m.namespace, m.name))
              this.queue.add(queueKey('Destination', m.namespace, d.metadata.name as string));
            for (const wi of integrationsNaming(this.allWebhooks(), m.namespace, m.name))
              this.queue.add(queueKey('WebhookIntegration', m.namespace, wi.metadata.name as string));
          },
        }),
      );
    }
    const routeSelector = `${ROUTE_LABEL}=true`;
    this.routeSecrets = new Informer<V1Secret>({
      name: 'route-secrets',
      watcher: this.watcher,
      logger: o.logger,
      labelSelector: routeSelector,
      watchPath: `/api/v1/namespaces/${o.namespace}/secrets`,
      list: () =>
        pagedList(
          (limit, token) =>
            core.listNamespacedSecret({
              namespace: o.namespace,
              labelSelector: routeSelector,
              limit,
              _continue: token,
            }),
          keptSecret,
        ),
      keep: keptSecret,
      onEvent: (n, old) => {
        const source = (n ?? old)?.metadata?.annotations?.[SOURCE_ANNOTATION];
        if (!n) this.ownWrites.forget('Secret', old);
        // Our own write queues nothing, unless its resource went meanwhile (deleted while the
        // route was being written): then the route must go too.
        else if (this.ownWrites.isOwn('Secret', n) && source && this.isLive(source)) return;
        if (source) this.queue.add(source);
      },
    });
    const destinationSelector = `${DESTINATION_LABEL}=true`;
    this.destinationSecrets = new Informer<V1Secret>({
      name: 'destination-secrets',
      watcher: this.watcher,
      logger: o.logger,
      labelSelector: destinationSelector,
      watchPath: `/api/v1/namespaces/${o.namespace}/secrets`,
      list: async () => {
        const l = await core.listNamespacedSecret({ namespace: o.namespace, labelSelector: destinationSelector });
        return { items: l.items, resourceVersion: l.metadata?.resourceVersion ?? '' };
      },
      onEvent: (n, old) => {
        const source = (n ?? old)?.metadata?.annotations?.[SOURCE_ANNOTATION];
        // Published or withdrawn: the integrations naming it become (not) Ready.
        if (source && (!n || !old)) this.enqueueIntegrationsOf(parseQueueKey(source).namespace);
        if (!n) this.ownWrites.forget('Secret', old);
        else if (this.ownWrites.isOwn('Secret', n) && source && this.isLive(source)) return;
        if (source) this.queue.add(source);
      },
    });
  }

  private enqueueIntegrationsOf(namespace: string): void {
    for (const wi of this.allWebhooks())
      if (wi.metadata.namespace === namespace)
        this.queue.add(queueKey('WebhookIntegration', namespace, wi.metadata.name as string));
  }

  private customInformer<T extends IntakeResource | IntakeQuota | Destination>(
    kind: T['kind'],
    ns: string | undefined,
    custom: CustomObjectsApi,
  ): Informer<T> {
    const plural = PLURALS[kind];
    return new Informer<T>({
      name: `${plural}${ns ? `/${ns}` : ''}`,
      watcher: this.watcher,
      logger: this.o.logger,
      watchPath: ns ? `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${plural}` : `/apis/${GROUP}/${VERSION}/${plural}`,
      list: async () => {
        try {
          // Lists omit kind and apiVersion on items; the rest of the operator relies on them.
          return await pagedList(
            async (limit, token) =>
              (ns
                ? await custom.listNamespacedCustomObject({
                    group: GROUP,
                    version: VERSION,
                    namespace: ns,
                    plural,
                    limit,
                    _continue: token,
                  })
                : await custom.listClusterCustomObject({
                    group: GROUP,
                    version: VERSION,
                    plural,
                    limit,
                    _continue: token,
                  })) as ListPage<T>,
            (i) => keptResource({ ...i, kind, apiVersion: API_VERSION }),
          );
        } catch (err) {
          // An operator upgraded before its CRDs: without the IntakeQuota CRD there are no quotas,
          // and integrations and keys must still be served (with the cluster defaults); without
          // the Destination CRD there are no team destinations.
          if ((kind !== 'IntakeQuota' && kind !== 'Destination') || statusOf(err) !== 404) throw err;
          this.o.logger.warn(
            { kind },
            `the ${kind} CRD is not installed (kubectl apply -f crds/): ${kind === 'IntakeQuota' ? 'cluster default limits apply everywhere' : 'teams have no destinations of their own'}`,
          );
          return { items: [], resourceVersion: '' };
        }
      },
      keep: keptResource,
      onEvent: (n, old) =>
        kind === 'IntakeQuota'
          ? this.onQuotaEvent(n as IntakeQuota | undefined, old as IntakeQuota | undefined)
          : kind === 'Destination'
            ? this.onDestinationEvent(n as Destination | undefined, old as Destination | undefined)
            : this.onResourceEvent(kind, n as IntakeResource | undefined, old as IntakeResource | undefined),
    });
  }

  /** A quota change re-plans every integration and key of its namespace (their limits), and the quota's own status. */
  private onQuotaEvent(n: IntakeQuota | undefined, old: IntakeQuota | undefined): void {
    const q = (n ?? old) as IntakeQuota;
    if (n && old && n.metadata.generation === old.metadata.generation && !n.metadata.deletionTimestamp) return;
    const ns = q.metadata.namespace as string;
    for (const quota of this.quotasIn(ns)) this.queue.add(queueKey('IntakeQuota', ns, quota.metadata.name as string));
    if (n) this.queue.add(queueKey('IntakeQuota', ns, n.metadata.name as string));
    for (const wi of this.allWebhooks())
      if (wi.metadata.namespace === ns) this.queue.add(queueKey('WebhookIntegration', ns, wi.metadata.name as string));
    for (const ak of this.allApiKeys())
      if (ak.metadata.namespace === ns) this.queue.add(queueKey('ApiKey', ns, ak.metadata.name as string));
  }

  /**
   * A Destination's spec changed: it is reconciled; and when it came or went (or is being
   * deleted), the namespace's integrations are too, since the names they use resolve differently.
   */
  private onDestinationEvent(n: Destination | undefined, old: Destination | undefined): void {
    const d = (n ?? old) as Destination;
    const ns = d.metadata.namespace as string;
    const key = queueKey('Destination', ns, d.metadata.name as string);
    if (!n) this.writtenStatus.forget(key);
    else this.writtenStatus.seen(key, n.metadata.resourceVersion);
    if (n && old && n.metadata.generation === old.metadata.generation && !n.metadata.deletionTimestamp) return;
    this.queue.add(key);
    if (n && old && !!n.metadata.deletionTimestamp === !!old.metadata.deletionTimestamp) return;
    for (const wi of this.allWebhooks())
      if (wi.metadata.namespace === ns) this.queue.add(queueKey('WebhookIntegration', ns, wi.metadata.name as string));
    // One going may let one beyond the namespace's cap be published.
    for (const other of this.teamDestinations.flatMap((i) => i.list()))
      if (other.metadata.namespace === ns) this.queue.add(queueKey('Destination', ns, other.metadata.name as string));
  }

  /** The names of the namespace's Destinations that are not being deleted. */
  private teamDestinationsIn(namespace: string): string[] {
    return this.teamDestinations
      .flatMap((i) => i.list())
      .filter((d) => d.metadata.namespace === namespace && !d.metadata.deletionTimestamp)
      .map((d) => d.metadata.name as string);
  }

  /** The names of the namespace's Destinations whose document is published to the ingesters. */
  private publishedDestinationsIn(namespace: string): string[] {
    return this.destinationSecrets.list().flatMap((s) => {
      const source = s.metadata?.annotations?.[SOURCE_ANNOTATION];
      if (!source) return [];
      const key = parseQueueKey(source);
      return key.kind === 'Destination' && key.namespace === namespace ? [key.name] : [];
    });
  }

  private quotasIn(namespace: string): IntakeQuota[] {
    return this.quotas
      .flatMap((i) => i.list())
      .filter((q) => q.metadata.namespace === namespace && !q.metadata.deletionTimestamp);
  }

  private allApiKeys(): ApiKey[] {
    return this.apiKeys.flatMap((i) => i.list());
  }

  private limitsIn(namespace: string): NamespaceEffectiveLimits {
    return namespaceLimits(this.o.limitDefaults, this.quotasIn(namespace));
  }

  /** Enqueue only for changes that matter: skips our own status writes (generation unchanged). */
  private onResourceEvent(
    kind: IntakeResource['kind'],
    n: IntakeResource | undefined,
    old: IntakeResource | undefined,
  ): void {
    const obj = (n ?? old) as IntakeResource;
    if (kind === 'WebhookIntegration')
      this.nameClaims.update(n as WebhookIntegration | undefined, old as WebhookIntegration | undefined);
    const key = queueKey(kind, obj.metadata.namespace as string, obj.metadata.name as string);
    if (!n) {
      this.ownWrites.forget(kind, old);
      this.writtenStatus.forget(key);
    } else this.writtenStatus.seen(key, n.metadata.resourceVersion);
    if (n && old && (!specOrMetaChanged(n, old) || this.ownWrites.isOwn(kind, n))) return;
    this.queue.add(key);
    // The namespace's quotas report what its integrations and keys were given.
    for (const quota of this.quotasIn(obj.metadata.namespace as string))
      this.queue.add(queueKey('IntakeQuota', obj.metadata.namespace as string, quota.metadata.name as string));
    if (kind !== 'WebhookIntegration') return;
    // A change to one integration can free or take a name another one wants.
    const names = new Set([n, old].filter(Boolean).map((o) => integrationNameOf(o as WebhookIntegration)));
    for (const name of names)
      for (const wi of this.nameClaims.claimants(name))
        if (wi.metadata.uid !== obj.metadata.uid)
          this.queue.add(queueKey('WebhookIntegration', wi.metadata.namespace as string, wi.metadata.name as string));
  }

  /** Whether the resource a queue key names exists and is not being deleted. */
  private isLive(key: string): boolean {
    const { kind, namespace, name } = parseQueueKey(key);
    if (kind === 'IntakeQuota') return true;
    if (kind === 'Destination') {
      const d = this.teamDestinations.map((i) => i.get(`${namespace}/${name}`)).find(Boolean);
      return d !== undefined && !d.metadata.deletionTimestamp;
    }
    const obj = this.lookup(kind, namespace, name);
    return obj !== undefined && !obj.metadata.deletionTimestamp;
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

  private allDestinations(): Destination[] {
    return this.teamDestinations.flatMap((i) =>
      i.list().map((d) => ({ ...d, kind: 'Destination', apiVersion: API_VERSION }) as Destination),
    );
  }

  private informers(): Array<Informer<KubernetesObject>> {
    return [
      ...this.webhooks,
      ...this.apiKeys,
      ...this.quotas,
      ...this.teamDestinations,
      ...this.credentialSecrets,
      ...this.watchedSecrets,
      this.routeSecrets,
      this.destinationSecrets,
    ] as Array<Informer<KubernetesObject>>;
  }

  /** Starts informers, waits for every cache, then runs the workers. */
  async run(): Promise<void> {
    for (const informer of this.informers()) informer.start();
    await Promise.all(this.informers().map((i) => i.waitForSync()));
    this.o.logger.info('caches synced; reconciling');
    this.enqueueAll();
    this.resync = setInterval(() => this.enqueueAll(), this.o.resyncPeriodMs);
    this.activity?.start();
    await this.queue.run(
      this.o.workers,
      (key) => this.reconcileTimed(key),
      (key, err) => {
        this.o.metrics.reconcileErrors.inc({ kind: parseQueueKey(key).kind });
        this.o.logger.warn(
          { key, err: { message: (err as Error).message, code: (err as { code?: number }).code } },
          'reconcile failed; backing off',
        );
      },
    );
  }

  get synced(): boolean {
    return this.informers().every((i) => i.hasSynced);
  }

  stop(): void {
    if (this.resync) clearInterval(this.resync);
    this.activity?.stop();
    this.queue.shutdown();
    for (const informer of this.informers()) informer.stop();
  }

  private enqueueAll(): void {
    for (const wi of this.allWebhooks())
      this.queue.add(queueKey('WebhookIntegration', wi.metadata.namespace as string, wi.metadata.name as string));
    for (const ak of this.allApiKeys())
      this.queue.add(queueKey('ApiKey', ak.metadata.namespace as string, ak.metadata.name as string));
    for (const q of this.quotas.flatMap((i) => i.list()))
      this.queue.add(queueKey('IntakeQuota', q.metadata.namespace as string, q.metadata.name as string));
    for (const d of this.teamDestinations.flatMap((i) => i.list()))
      this.queue.add(queueKey('Destination', d.metadata.namespace as string, d.metadata.name as string));
    // Route and destination Secrets whose resource is gone (deleted while the operator was down, or a deletion missed).
    for (const secret of [...this.routeSecrets.list(), ...this.destinationSecrets.list()]) {
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
    if (kind === 'IntakeQuota') return this.reconcileQuota(namespace, name);
    if (kind === 'Destination') return this.reconcileDestination(namespace, name);
    const routeName = routeSecretName(kind, namespace, name);
    const obj = this.lookup(kind, namespace, name);
    if (!obj) {
      if (kind === 'WebhookIntegration') this.o.metrics.integrationSilent.remove({ namespace, name });
      // Gone: no route outlives it. A route written just before the deletion and not in the
      // cache yet queues this key again when its watch event comes (see the route informer).
      if (this.routeSecrets.get(`${this.o.namespace}/${routeName}`))
        await this.writer.deleteSecret(this.o.namespace, routeName);
      return;
    }
    if (obj.metadata.deletionTimestamp) {
      // No finalizer of ours (one write less each resource): cleanup is level-based, from the
      // deletion's watch event, and at start and every resync from each route whose resource is
      // gone. One still waiting for another's finalizer has no route meanwhile.
      if (this.routeSecrets.get(`${this.o.namespace}/${routeName}`))
        await this.writer.deleteSecret(this.o.namespace, routeName);
      return;
    }

    const existingRouteSecret = this.routeSecrets.get(`${this.o.namespace}/${routeName}`);
    const ctx: PlanContext = {
      publicBaseUrl: this.o.publicBaseUrl,
      defaultMaxSeries: this.o.defaultMaxSeries,
      now: new Date(),
      webhooks: obj.kind === 'WebhookIntegration' ? this.nameClaims.claimants(integrationNameOf(obj)) : [],
      existingCredentials: this.credentialSecrets
        .map((i) => i.get(`${namespace}/${credentialsSecretName(obj as IntakeResource)}`))
        .find(Boolean),
      existingRoute: routeFromSecret(existingRouteSecret),
      readSecret: (ns, n) => this.writer.readSecret(ns, n),
      scrypt: this.scrypt,
      destinations: this.o.destinations,
      teamDestinations: this.teamDestinationsIn(namespace),
      publishedTeamDestinations: this.publishedDestinationsIn(namespace),
      ...(this.o.mappingRunner ? { mappingRunner: this.o.mappingRunner } : {}),
      limits: this.limitsIn(namespace),
    };
    const plan = obj.kind === 'WebhookIntegration' ? await planWebhook(obj, ctx) : await planApiKey(obj, ctx);
    if (plan.credentials && !ctx.existingCredentials && existingRouteSecret && !(await this.stillLive(obj))) {
      // Its published credentials Secret is gone: deleted by hand, or by the garbage collector
      // because the resource itself was deleted and the cache has not shown that yet. Only a live
      // read tells the two apart; regenerating for a deleted resource would write a Secret and a
      // route that outlive it. The deletion's own watch event removes the route.
      return undefined;
    }
    // One after the other: a credentials Secret the cache has not shown yet fails its create (409)
    // before a route for a password nobody holds replaces the published one.
    await this.applyCredentials(obj, plan, ctx.existingCredentials);
    await this.applyRoute(obj, plan, routeName, existingRouteSecret);
    const receiving = this.receiving(obj, ctx.now);
    await this.applyStatus(obj, plan, ctx.now, receiving);
    for (const notice of plan.notices) await this.writer.recordEvent(obj, notice.type, notice.reason, notice.message);
    const requeueAfterMs = Math.min(plan.requeueAfterMs ?? Infinity, receiving?.recheckAfterMs ?? Infinity);
    return requeueAfterMs !== Infinity ? { requeueAfterMs } : undefined;
  }

  /** Whether the API server still has this very resource (same UID) and it is not being deleted. */
  private async stillLive(obj: IntakeResource): Promise<boolean> {
    const live = await this.writer.readCustom(obj.kind, obj.metadata.namespace as string, obj.metadata.name as string);
    return live !== undefined && live.metadata.uid === obj.metadata.uid && !live.metadata.deletionTimestamp;
  }

  /** The Receiving condition (spec.expectEventsWithin), from the merged activity or what the status holds. */
  private receiving(obj: IntakeResource, now: Date): Receiving | undefined {
    if (obj.kind !== 'WebhookIntegration') return undefined;
    const last = this.activity?.lastEventTime(obj) ?? obj.status?.activity?.lastEventTime;
    return receivingOf(obj, last, now, this.activity !== undefined);
  }

  /** After a merge: reconcile the integrations whose Receiving condition would change (events again, or silence). */
  private enqueueReceivingChanges(): void {
    const now = new Date();
    for (const wi of this.allWebhooks()) {
      if (!wi.spec?.expectEventsWithin || wi.metadata.deletionTimestamp) continue;
      const next = this.receiving(
        { ...wi, kind: 'WebhookIntegration', apiVersion: API_VERSION } as IntakeResource,
        now,
      );
      const current = wi.status?.conditions?.find((c) => c.type === 'Receiving');
      if (next && (current?.status !== next.state.status || current.reason !== next.state.reason))
        this.queue.add(queueKey('WebhookIntegration', wi.metadata.namespace as string, wi.metadata.name as string));
    }
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
        ownerReferences: [
          {
            apiVersion: API_VERSION,
            kind: obj.kind,
            name: obj.metadata.name as string,
            uid: obj.metadata.uid as string,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      data: Object.fromEntries(
        Object.entries(plan.credentials.data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
      ),
    };
    await this.applyOwnSecret(obj, desired, existing);
  }

  /** Writes one of the resource's Secrets; an event held back meanwhile that was not this write's queues the resource again. */
  private async applyOwnSecret(obj: IntakeResource, desired: V1Secret, existing: V1Secret | undefined): Promise<void> {
    const { missed } = await this.ownWrites.during(
      'Secret',
      desired.metadata?.namespace as string,
      desired.metadata?.name as string,
      () => this.writer.applySecret(desired, existing),
    );
    if (missed) this.queue.add(queueKey(obj.kind, obj.metadata.namespace as string, obj.metadata.name as string));
  }

  private async applyRoute(
    obj: IntakeResource,
    plan: Plan,
    routeName: string,
    existing: V1Secret | undefined,
  ): Promise<void> {
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
        annotations: {
          [SOURCE_ANNOTATION]: queueKey(obj.kind, obj.metadata.namespace as string, obj.metadata.name as string),
        },
      },
      // The contract is checked on both sides: a document the ingesters would skip is never written.
      // planWebhook and planApiKey return a route only once it passed validateRoute (plan.ts publishable).
      data: { [ROUTE_SECRET_KEY]: Buffer.from(JSON.stringify(plan.route)).toString('base64') },
    };
    await this.applyOwnSecret(obj, desired, existing);
  }

  private async applyStatus(obj: IntakeResource, plan: Plan, now: Date, receiving?: Receiving): Promise<void> {
    // What this operator last wrote, while the cache does not show it yet; else the cache's.
    const key = queueKey(obj.kind, obj.metadata.namespace as string, obj.metadata.name as string);
    const current = (this.writtenStatus.fresher(key) ?? obj.status) as IntakeResource['status'];
    const previous = current?.conditions;
    let conditions = setReady(previous, plan.ready, obj.metadata.generation, now);
    if (plan.throttled)
      conditions = setCondition(conditions, 'Throttled', plan.throttled, obj.metadata.generation, now);
    conditions = receiving
      ? setCondition(conditions, 'Receiving', receiving.state, obj.metadata.generation, now)
      : conditions.filter((c) => c.type !== 'Receiving');
    if (obj.kind === 'WebhookIntegration') {
      const labels = { namespace: obj.metadata.namespace as string, name: obj.metadata.name as string };
      if (receiving) this.o.metrics.integrationSilent.set(labels, receiving.silent ? 1 : 0);
      else this.o.metrics.integrationSilent.remove(labels);
    }
    const status: Record<string, unknown> = { ...plan.status, observedGeneration: obj.metadata.generation, conditions };
    if (plan.effectiveLimits) status.effectiveLimits = plan.effectiveLimits;
    if (normaliseStatus(current) !== normaliseStatus(status)) {
      // Merge patch: fields no longer set (url after a conflict) must be removed explicitly.
      const cleared = Object.fromEntries(
        ['integrationName', 'url', 'credentialsSecret', 'username', 'effectiveLimits']
          .filter((k) => !(k in status) && current && k in current)
          .map((k) => [k, null]),
      );
      // A merge patch merges nested objects: replace effectiveLimits whole (a field no longer set must go).
      const written = await this.writer.patchStatus(obj, {
        ...cleared,
        ...status,
        ...(status.effectiveLimits && current?.effectiveLimits
          ? { effectiveLimits: withNulls(current.effectiveLimits, status.effectiveLimits) }
          : {}),
      });
      this.writtenStatus.record(key, written.metadata.resourceVersion, (written as { status?: object }).status);
    }
    // No Event for a new resource becoming Ready (its status says so, and 10,000 applied at once
    // would be 10,000 Events): only for a resource that is not Ready, and for a change of state.
    const firstReady = !previous?.some((c) => c.type === 'Ready') && plan.ready.status === 'True';
    if (isTransition(previous, plan.ready) && !firstReady) {
      await this.writer.recordEvent(
        obj,
        plan.ready.status === 'True' ? 'Normal' : 'Warning',
        plan.ready.reason,
        plan.ready.message,
      );
    }
    if (receiving && receiving.state.status !== 'Unknown' && isTransition(previous, receiving.state, 'Receiving')) {
      const wasSilent = previous?.some((c) => c.type === 'Receiving' && c.reason === 'Silent');
      if (receiving.silent || wasSilent)
        await this.writer.recordEvent(
          obj,
          receiving.silent ? 'Warning' : 'Normal',
          receiving.state.reason,
          receiving.state.message,
        );
    }
    if (
      plan.throttled &&
      isTransition(previous, plan.throttled, 'Throttled') &&
      (plan.throttled.status === 'True' || previous?.some((c) => c.type === 'Throttled'))
    ) {
      await this.writer.recordEvent(
        obj,
        plan.throttled.status === 'True' ? 'Warning' : 'Normal',
        plan.throttled.reason,
        plan.throttled.message,
      );
    }
  }

  /**
   * A team Destination: its document published for the ingesters (or removed: deleted, or not
   * valid any more, so the ingesters stop delivering to it), and its status.
   */
  private async reconcileDestination(namespace: string, name: string): Promise<ReconcileResult> {
    const secretName = destinationSecretName(namespace, name);
    const existing = this.destinationSecrets.get(`${this.o.namespace}/${secretName}`);
    const found = this.teamDestinations.map((i) => i.get(`${namespace}/${name}`)).find(Boolean);
    if (!found || found.metadata.deletionTimestamp) {
      if (existing) await this.writer.deleteSecret(this.o.namespace, secretName);
      return;
    }
    const d: Destination = { ...found, kind: 'Destination', apiVersion: API_VERSION };
    const now = new Date();
    const max = this.o.maxDestinationsPerNamespace ?? DEFAULT_MAX_DESTINATIONS_PER_NAMESPACE;
    const plan = await planDestination(d, {
      readSecret: (ns, n) => this.writer.readSecret(ns, n),
      platformDestinations: this.o.destinations,
      olderInNamespace: this.teamDestinations
        .flatMap((i) => i.list())
        .filter((o) => o.metadata.namespace === namespace && !o.metadata.deletionTimestamp && createdBefore(o, d))
        .length,
      maxPerNamespace: max,
    });
    if (plan.document) {
      const desired: V1Secret = {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'Opaque',
        metadata: {
          name: secretName,
          namespace: this.o.namespace,
          labels: { ...MANAGED_BY, [DESTINATION_LABEL]: 'true' },
          annotations: { [SOURCE_ANNOTATION]: queueKey('Destination', namespace, name) },
        },
        data: { [DESTINATION_SECRET_KEY]: Buffer.from(JSON.stringify(plan.document)).toString('base64') },
      };
      this.ownWrites.record('Secret', await this.writer.applySecret(desired, existing));
    } else if (existing) await this.writer.deleteSecret(this.o.namespace, secretName);
    const key = queueKey('Destination', namespace, name);
    const current = (this.writtenStatus.fresher(key) ?? d.status) as Destination['status'];
    const generation = d.metadata.generation;
    const reported = plan.document ? this.deliveryConditions(d, current?.conditions) : undefined;
    const paused = reported?.paused ?? plan.paused;
    const circuitOpen = reported?.circuitOpen ?? plan.circuitOpen;
    let conditions = setReady(current?.conditions, plan.ready, generation, now);
    conditions = setCondition(conditions, 'Paused', paused, generation, now);
    conditions = setCondition(conditions, 'CircuitOpen', circuitOpen, generation, now);
    // status.delivery is the delivery loop's (operator/delivery/), never part of a reconcile's status.
    const status = {
      observedGeneration: generation,
      destinationName: plan.destinationName,
      conditions,
    };
    if (normaliseStatus(current) !== normaliseStatus(status)) {
      const written = await this.writer.patchStatus(d, status);
      this.writtenStatus.record(key, written.metadata.resourceVersion, (written as { status?: object }).status);
    }
    if (isTransition(current?.conditions, plan.ready) && plan.ready.status === 'False')
      await this.writer.recordEvent(d, 'Warning', plan.ready.reason, plan.ready.message);
    // The receiver's trouble, and its end, as Events (a transition each, never per round).
    const wasOpen = current?.conditions?.some((c) => c.type === 'CircuitOpen' && c.status === 'True');
    if (isTransition(current?.conditions, circuitOpen, 'CircuitOpen'))
      if (circuitOpen.reason === 'Open' || (wasOpen && circuitOpen.reason === 'Closed'))
        await this.writer.recordEvent(
          d,
          circuitOpen.reason === 'Open' ? 'Warning' : 'Normal',
          `Circuit${circuitOpen.reason}`,
          circuitOpen.message,
        );
    if (isTransition(current?.conditions, paused, 'Paused') && paused.reason === 'AutoPaused')
      await this.writer.recordEvent(d, 'Warning', paused.reason, paused.message);
  }

  /**
   * The CircuitOpen and Paused conditions of what the ingesters reported (merged by the delivery
   * loop); before anything was merged (the operator just started), the ones the status holds, so
   * a restart does not flip them to NotReported and back. spec.suspend is the plan's and wins.
   */
  private deliveryConditions(
    d: Destination,
    held: readonly { type: string; status: ConditionState['status']; reason: string; message: string }[] | undefined,
  ): { circuitOpen?: ConditionState; paused?: ConditionState } {
    const merged = this.delivery?.mergedOf(d);
    const keep = (type: string, unless: (reason: string) => boolean): ConditionState | undefined => {
      const c = held?.find((x) => x.type === type);
      return c && !unless(c.reason) ? { status: c.status, reason: c.reason, message: c.message } : undefined;
    };
    if (!merged) {
      const circuitOpen = keep('CircuitOpen', (r) => r === 'NotReported');
      const paused = d.spec?.suspend ? undefined : keep('Paused', (r) => r !== 'AutoPaused' && r !== 'PausedByAdmin');
      return { ...(circuitOpen ? { circuitOpen } : {}), ...(paused ? { paused } : {}) };
    }
    const paused = d.spec?.suspend ? undefined : runtimePauseCondition(merged);
    return { circuitOpen: circuitCondition(merged), ...(paused ? { paused } : {}) };
  }

  /** After a delivery merge: reconcile the Destinations whose CircuitOpen or Paused condition would change. */
  private enqueueDeliveryConditionChanges(): void {
    for (const d of this.allDestinations()) {
      if (d.metadata.deletionTimestamp || !this.delivery?.mergedOf(d)) continue;
      const next = this.deliveryConditions(d, d.status?.conditions);
      const differs = (type: string, state: ConditionState | undefined): boolean => {
        if (!state) return false;
        const c = d.status?.conditions?.find((x) => x.type === type);
        return c?.status !== state.status || c.reason !== state.reason;
      };
      const pausedNow = d.status?.conditions?.find((x) => x.type === 'Paused');
      const runtimePauseEnded =
        !next.paused && (pausedNow?.reason === 'AutoPaused' || pausedNow?.reason === 'PausedByAdmin');
      if (differs('CircuitOpen', next.circuitOpen) || differs('Paused', next.paused) || runtimePauseEnded)
        this.queue.add(queueKey('Destination', d.metadata.namespace as string, d.metadata.name as string));
    }
  }

  /** An IntakeQuota's status: the limits in effect in its namespace and what its integrations and keys were given. */
  private async reconcileQuota(namespace: string, name: string): Promise<ReconcileResult> {
    const found = this.quotas.map((i) => i.get(`${namespace}/${name}`)).find(Boolean);
    if (!found || found.metadata.deletionTimestamp) return;
    const quota: IntakeQuota = { ...found, kind: 'IntakeQuota', apiVersion: API_VERSION };
    const limits = this.limitsIn(namespace);
    const webhooks = this.allWebhooks().filter(
      (wi) => wi.metadata.namespace === namespace && !wi.metadata.deletionTimestamp,
    );
    const apiKeys = this.allApiKeys().filter(
      (ak) => ak.metadata.namespace === namespace && !ak.metadata.deletionTimestamp,
    );
    const others = this.quotasIn(namespace).length - 1;
    const ready = {
      status: 'True' as const,
      reason: 'Applied',
      message: `applies to ${webhooks.length} integration(s) and ${apiKeys.length} API key(s)${others > 0 ? `, together with ${others} other IntakeQuota(s) in the namespace (the smallest value of each field applies)` : ''}`,
    };
    const status = {
      observedGeneration: quota.metadata.generation,
      effective: { namespace: limits.namespace, integration: limits.integration, apiKey: limits.apiKey },
      used: quotaUsage(webhooks, apiKeys, limits),
      conditions: setCondition(quota.status?.conditions, 'Ready', ready, quota.metadata.generation, new Date()),
    };
    if (normaliseStatus(quota.status) !== normaliseStatus(status)) await this.writer.patchStatus(quota, status);
  }
}

/** `next`, plus null for every field `current` has and `next` does not (a merge patch removes only what is null). */
function withNulls(current: object, next: object): object {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(current)) if (!(k in next)) out[k] = null;
  for (const [k, v] of Object.entries(next)) {
    const c = (current as Record<string, unknown>)[k];
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && c && typeof c === 'object' ? withNulls(c, v) : v;
  }
  return out;
}

/**
 * Keys sorted at every level (the API server returns objects with their keys sorted), as text. status.activity
 * is the activity loop's (operator/activity/), never part of a reconcile's status.
 */
function normaliseStatus(status: object | undefined): string {
  const { activity: _activity, delivery: _delivery, ...rest } = (status ?? {}) as Record<string, unknown>;
  return stableStringify(rest) ?? '';
}

/** The most Destinations of one namespace published when --max-destinations-per-namespace is not given. */
const DEFAULT_MAX_DESTINATIONS_PER_NAMESPACE = 16;

/** Whether `a` was created before `b` (the name decides a tie). */
function createdBefore(a: Destination, b: Destination): boolean {
  const ta = new Date(a.metadata.creationTimestamp ?? 0).getTime();
  const tb = new Date(b.metadata.creationTimestamp ?? 0).getTime();
  return ta !== tb ? ta < tb : (a.metadata.name as string) < (b.metadata.name as string);
}

function specOrMetaChanged(a: IntakeResource, b: IntakeResource): boolean {
  const m = (o: IntakeResource) =>
    JSON.stringify([
      o.metadata.generation,
      o.metadata.labels ?? {},
      o.metadata.annotations ?? {},
      o.metadata.finalizers ?? [],
      o.metadata.deletionTimestamp ?? null,
    ]);
  return m(a) !== m(b);
}
