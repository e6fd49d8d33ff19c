/**
 * `intake ingester`: accept events and metric data points over HTTP, standalone (routes from the
 * config file) or in Kubernetes mode (routes from route Secrets).
 */
import { Command, Option } from 'commander';
import { ConfigError, readYamlFile } from '../../common/config-files.js';
import { createLogger } from '../../common/logger.js';
import type { IngesterSettings } from '../../ingester/config.js';
import type { RouteSource } from '../../ingester/routing/route-source.js';
import { kubeconfigOption, logLevelOption, namespaceOption } from '../options.js';
import { stopOnSignals } from '../run.js';

/** What the admin listener serves; test/unit/docs-cli.test.ts checks the docs name only these. */
const ADMIN_PATHS =
  '/healthz /readyz /metrics /metrics/ingested /status/activity /status/delivery /deadletter /destinations /inspector';

export function ingesterCommand(): Command {
  return new Command('ingester')
    .description('accept events and metric data points over HTTP (standalone with --config, or from route Secrets)')
    .addOption(
      new Option('-c, --config <file>', 'YAML config file: settings and, in standalone mode, routes').env(
        'INTAKE_CONFIG',
      ),
    )
    .addOption(new Option('--listen <host:port>', 'ingest listener (default 127.0.0.1:8080)').env('INTAKE_LISTEN'))
    .addOption(
      new Option('--admin-listen <host:port>', `admin listener: ${ADMIN_PATHS} (default 127.0.0.1:8081)`).env(
        'INTAKE_ADMIN_LISTEN',
      ),
    )
    .addOption(
      new Option('--tls-cert <file>', 'serve HTTPS with this certificate (reloaded on change)').env('INTAKE_TLS_CERT'),
    )
    .addOption(new Option('--tls-key <file>', 'private key for --tls-cert').env('INTAKE_TLS_KEY'))
    .addOption(
      new Option('--events-log <file>', 'where the log sink writes events, one JSON line each ("-" = stdout)').env(
        'INTAKE_EVENTS_LOG',
      ),
    )
    .addOption(
      new Option(
        '--trust-proxy <value>',
        'trust X-Forwarded-For from proxies at these comma-separated addresses/CIDRs (or loopback, linklocal, uniquelocal)',
      ).env('INTAKE_TRUST_PROXY'),
    )
    .addOption(namespaceOption('Kubernetes mode: read route Secrets labelled intake.dev/route=true in this namespace'))
    .addOption(kubeconfigOption('Kubernetes mode: kubeconfig file (default: in-cluster service account)'))
    .addOption(
      new Option(
        '--service <name>',
        "Kubernetes mode: the ingesters' Service; its ready endpoints are the N replicas per-tenant limits are divided by (default: N = 1)",
      ).env('INTAKE_SERVICE'),
    )
    .addOption(logLevelOption())
    .action(runIngester);
}

async function runIngester(opts: Record<string, string | undefined>): Promise<void> {
  const file = opts.config ? readYamlFile(opts.config) : {};
  const { resolveSettings } = await import('../../ingester/config.js');
  const deprecated: Array<{ key: string; use: string; message: string }> = [];
  const settings = resolveSettings(file, opts, opts.config ?? 'config', (key) => deprecated.push(key));
  const logger = createLogger(settings.logLevel);
  // Once each, at start-up (a reload of the file checks it again without repeating them).
  for (const d of deprecated) logger.warn({ setting: d.key, use: d.use }, d.message);
  if (!opts.namespace && !opts.config)
    throw new ConfigError(
      'give --config FILE (standalone: routes from the file) or --namespace NS (Kubernetes: routes from Secrets)',
    );
  const source = await routeSource(
    opts.namespace,
    opts.kubeconfig,
    opts.config as string,
    settings.destinations,
    logger,
    file,
  );
  if (opts.namespace && opts.config && Array.isArray((file as { routes?: unknown }).routes)) {
    logger.warn({ config: opts.config }, 'Kubernetes mode: routes listed in the config file are ignored');
  }
  const { startIngester } = await import('../../ingester/main.js');
  const running = await startIngester(
    settings,
    source,
    logger,
    await replicaCount(opts.namespace, opts.service, opts.kubeconfig, logger),
    await teamDestinationSource(opts.namespace, opts.kubeconfig, logger),
  );
  stopOnSignals({
    stop: () => running.shutdown(),
    logger,
    timeoutMs: settings.shutdown.timeoutSeconds * 1000,
    // Log rotation: reopen the events log file.
    hangup: () => running.reopenFiles(),
  });
}

/**
 * The ingester's API client: a small list-watch client, not @kubernetes/client-node (about 50 MiB
 * of RSS for two informers; kube/api-connection.ts). One per process: both informers share its
 * keep-alive connections.
 */
let ingesterApi: Promise<import('../../kube/api-client.js').KubeApiClient> | undefined;
function ingesterApiClient(kubeconfig: string | undefined) {
  ingesterApi ??= Promise.all([import('../../kube/api-client.js'), import('../../kube/api-connection.js')]).then(
    ([{ KubeApiClient }, { apiConnection }]) => new KubeApiClient(apiConnection(kubeconfig)),
  );
  return ingesterApi;
}

/** Kubernetes mode with --service: ready replicas from the Service's EndpointSlices; otherwise none (N = 1). */
async function replicaCount(
  namespace: string | undefined,
  service: string | undefined,
  kubeconfig: string | undefined,
  logger: ReturnType<typeof createLogger>,
) {
  if (!namespace || !service) return undefined;
  const [{ EndpointSliceReplicas }, api] = await Promise.all([
    import('../../ingester/limits/replicas.js'),
    ingesterApiClient(kubeconfig),
  ]);
  return new EndpointSliceReplicas(api, namespace, service, logger);
}

/** Kubernetes mode: the teams' own destinations, published by the operator beside the routes. */
async function teamDestinationSource(
  namespace: string | undefined,
  kubeconfig: string | undefined,
  logger: ReturnType<typeof createLogger>,
) {
  if (!namespace) return undefined;
  const [{ KubernetesDestinationSource }, api] = await Promise.all([
    import('../../ingester/destinations/team/kubernetes-destinations.js'),
    ingesterApiClient(kubeconfig),
  ]);
  return new KubernetesDestinationSource(api, namespace, logger);
}

/** Kubernetes mode (route Secrets) when a namespace is given, else standalone (the config file). */
async function routeSource(
  namespace: string | undefined,
  kubeconfig: string | undefined,
  config: string,
  destinations: IngesterSettings['destinations'],
  logger: ReturnType<typeof createLogger>,
  /** The config file as read for the settings: standalone mode's first routes come from it, not a second read. */
  file: unknown,
): Promise<RouteSource> {
  if (namespace) {
    const [{ KubernetesRouteSource }, api] = await Promise.all([
      import('../../ingester/routing/kubernetes-source.js'),
      ingesterApiClient(kubeconfig),
    ]);
    return new KubernetesRouteSource(api, namespace, logger);
  }
  const [{ FileRouteSource }, { checkSettingsFile }] = await Promise.all([
    import('../../ingester/routing/file-source.js'),
    import('../../ingester/config.js'),
  ]);
  return new FileRouteSource(config, destinations, checkSettingsFile, file);
}
