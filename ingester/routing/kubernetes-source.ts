/**
 * Kubernetes mode: routes from Secrets labelled intake.dev/route=true in the ingester's own
 * namespace (the only read access it needs). Every change rebuilds the whole table, which the
 * ingester swaps in at once; a Secret whose document cannot be parsed is skipped, logged and
 * counted, never fatal. The table is kept while the API server is unreachable.
 *
 * A Secret is decoded and validated once per resourceVersion, not on every rebuild: with 1,000
 * integrations applied at once the route Secrets arrive one by one, and re-parsing every document
 * on each of hundreds of rebuilds was most of the ingester's CPU (docs/benchmarks.md). The parsed
 * route object stays the same while its Secret does, which also lets the table reuse its compiled
 * entry (route-table.ts RouteTable.build, `compiled`).
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { ROUTE_LABEL, ROUTE_SECRET_KEY, validateRoute, RouteValidationError } from '../../api/route.js';
import type { KubeApiClient } from '../../kube/api-client.js';
import { Informer } from '../../kube/informer.js';
import type { RouteSource } from './route-source.js';
import type { RouteInput, SkippedRoute } from './route-table.js';

/** Coalesces bursts (500 integrations applied at once) into one rebuild. */
const REBUILD_DELAY_MS = 20;

export class KubernetesRouteSource implements RouteSource {
  readonly allowPlaintext = false;
  private informer?: Informer<V1Secret>;
  private timer?: NodeJS.Timeout;
  /** What each Secret (by name) parsed to, at its resourceVersion. */
  private readonly parsed = new Map<string, { resourceVersion: string; input?: RouteInput; skipped?: SkippedRoute }>();

  constructor(
    private readonly api: KubeApiClient,
    private readonly namespace: string,
    private readonly logger: Logger,
  ) {}

  async start(handlers: Parameters<RouteSource['start']>[0]): Promise<void> {
    const labelSelector = `${ROUTE_LABEL}=true`;
    const watchPath = `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/secrets`;
    const rebuild = async (): Promise<void> => {
      this.timer = undefined;
      const { inputs, skipped } = this.parseAll();
      await handlers.onRoutes(inputs, skipped);
    };
    this.informer = new Informer<V1Secret>({
      name: 'route-secrets',
      watcher: this.api,
      logger: this.logger,
      labelSelector,
      watchPath,
      list: () => this.api.list<V1Secret>(watchPath, { labelSelector }),
      onEvent: () => {
        if (this.informer?.hasSynced && this.timer === undefined)
          this.timer = setTimeout(() => void rebuild().catch(handlers.onError), REBUILD_DELAY_MS);
      },
    });
    this.informer.start();
    await this.informer.waitForSync();
    await rebuild();
  }

  private parseAll(): { inputs: RouteInput[]; skipped: SkippedRoute[] } {
    const inputs: RouteInput[] = [];
    const skipped: SkippedRoute[] = [];
    const seen = new Set<string>();
    for (const secret of this.informer?.list() ?? []) {
      const name = secret.metadata?.name ?? '';
      const resourceVersion = secret.metadata?.resourceVersion;
      seen.add(name);
      let parsed = this.parsed.get(name);
      if (!parsed || resourceVersion === undefined || parsed.resourceVersion !== resourceVersion) {
        parsed = { resourceVersion: resourceVersion ?? '', ...this.parse(secret) };
        if (resourceVersion !== undefined) this.parsed.set(name, parsed);
      }
      if (parsed.input) inputs.push(parsed.input);
      if (parsed.skipped) skipped.push(parsed.skipped);
    }
    for (const name of this.parsed.keys()) if (!seen.has(name)) this.parsed.delete(name);
    return { inputs, skipped };
  }

  private parse(secret: V1Secret): { input: RouteInput } | { skipped: SkippedRoute } {
    const source = `secret ${this.namespace}/${secret.metadata?.name}`;
    const encoded = secret.data?.[ROUTE_SECRET_KEY];
    try {
      if (!encoded) throw new Error(`has no ${ROUTE_SECRET_KEY} key`);
      return {
        input: { source, route: validateRoute(parseJson(Buffer.from(encoded, 'base64').toString('utf8'))) },
      };
    } catch (err) {
      return {
        skipped: {
          source,
          reason: err instanceof RouteValidationError ? err.problems.join('; ') : (err as Error).message,
        },
      };
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.informer?.stop();
  }
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
