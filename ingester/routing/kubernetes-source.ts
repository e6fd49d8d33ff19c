/**
 * Kubernetes mode: routes from Secrets labelled intake.dev/route=true in the ingester's own
 * namespace (the only read access it needs). The first list builds the whole table; after it,
 * the Secrets changed since the last hand-over go to onChanges, which updates only their routes
 * (with 20,000 routes, a rotated password must not cost a pass over the other 19,999); a burst
 * of more than MAX_CHANGES (a relist after a long disconnection) is handed over as a whole set.
 * A Secret whose document cannot be parsed is skipped, logged and counted, never fatal. The table
 * is kept while the API server is unreachable.
 *
 * A Secret is decoded and validated once per resourceVersion, when it arrives, not on every
 * update: with 1,000 integrations applied at once the route Secrets arrive one by one, and
 * re-parsing every document on each of hundreds of rebuilds was most of the ingester's CPU
 * (docs/benchmarks.md). The parsed route object stays the same while its Secret does, which also
 * lets a full build reuse its compiled entry (route-table.ts RouteTable.build, `compiled`).
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import {
  ROUTE_API_VERSION,
  ROUTE_LABEL,
  ROUTE_SECRET_KEY,
  validateRoute,
  RouteValidationError,
  type Route,
} from '../../api/route.js';
import { flatCopy } from '../../common/flat-string.js';
import type { KubeApiClient } from '../../kube/api-client.js';
import { Informer } from '../../kube/informer.js';
import type { RouteSource } from './route-source.js';
import type { RouteChange, RouteInput, SkippedRoute } from './route-table.js';

/** Coalesces bursts (500 integrations applied at once) into one update. */
const REBUILD_DELAY_MS = 20;

/**
 * More changed Secrets than this at once go over as a whole set, which the ingester builds in
 * steps (the event loop turns between them); changes are applied in one synchronous pass.
 */
const MAX_CHANGES = 1000;

export class KubernetesRouteSource implements RouteSource {
  readonly allowPlaintext = false;
  private informer?: Informer<V1Secret>;
  private timer?: NodeJS.Timeout;
  /** Names of the Secrets changed (created, updated, deleted) since the last hand-over. */
  private readonly changed = new Set<string>();

  constructor(
    private readonly api: KubeApiClient,
    private readonly namespace: string,
    private readonly logger: Logger,
  ) {}

  async start(handlers: Parameters<RouteSource['start']>[0]): Promise<void> {
    const labelSelector = `${ROUTE_LABEL}=true`;
    const watchPath = `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/secrets`;
    const handOver = async (): Promise<void> => {
      this.timer = undefined;
      const names = [...this.changed];
      this.changed.clear();
      if (handlers.onChanges && names.length <= MAX_CHANGES) {
        const { changes, unparsable } = this.changesOf(names);
        await handlers.onChanges(changes, unparsable, () => {
          const { inputs, skipped } = this.all();
          return { inputs, unparsable: skipped };
        });
        return;
      }
      const { inputs, skipped } = this.all();
      await handlers.onRoutes(inputs, skipped);
    };
    this.informer = new Informer<V1Secret>({
      name: 'route-secrets',
      watcher: this.api,
      logger: this.logger,
      labelSelector,
      watchPath,
      // A page at a time, each Secret parsed as its page arrives and kept as its name, version
      // and parsed route: no document waits whole for the end of the list.
      list: () =>
        this.api.list<V1Secret, KeptRouteSecret>(watchPath, { labelSelector }, (secret) => this.listed(secret)),
      // The cache is the one place a Secret's route is kept, parsed and validated once per
      // resourceVersion (a map of its own beside the cache was 0.9 MiB with 20,000 routes).
      keep: (secret) =>
        secret instanceof KeptRouteSecret ? secret : new KeptRouteSecret(this.metadataOf(secret), this.parse(secret)),
      onEvent: (secret, old) => {
        const name = (secret ?? old)?.metadata?.name ?? '';
        if (!this.informer?.hasSynced) return;
        this.changed.add(name);
        this.timer ??= setTimeout(() => void handOver().catch(handlers.onError), REBUILD_DELAY_MS);
      },
    });
    this.informer.start();
    await this.informer.waitForSync();
    const { inputs, skipped } = this.all();
    await handlers.onRoutes(inputs, skipped);
  }

