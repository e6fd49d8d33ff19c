#!/usr/bin/env -S node --max-semi-space-size=4
/**
 * The `intake` command: one entry point for every component.
 *
 * Each command imports its component when it runs, not before (only types are imported statically):
 * @kubernetes/client-node alone adds about 55 MiB of resident memory, which a standalone ingester
 * (routes from a file) never needs, and `intake deadletter list` or `--help` load no component at
 * all (test/e2e/standalone-modules.test.ts checks both).
 * The shebang's V8 flag (a small young generation, see Dockerfile) is the one the image sets.
 */
import { Ajv } from 'ajv';
import { Command, Option } from 'commander';
import {
  DEFAULT_TENANT_LIMITS,
  mergeTenantLimitDefaults,
  tenantLimitDefaultsSchema,
  type PartialTenantLimitDefaults,
  type TenantLimitDefaults,
} from '../api/limits.js';
import { ConfigError, parseListen, readYamlFile } from '../common/config-files.js';
import type { ActivityReport } from '../api/activity.js';
import type { IngesterSettings } from '../ingester/config.js';
import { createLogger } from '../common/logger.js';
import { inertJson, inertText } from '../common/sender-text.js';
import type { RouteSource } from '../ingester/routing/route-source.js';

const program = new Command('intake')
  .description('Kubernetes-native ingestion of monitoring events and metric data points')
  .showHelpAfterError()
  // `intake operator cleanup --namespace NS`: options after a subcommand are the subcommand's own,
  // not its parent's (`operator` has a --namespace too).
  .enablePositionalOptions();

