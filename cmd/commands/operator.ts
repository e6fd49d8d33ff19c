/**
 * `intake operator`: turn WebhookIntegration and ApiKey resources into credentials Secrets and
 * routes; `intake operator cleanup`: what is left to remove once it is gone for good.
 */
import { Ajv } from 'ajv';
import { Command, Option } from 'commander';
import {
  DEFAULT_TENANT_LIMITS,
  mergeTenantLimitDefaults,
  tenantLimitDefaultsSchema,
  type PartialTenantLimitDefaults,
  type TenantLimitDefaults,
} from '../../api/limits.js';
import { ConfigError, parseListen } from '../../common/config-files.js';
import { createLogger } from '../../common/logger.js';
import {
  commaList,
  durationMs,
  httpUrl,
  kubeconfigOption,
  leaseNameOption,
  logLevelOption,
  namespaceOption,
  positiveInt,
  watchNamespacesOption,
} from '../options.js';
import { stopOnSignals } from '../run.js';

export function operatorCommand(): Command {
  const operator = new Command('operator')
    .description('turn WebhookIntegration and ApiKey resources into credentials Secrets and routes')
    .addOption(kubeconfigOption())
    // Required, checked in the action: Commander would require a parent's mandatory options of its
    // subcommands too (`operator cleanup` needs no --public-base-url).
    .addOption(namespaceOption('namespace of the ingesters, where route Secrets and the leader Lease live (required)'))
    .addOption(
      new Option(
        '--public-base-url <url>',
        'base URL senders use, for status.url and the credentials Secret (required)',
      ).env('INTAKE_PUBLIC_BASE_URL'),
    )
    .addOption(watchNamespacesOption('comma-separated namespaces to watch (default: all)'))
    .addOption(
      new Option('--leader-elect', 'run only while holding the Lease (for several replicas)').env(
        'INTAKE_LEADER_ELECT',
      ),
    )
    .addOption(leaseNameOption('name of the leader Lease'))
    .addOption(
      new Option('--admin-listen <host:port>', 'admin listener: /healthz /readyz /metrics')
        .default('127.0.0.1:8082')
        .env('INTAKE_ADMIN_LISTEN'),
    )
    .addOption(
      new Option('--default-max-series <n>', 'series cap for an ApiKey without spec.maxSeries').default('10000'),
    )
    .addOption(
      new Option(
        '--max-destinations-per-namespace <n>',
        "a namespace's own Destinations published to the ingesters, the oldest first (the rest: Ready=False, TooManyDestinations)",
      )
        .default('16')
        .env('INTAKE_MAX_DESTINATIONS_PER_NAMESPACE'),
    )
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
        '--resync-period <duration>',
        'reconcile everything this often (picks up changes to referenced Secrets), e.g. 5m',
      ).default('5m'),
    )
    .addOption(new Option('--workers <n>', 'concurrent reconciles (each mostly waits on the API server)').default('32'))
    .addOption(
      new Option(
        '--ingester-admin-service <name>',
        "the ingesters' admin Service in --namespace: its EndpointSlices list the replicas whose activity and deliveries are merged into status.activity and a Destination's status.delivery (default: neither)",
      ).env('INTAKE_INGESTER_ADMIN_SERVICE'),
    )
    .addOption(
      new Option(
        '--activity-interval <duration>',
        'ask every ingester replica for its activity this often, e.g. 30s (at least 1s)',
      )
        .default('30s')
        .env('INTAKE_ACTIVITY_INTERVAL'),
    )
    .addOption(
      new Option(
        '--activity-writes-per-second <n>',
        'at most this many status.activity and status.delivery writes a second, across every resource',
      ).default('20'),
    )
    .addOption(logLevelOption('info'))
    .action(runOperator);
  operator.addCommand(cleanupCommand());
  return operator;
}

async function runOperator(opts: Record<string, string | boolean | undefined>, command: Command): Promise<void> {
  for (const [key, flag] of [
    ['namespace', '--namespace <ns>'],
    ['publicBaseUrl', '--public-base-url <url>'],
  ] as const)
    if (!opts[key]) command.error(`error: required option '${flag}' not specified`);
  const publicBaseUrl = httpUrl(opts, 'publicBaseUrl');
  const logger = createLogger(String(opts.logLevel), 'operator');
  const { startOperator } = await import('../../operator/main.js');
  const running = await startOperator(
    {
      ...(opts.kubeconfig ? { kubeconfig: String(opts.kubeconfig) } : {}),
      namespace: String(opts.namespace),
      watchNamespaces: commaList(opts.watchNamespaces),
      publicBaseUrl,
      leaderElect: Boolean(opts.leaderElect),
      leaseName: String(opts.leaseName),
      adminListen: parseListen(String(opts.adminListen), '--admin-listen'),
      defaultMaxSeries: positiveInt(opts, 'defaultMaxSeries'),
      maxDestinationsPerNamespace: positiveInt(opts, 'maxDestinationsPerNamespace'),
      destinations: await destinationNames(opts.destinations),
      limitDefaults: defaultLimits(opts.defaultLimits, positiveInt(opts, 'defaultMaxSeries')),
      resyncPeriodMs: durationMs(opts, 'resyncPeriod'),
      workers: positiveInt(opts, 'workers'),
      ...(opts.ingesterAdminService
        ? {
            activity: {
              service: String(opts.ingesterAdminService),
              intervalMs: durationMs(opts, 'activityInterval'),
              writesPerSecond: positiveInt(opts, 'activityWritesPerSecond'),
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
  stopOnSignals({ stop: () => running.stop(), logger });
}

function cleanupCommand(): Command {
  return new Command('cleanup')
    .description(
      "after the operator is gone for good (the chart's post-delete hook): delete its route Secrets and leader Lease",
    )
    .addOption(kubeconfigOption())
    .addOption(
      namespaceOption("the operator's --namespace: where its route Secrets and Lease are").makeOptionMandatory(),
    )
    .addOption(leaseNameOption("the operator's leader Lease"))
    .addOption(logLevelOption('info'))
    .action(async (opts: Record<string, string | undefined>) => {
      const logger = createLogger(String(opts.logLevel), 'operator-cleanup');
      const [{ CoordinationV1Api, CoreV1Api }, { loadKubeConfig }, { cleanupAfterOperator }] = await Promise.all([
        import('@kubernetes/client-node'),
        import('../../kube/config.js'),
        import('../../operator/cleanup.js'),
      ]);
      const kc = loadKubeConfig(opts.kubeconfig);
      await cleanupAfterOperator(
        {
          core: kc.makeApiClient(CoreV1Api),
          coordination: kc.makeApiClient(CoordinationV1Api),
        },
        {
          namespace: String(opts.namespace),
          leaseName: String(opts.leaseName),
          logger,
        },
      );
    });
}

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
  const { DESTINATION_NAME_PATTERN } = await import('../../ingester/destinations/settings.js');
  const names = commaList(value);
  const bad = names.find((n) => !new RegExp(DESTINATION_NAME_PATTERN).test(n));
  if (bad !== undefined)
    throw new ConfigError(
      `--destinations: ${JSON.stringify(bad)} is not a destination name (lowercase letters, digits and dashes, at most 63)`,
    );
  return [...new Set(names)];
}