  /** The route each changed Secret holds now (none when deleted or unparsable). */
  private changesOf(names: readonly string[]): { changes: RouteChange[]; unparsable: SkippedRoute[] } {
    const changes: RouteChange[] = [];
    const unparsable: SkippedRoute[] = [];
    for (const name of names) {
      const parsed = this.parsedOf(name);
      const source = this.sourceOf(name);
      changes.push(parsed && 'route' in parsed ? { source, input: parsed } : { source });
      if (parsed && 'reason' in parsed) unparsable.push(parsed);
    }
    return { changes, unparsable };
  }

  /** Every route Secret's route (or why not), in the order they were first listed or created. */
  private all(): { inputs: RouteInput[]; skipped: SkippedRoute[] } {
    const inputs: RouteInput[] = [];
    const skipped: SkippedRoute[] = [];
    for (const kept of this.informer?.list() ?? []) {
      if (!(kept instanceof KeptRouteSecret)) continue;
      const { parsed } = kept;
      if ('route' in parsed) inputs.push(parsed);
      else skipped.push(parsed);
    }
    return { inputs, skipped };
  }

  /** What the route Secret `name` holds now, as the cache keeps it; undefined once it is deleted. */
  private parsedOf(name: string): ParsedRouteSecret | undefined {
    const kept = this.informer?.get(`${this.namespace}/${name}`);
    return kept instanceof KeptRouteSecret ? kept.parsed : undefined;
  }

  /** Flat: every route keeps its source, and a concatenation is a tree of 32-byte pieces until flattened. */
  private sourceOf(name: string): string {
    return flatCopy(`secret ${this.namespace}/${name}`);
  }

  /**
   * A listed Secret as the list keeps it: what the cache keeps, and its route parsed already,
   * unless the cache has this very version (a relist: no event comes for it, nothing to parse).
   */
  private listed(secret: V1Secret): KeptRouteSecret {
    const metadata = this.metadataOf(secret);
    const cached = this.informer?.get(`${metadata.namespace}/${metadata.name}`);
    if (cached instanceof KeptRouteSecret && cached.metadata.resourceVersion === metadata.resourceVersion)
      return cached;
    return new KeptRouteSecret(metadata, this.parse(secret));
  }

  /**
   * What the cache keeps of a Secret: its name and version, and its namespace, which is always
   * this source's (held once, not once per Secret).
   */
  private metadataOf(secret: V1Secret): { name?: string; namespace?: string; resourceVersion?: string } {
    const namespace = secret.metadata?.namespace;
    return {
      name: secret.metadata?.name,
      namespace: namespace === this.namespace ? this.namespace : namespace,
      resourceVersion: secret.metadata?.resourceVersion,
    };
  }

  private parse(secret: V1Secret): ParsedRouteSecret {
    const source = this.sourceOf(secret.metadata?.name ?? '');
    const encoded = secret.data?.[ROUTE_SECRET_KEY];
    try {
      if (!encoded) throw new Error(`has no ${ROUTE_SECRET_KEY} key`);
      return {
        source,
        route: sharingConstants(validateRoute(parseJson(Buffer.from(encoded, 'base64').toString('utf8')))),
      };
    } catch (err) {
      return {
        source,
        reason: err instanceof RouteValidationError ? err.problems.join('; ') : (err as Error).message,
      };
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.informer?.stop();
  }
}

/** A route Secret's route, or why it has none. */
type ParsedRouteSecret = RouteInput | SkippedRoute;

/** A route Secret as the cache keeps it: its name and version, and its document parsed (or why not) when it arrived. */
class KeptRouteSecret {
  constructor(
    readonly metadata: { name?: string; namespace?: string; resourceVersion?: string },
    readonly parsed: ParsedRouteSecret,
  ) {}
}

/**
 * The route with its apiVersion and kind as the constants they were validated against: each
 * parsed document has its own copy of these strings otherwise, which every one of 20,000 routes
 * keeps for as long as its Secret is unchanged.
 */
function sharingConstants(route: Route): Route {
  route.apiVersion = ROUTE_API_VERSION;
  route.kind = route.kind === 'ApiKey' ? 'ApiKey' : 'WebhookIntegration';
  return route;
}

/** JSON.parse's message quotes the text, which may hold secret material: say only where it broke. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const position = /position (\d+)/.exec((err as Error).message)?.[1];
    throw new Error(`${ROUTE_SECRET_KEY} is not valid JSON${position ? ` (at character ${position})` : ''}`);
  }
}