program
  .command('ingester')
  .description('accept events and metric data points over HTTP (standalone with --config, or from route Secrets)')
  .addOption(
    new Option('-c, --config <file>', 'YAML config file: settings and, in standalone mode, routes').env(
      'INTAKE_CONFIG',
    ),
  )
  .addOption(new Option('--listen <host:port>', 'ingest listener (default 127.0.0.1:8080)').env('INTAKE_LISTEN'))
  .addOption(
    new Option(
      '--admin-listen <host:port>',
      'admin listener: /healthz /readyz /metrics /metrics/ingested (default 127.0.0.1:8081)',
    ).env('INTAKE_ADMIN_LISTEN'),
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
  .addOption(
    new Option(
      '--namespace <ns>',
      'Kubernetes mode: read route Secrets labelled intake.dev/route=true in this namespace',
    ).env('INTAKE_NAMESPACE'),
  )
  .addOption(
    new Option('--kubeconfig <file>', 'Kubernetes mode: kubeconfig file (default: in-cluster service account)').env(
      'INTAKE_KUBECONFIG',
    ),
  )
  .addOption(
    new Option(
      '--service <name>',
      "Kubernetes mode: the ingesters' Service; its ready endpoints are the N replicas per-tenant limits are divided by (default: N = 1)",
    ).env('INTAKE_SERVICE'),
  )
  .addOption(
    new Option('--log-level <level>', 'operational log level')
      .choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .env('INTAKE_LOG_LEVEL'),
  )
  .action(async (opts: Record<string, string | undefined>) => {
    const file = opts.config ? readYamlFile(opts.config) : {};
    const { resolveSettings } = await import('../ingester/config.js');
    const settings = resolveSettings(file, opts, opts.config ?? 'config');
    const logger = createLogger(settings.logLevel);
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
    );
    if (opts.namespace && opts.config && Array.isArray((file as { routes?: unknown }).routes)) {
      logger.warn({ config: opts.config }, 'Kubernetes mode: routes listed in the config file are ignored');
    }
    const { startIngester } = await import('../ingester/main.js');
    const running = await startIngester(
      settings,
      source,
      logger,
      await replicaCount(opts.namespace, opts.service, opts.kubeconfig, logger),
    );
    const stop = (signal: string): void => {
      logger.info({ signal }, 'signal received');
      const timer = setTimeout(() => {
        logger.error({ timeoutSeconds: settings.shutdown.timeoutSeconds }, 'shutdown timed out; exiting');
        process.exit(1);
      }, settings.shutdown.timeoutSeconds * 1000);
      timer.unref();
      running.shutdown().then(
        () => process.exit(0),
        (err: Error) => {
          logger.error({ err: { message: err.message } }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    // Log rotation: reopen the events log file.
    process.on('SIGHUP', () => {
      logger.info('SIGHUP: reopening the events log');
      running.reopenFiles();
    });
  });

const operator = program
  .command('operator')
  .description('turn WebhookIntegration and ApiKey resources into credentials Secrets and routes')
  .addOption(
    new Option('--kubeconfig <file>', 'kubeconfig file (default: in-cluster service account)').env('INTAKE_KUBECONFIG'),
  )
  .addOption(
    // Required, checked in the action: Commander would require a parent's mandatory options of its
    // subcommands too (`operator cleanup` needs no --public-base-url).
    new Option(
      '--namespace <ns>',
      'namespace of the ingesters, where route Secrets and the leader Lease live (required)',
    ).env('INTAKE_NAMESPACE'),
  )
  .addOption(
    new Option(
      '--public-base-url <url>',
      'base URL senders use, for status.url and the credentials Secret (required)',
    ).env('INTAKE_PUBLIC_BASE_URL'),
  )
  .addOption(
    new Option('--watch-namespaces <list>', 'comma-separated namespaces to watch (default: all)').env(
      'INTAKE_WATCH_NAMESPACES',
    ),
  )
  .addOption(
    new Option('--leader-elect', 'run only while holding the Lease (for several replicas)').env('INTAKE_LEADER_ELECT'),
  )
  .addOption(new Option('--lease-name <name>', 'name of the leader Lease').default('intake-operator'))
  .addOption(
    new Option('--admin-listen <host:port>', '/healthz /readyz /metrics')
      .default('127.0.0.1:8082')
      .env('INTAKE_ADMIN_LISTEN'),
  )
  .addOption(new Option('--default-max-series <n>', 'series cap for an ApiKey without spec.maxSeries').default('10000'))
  .addOption(
    new Option(
      '--default-limits <json>',
      'cluster defaults of the per-tenant limits, JSON {"namespace":{...},"integration":{...},"apiKey":{...}} (fields: docs/limits.md); an IntakeQuota overrides them per namespace',
    ).env('INTAKE_DEFAULT_LIMITS'),
  )
  .addOption(
    new Option(
      '--destinations <names>',
      'comma-separated destination names the ingesters are configured with (spec.destinations must name these; default: none)',
    ).env('INTAKE_DESTINATIONS'),
  )
  .addOption(
    new Option(
      '--resync-period <seconds>',
      'reconcile everything this often (picks up changes to referenced Secrets)',
    ).default('300'),
  )
  .addOption(new Option('--workers <n>', 'concurrent reconciles').default('4'))
  .addOption(
    new Option(
      '--ingester-admin-service <name>',
      "the ingesters' admin Service in --namespace: its EndpointSlices list the replicas whose activity is merged into status.activity (default: no activity)",
    ).env('INTAKE_INGESTER_ADMIN_SERVICE'),
  )
  .addOption(
    new Option('--activity-interval <seconds>', 'ask every ingester replica for its activity this often (at least 1)')
      .default('30')
      .env('INTAKE_ACTIVITY_INTERVAL'),
  )
  .addOption(
    new Option(
      '--activity-writes-per-second <n>',
      'at most this many status.activity writes a second, across every resource',
    ).default('20'),
  )
  .addOption(
    new Option('--log-level <level>', 'operational log level')
      .choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info')
      .env('INTAKE_LOG_LEVEL'),
  )
  .action(async (opts: Record<string, string | boolean | undefined>, command: Command) => {
    for (const [key, flag] of [
      ['namespace', '--namespace <ns>'],
      ['publicBaseUrl', '--public-base-url <url>'],
    ] as const)
      if (!opts[key]) command.error(`error: required option '${flag}' not specified`);
    const int = (name: string): number => {
      const n = Number(opts[name]);
      if (!Number.isInteger(n) || n <= 0)
        throw new ConfigError(`--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} must be a positive integer`);
      return n;
    };
    const publicBaseUrl = String(opts.publicBaseUrl);
    if (!/^https?:\/\/[^\s/]+/.test(publicBaseUrl))
      throw new ConfigError(`--public-base-url must be an http(s) URL, got ${JSON.stringify(publicBaseUrl)}`);
    const logger = createLogger(String(opts.logLevel), 'operator');
    const { startOperator } = await import('../operator/main.js');
    const running = await startOperator(
      {
        ...(opts.kubeconfig ? { kubeconfig: String(opts.kubeconfig) } : {}),
        namespace: String(opts.namespace),
        watchNamespaces: opts.watchNamespaces
          ? String(opts.watchNamespaces)
              .split(',')
              .map((n) => n.trim())
              .filter(Boolean)
          : [],
        publicBaseUrl,
        leaderElect: Boolean(opts.leaderElect),
        leaseName: String(opts.leaseName),
        adminListen: parseListen(String(opts.adminListen), '--admin-listen'),
        defaultMaxSeries: int('defaultMaxSeries'),
        destinations: await destinationNames(opts.destinations),
        limitDefaults: defaultLimits(opts.defaultLimits, int('defaultMaxSeries')),
        resyncPeriodMs: int('resyncPeriod') * 1000,
        workers: int('workers'),
        ...(opts.ingesterAdminService
          ? {
              activity: {
                service: String(opts.ingesterAdminService),
                intervalMs: int('activityInterval') * 1000,
                writesPerSecond: int('activityWritesPerSecond'),
              },
            }
          : {}),
      },
      logger,
      (reason) => {
        logger.fatal({ reason }, 'operator stopping');
        process.exit(1);
      },
    );
    const stop = (signal: string): void => {
      logger.info({ signal }, 'signal received');
      running.stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });

operator
  .command('cleanup')
  .description(
    "after the operator is gone for good (the chart's post-delete hook): remove its finalizer from every WebhookIntegration and ApiKey, and delete its route Secrets and leader Lease",
  )
  .addOption(
    new Option('--kubeconfig <file>', 'kubeconfig file (default: in-cluster service account)').env('INTAKE_KUBECONFIG'),
  )
  .addOption(
    new Option('--namespace <ns>', "the operator's --namespace: where its route Secrets and Lease are")
      .env('INTAKE_NAMESPACE')
      .makeOptionMandatory(),
  )
  .addOption(
    new Option('--watch-namespaces <list>', "the operator's --watch-namespaces (default: all)").env(
      'INTAKE_WATCH_NAMESPACES',
    ),
  )
  .addOption(new Option('--lease-name <name>', "the operator's leader Lease").default('intake-operator'))
  .addOption(
    new Option('--log-level <level>', 'operational log level')
      .choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info')
      .env('INTAKE_LOG_LEVEL'),
  )
  .action(async (opts: Record<string, string | undefined>) => {
    const logger = createLogger(String(opts.logLevel), 'operator-cleanup');
    const [{ CoordinationV1Api, CoreV1Api, CustomObjectsApi }, { loadKubeConfig }, { cleanupAfterOperator }] =
      await Promise.all([
        import('@kubernetes/client-node'),
        import('../kube/config.js'),
        import('../operator/cleanup.js'),
      ]);
    const kc = loadKubeConfig(opts.kubeconfig);
    await cleanupAfterOperator(
      {
        core: kc.makeApiClient(CoreV1Api),
        custom: kc.makeApiClient(CustomObjectsApi),
        coordination: kc.makeApiClient(CoordinationV1Api),
      },
      {
        namespace: String(opts.namespace),
        watchNamespaces: (opts.watchNamespaces ?? '')
          .split(',')
          .map((n) => n.trim())
          .filter(Boolean),
        leaseName: String(opts.leaseName),
        logger,
      },
    );
  });

program
  .command('console')
  .description('serve the web console (docs/console.md) with your own Kubernetes identity')
  .addOption(
    new Option(
      '--kubeconfig <file>',
      'kubeconfig file (default: $KUBECONFIG or ~/.kube/config; in-cluster with --auth token)',
    ).env('INTAKE_KUBECONFIG'),
  )
  .addOption(
    new Option('--listen <host:port>', 'where to serve; kubeconfig mode only on loopback')
      .default('127.0.0.1:9090')
      .env('INTAKE_CONSOLE_LISTEN'),
  )
  .addOption(
    new Option(
      '--auth <mode>',
      "kubeconfig: your kubeconfig's identity, a one-time URL token; token: each user signs in with a Kubernetes token (in the cluster)",
    )
      .choices(['kubeconfig', 'token'])
      .default('kubeconfig')
      .env('INTAKE_CONSOLE_AUTH'),
  )
  .addOption(
    new Option('--ingest-url <url>', "reach the ingesters here for test events instead of status.url's host").env(
      'INTAKE_CONSOLE_INGEST_URL',
    ),
  )
  .addOption(
    new Option('--allowed-hosts <list>', 'token mode: comma-separated Host header values to answer (default: any)').env(
      'INTAKE_CONSOLE_ALLOWED_HOSTS',
    ),
  )
  .addOption(
    new Option('--secure-cookie', 'mark the session cookie Secure (served over HTTPS)').env(
      'INTAKE_CONSOLE_SECURE_COOKIE',
    ),
  )
  // What one user may hold of what every user of the console shares (docs/console.md "Bounds").
  .addOption(
    new Option('--max-sessions-per-user <n>', "sessions one user holds; a new one ends that user's oldest")
      .default('5')
      .env('INTAKE_CONSOLE_MAX_SESSIONS_PER_USER'),
  )
  .addOption(
    new Option('--max-live-streams <n>', 'open pages followed live at once (each holds two watches)')
      .default('200')
      .env('INTAKE_CONSOLE_MAX_LIVE_STREAMS'),
  )
  .addOption(
    new Option('--max-live-streams-per-user <n>', 'token mode: open pages one user may have followed live')
      .default('20')
      .env('INTAKE_CONSOLE_MAX_LIVE_STREAMS_PER_USER'),
  )
  .addOption(
    new Option('--max-mapping-runs-per-user <n>', 'spec.mapping.tests runs one user may have going at once')
      .default('1')
      .env('INTAKE_CONSOLE_MAX_MAPPING_RUNS_PER_USER'),
  )
  .addOption(
    new Option('--mapping-workers <n>', 'worker processes evaluating the mapping tests (started when first needed)')
      .default('2')
      .env('INTAKE_CONSOLE_MAPPING_WORKERS'),
  )
  .addOption(
    new Option('--log-level <level>', 'operational log level')
      .choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info')
      .env('INTAKE_LOG_LEVEL'),
  )
  .action(async (opts: Record<string, string | boolean | undefined>) => {
    const listen = parseListen(String(opts.listen), '--listen');
    const mode = opts.auth === 'token' ? 'token' : 'kubeconfig';
    if (mode === 'kubeconfig' && !/^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(listen.host))
      throw new ConfigError('--listen: in kubeconfig mode the console serves on loopback only (it acts as you)');
    if (opts.ingestUrl !== undefined && !/^https?:\/\/[^\s/]+/.test(String(opts.ingestUrl)))
      throw new ConfigError(`--ingest-url must be an http(s) URL, got ${JSON.stringify(opts.ingestUrl)}`);
    const int = (name: string): number => {
      const n = Number(opts[name]);
      if (!Number.isInteger(n) || n <= 0)
        throw new ConfigError(`--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} must be a positive integer`);
      return n;
    };
    const bounds = {
      maxSessionsPerUser: int('maxSessionsPerUser'),
      maxLiveStreams: int('maxLiveStreams'),
      maxLiveStreamsPerUser: int('maxLiveStreamsPerUser'),
      maxMappingRunsPerUser: int('maxMappingRunsPerUser'),
      mappingWorkers: int('mappingWorkers'),
    };
    const { KubeConfig } = await import('@kubernetes/client-node');
    const kubeConfig = new KubeConfig();
    if (opts.kubeconfig) kubeConfig.loadFromFile(String(opts.kubeconfig));
    else if (mode === 'token') kubeConfig.loadFromCluster();
    else kubeConfig.loadFromDefault();
    const logger = createLogger(String(opts.logLevel), 'console');
    const { startConsole } = await import('../console/server/main.js');
    const running = await startConsole({
      kubeConfig,
      mode,
      host: listen.host,
      port: listen.port,
      ...(opts.ingestUrl ? { ingestUrl: String(opts.ingestUrl) } : {}),
      ...(opts.allowedHosts
        ? {
            allowedHosts: String(opts.allowedHosts)
              .split(',')
              .map((h) => h.trim())
              .filter(Boolean),
          }
        : {}),
      secureCookie: Boolean(opts.secureCookie),
      ...bounds,
      logger,
    });
    // The URL (with its one-time token in kubeconfig mode) goes to stdout only, never to the log.
    process.stdout.write(
      mode === 'kubeconfig'
        ? `intake console: open ${running.url}\n(the link works once; it signs this browser in until the console stops)\n`
        : `intake console: serving on ${running.url} (users sign in with a Kubernetes token)\n`,
    );
    const stop = (): void => {
      running.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });

/** The operator's --default-limits over the built-in defaults; --default-max-series is the API key series default. */
function defaultLimits(value: string | boolean | undefined, defaultMaxSeries: number): TenantLimitDefaults {
  const base = mergeTenantLimitDefaults(DEFAULT_TENANT_LIMITS, { apiKey: { maxSeries: defaultMaxSeries } });
  if (typeof value !== 'string' || value.trim() === '') return base;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new ConfigError('--default-limits must be JSON, e.g. {"namespace":{"eventsPerSecond":1000}}');
  }
  const validate = new Ajv({ allErrors: true, strict: false }).compile(tenantLimitDefaultsSchema);
  if (!validate(parsed))
    throw new ConfigError(
      `--default-limits: ${(validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}${e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : ''}`).join('; ')}`,
    );
  return mergeTenantLimitDefaults(base, parsed as PartialTenantLimitDefaults);
}

/** The operator's --destinations: names as the ingester config spells them (destinations[].name). */
async function destinationNames(value: string | boolean | undefined): Promise<string[]> {
  const { DESTINATION_NAME_PATTERN } = await import('../ingester/destinations/settings.js');
  const names =
    typeof value === 'string'
      ? value
          .split(',')
          .map((n) => n.trim())
          .filter(Boolean)
      : [];
  const bad = names.find((n) => !new RegExp(DESTINATION_NAME_PATTERN).test(n));
  if (bad !== undefined)
    throw new ConfigError(
      `--destinations: ${JSON.stringify(bad)} is not a destination name (lowercase letters, digits and dashes, at most 63)`,
    );
  return [...new Set(names)];
}

/**
 * The ingester's API client: a small list-watch client, not @kubernetes/client-node (about 50 MiB
 * of RSS for two informers; kube/api-connection.ts). One per process: both informers share its
 * keep-alive connections.
 */
let ingesterApi: Promise<import('../kube/api-client.js').KubeApiClient> | undefined;
function ingesterApiClient(kubeconfig: string | undefined) {
  ingesterApi ??= Promise.all([import('../kube/api-client.js'), import('../kube/api-connection.js')]).then(
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
    import('../ingester/limits/replicas.js'),
    ingesterApiClient(kubeconfig),
  ]);
  return new EndpointSliceReplicas(api, namespace, service, logger);
}

/** Kubernetes mode (route Secrets) when a namespace is given, else standalone (the config file). */
async function routeSource(
  namespace: string | undefined,
  kubeconfig: string | undefined,
  config: string,
  destinations: IngesterSettings['destinations'],
  logger: ReturnType<typeof createLogger>,
): Promise<RouteSource> {
  if (namespace) {
    const [{ KubernetesRouteSource }, api] = await Promise.all([
      import('../ingester/routing/kubernetes-source.js'),
      ingesterApiClient(kubeconfig),
    ]);
    return new KubernetesRouteSource(api, namespace, logger);
  }
  const [{ FileRouteSource }, { checkSettingsFile }] = await Promise.all([
    import('../ingester/routing/file-source.js'),
    import('../ingester/config.js'),
  ]);
  return new FileRouteSource(config, destinations, checkSettingsFile);
}

// Dead letters (mapping and delivery failures) live in the ingester's store; these talk to its
// admin listener (ingester/dead-letters/admin-routes.ts).
const deadletter = program
  .command('deadletter')
  .description(
    'what intake accepted but could not finish, kept for replay: payloads a mapping could not turn into events (kind mapping, answered 422) and events a destination gave up on (kind delivery)',
  );
const adminUrlOption = () =>
  new Option('--admin-url <url>', "the ingester's admin listener")
    .default('http://127.0.0.1:8081')
    .env('INTAKE_ADMIN_URL');
const kindOption = () => new Option('--kind <kind>', 'only this kind').choices(['mapping', 'delivery']);
const deadLetterQuery = (
  opts: Record<string, string | boolean | undefined>,
  extra: Record<string, string> = {},
): string => {
  const q = new URLSearchParams(extra);
  for (const key of ['kind', 'namespace', 'integration', 'destination', 'id', 'seq', 'limit'] as const)
    if (typeof opts[key] === 'string') q.set(key, opts[key]);
  return q.size > 0 ? `?${q}` : '';
};
// A state-changing admin call carries what a cross-site page cannot send (ingester/http/admin-guard.ts).
const ADMIN_WRITE = { headers: { 'content-type': 'application/json', 'x-intake-admin': 'true' }, body: '{}' };
const adminCall = async (url: string, method: string): Promise<Record<string, unknown>> => {
  let res: Response;
  try {
    res = await fetch(url, { method, ...(method === 'GET' ? {} : ADMIN_WRITE) });
  } catch (err) {
    throw new ConfigError(
      `cannot reach the ingester's admin listener at ${url}: ${((err as Error).cause as Error | undefined)?.message ?? (err as Error).message}`,
    );
  }
  const body = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new ConfigError(`${method} ${url}: ${res.status} ${JSON.stringify(body)}`);
  return body;
};
const withFilters = (c: Command): Command =>
  c
    .addOption(adminUrlOption())
    .addOption(kindOption())
    .option('--namespace <ns>', 'only this namespace')
    .option('--integration <name>', 'only this integration')
    .option('--destination <name>', 'only this destination (kind delivery)')
    .option('--id <id,...>', 'only these dead letters (ids from list)')
    .option('--limit <n>', 'at most this many (default 1000)');
type Letter = {
  id: string;
  kind: string;
  at: string;
  namespace: string;
  integration: string;
  destination?: string;
  reason: string;
  attempts?: number;
};
withFilters(
  deadletter
    .command('list')
    .description('list kept dead letters (id, time, kind, namespace/integration, destination, why)'),
)
  .option('--json', 'print the full JSON, payloads and events included')
  .action(async (opts: Record<string, string | boolean | undefined>) => {
    const body = await adminCall(
      `${opts.adminUrl}/deadletter${deadLetterQuery(opts, opts.json ? { payload: 'true' } : {})}`,
      'GET',
    );
    if (opts.json) return void process.stdout.write(`${inertJson(JSON.stringify(body, null, 2))}\n`);
    const entries = body.entries as Letter[];
    for (const e of entries) {
      const to = e.destination ? `  -> ${e.destination} after ${e.attempts} attempt(s)` : '';
      // A letter's reason quotes the mapping's or the receiver's words: printed inert.
      process.stdout.write(
        `${inertText(`${e.id}  ${e.at}  ${e.kind}  ${e.namespace}/${e.integration}${to}  ${e.reason}`)}\n`,
      );
    }
    process.stdout.write(
      `${entries.length} dead letter(s) listed; the store (${body.store}) holds ${body.bytes} bytes\n`,
    );
  });
withFilters(
  deadletter
    .command('replay')
    .description(
      "replay kept dead letters once each: a mapping failure through its integration's current mapping, a delivery failure back to its destination; replayed ones are removed",
    ),
).action(async (opts: Record<string, string | boolean | undefined>) => {
  const body = await adminCall(`${opts.adminUrl}/deadletter/replay${deadLetterQuery(opts)}`, 'POST');
  for (const r of body.results as Array<{
    id: string;
    kind: string;
    integration: string;
    destination?: string;
    result: string;
    events?: number;
    message?: string;
  }>) {
    const what =
      r.result === 'delivered'
        ? r.kind === 'mapping'
          ? `delivered ${r.events} event(s)`
          : `handed back to ${r.destination}`
        : `${r.result}: ${r.message}`;
    process.stdout.write(`${inertText(`${r.id}  ${r.kind}  ${r.integration}  ${what}`)}\n`);
  }
  process.stdout.write(
    `${body.replayed} replayed, ${body.failed} failed, ${body.skipped} skipped (held by another replay)\n`,
  );
  if (Number(body.failed) > 0) process.exitCode = 1;
});

// What each integration and API key received (ingester/activity/), from the admin listener of a
// running ingester: in Kubernetes mode the same is in status.activity (kubectl get, describe).
program
  .command('status')
  .description(
    'what each integration and API key received on a running ingester: last event, events and refusals over the last hour by reason, recent refusals',
  )
  .addOption(adminUrlOption())
  .option('--json', 'print the report as JSON (GET /status/activity)')
  .action(async (opts: Record<string, string | boolean | undefined>) => {
    const body = await adminCall(`${opts.adminUrl}/status/activity`, 'GET');
    if (opts.json) return void process.stdout.write(`${inertJson(JSON.stringify(body, null, 2))}\n`);
    const { activityTable } = await import('./activity-table.js');
    process.stdout.write(activityTable(body as unknown as ActivityReport));
  });

// Deprecated for one release: `intake undelivered` is `intake deadletter --kind delivery`.
const deprecated = (): void =>
  void process.stderr.write(
    'intake: `intake undelivered` is deprecated and goes away in the next release; use `intake deadletter list|replay --kind delivery`\n',
  );
const undelivered = program.command('undelivered').description('deprecated: use `intake deadletter --kind delivery`');
// They call the deprecated admin routes, which answer as before.
const undeliveredQuery = (opts: Record<string, string | boolean | undefined>): string => {
  const q = new URLSearchParams();
  for (const key of ['destination', 'seq', 'limit'] as const) if (typeof opts[key] === 'string') q.set(key, opts[key]);
  return q.size > 0 ? `?${q}` : '';
};
undelivered
  .command('list')
  .description('deprecated: intake deadletter list --kind delivery')
  .addOption(adminUrlOption())
  .option('--destination <name>', 'only this destination')
  .option('--limit <n>', 'at most this many (default 1000)')
  .option('--json', 'print the full JSON, events included')
  .action(async (opts: Record<string, string | boolean | undefined>) => {
    deprecated();
    const body = await adminCall(`${opts.adminUrl}/destinations/deadletter${undeliveredQuery(opts)}`, 'GET');
    if (opts.json) return void process.stdout.write(`${inertJson(JSON.stringify(body, null, 2))}\n`);
    const items = body.items as Array<{
      seq: number;
      destination: string;
      reason: string;
      error: string;
      attempts: number;
      failedAt: string;
      event: { id: string; namespace: string; integration: string };
    }>;
    for (const i of items)
      process.stdout.write(
        `${inertText(`${i.seq}  ${i.failedAt}  ${i.destination}  ${i.reason} after ${i.attempts} attempt(s)  ${i.event.namespace}/${i.event.integration}  ${i.event.id}  ${i.error}`)}\n`,
      );
    process.stdout.write(`${items.length} event(s) kept\n`);
  });
undelivered
  .command('replay')
  .description('deprecated: intake deadletter replay --kind delivery')
  .addOption(adminUrlOption())
  .option('--destination <name>', 'only this destination')
  .option('--seq <n,...>', 'only these positions (from list)')
  .action(async (opts: Record<string, string | boolean | undefined>) => {
    deprecated();
    const body = await adminCall(`${opts.adminUrl}/destinations/deadletter/replay${undeliveredQuery(opts)}`, 'POST');
    process.stdout.write(`${body.replayed} event(s) handed back for delivery\n`);
  });

// `intake deadletter list | head`: a reader that closes the pipe early is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

program.parseAsync(process.argv).catch((err: Error) => {
  const known = err instanceof ConfigError || (err as { code?: string }).code === 'EADDRINUSE';
  process.stderr.write(`intake: ${known ? err.message : (err.stack ?? err.message)}\n`);
  process.exit(2);
});
