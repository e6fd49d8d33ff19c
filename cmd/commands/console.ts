/** `intake console`: serve the web console (docs/console.md) with your own Kubernetes identity. */
import { Command, Option } from 'commander';
import { ConfigError, parseListen } from '../../common/config-files.js';
import { createLogger } from '../../common/logger.js';
import { commaList, httpUrl, kubeconfigOption, logLevelOption, positiveInt } from '../options.js';
import { stopOnSignals } from '../run.js';

export function consoleCommand(): Command {
  return (
    new Command('console')
      .description('serve the web console (docs/console.md) with your own Kubernetes identity')
      .addOption(
        kubeconfigOption('kubeconfig file (default: $KUBECONFIG or ~/.kube/config; in-cluster with --auth token)'),
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
        new Option(
          '--ingester-admin-url <url>',
          "the ingesters' admin listener: the event inspector's captured requests, the destination pages' dead letters and platform destinations (absent: none of them)",
        ).env('INTAKE_CONSOLE_INGESTER_ADMIN_URL'),
      )
      .addOption(
        new Option(
          '--allowed-hosts <list>',
          'token mode: comma-separated Host header values to answer (default: any)',
        ).env('INTAKE_CONSOLE_ALLOWED_HOSTS'),
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
      .addOption(logLevelOption('info'))
      .action(runConsole)
  );
}

async function runConsole(opts: Record<string, string | boolean | undefined>): Promise<void> {
  const listen = parseListen(String(opts.listen), '--listen');
  const mode = opts.auth === 'token' ? 'token' : 'kubeconfig';
  if (mode === 'kubeconfig' && !/^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(listen.host))
    throw new ConfigError('--listen: in kubeconfig mode the console serves on loopback only (it acts as you)');
  if (opts.ingestUrl !== undefined) httpUrl(opts, 'ingestUrl');
  if (opts.ingesterAdminUrl !== undefined) httpUrl(opts, 'ingesterAdminUrl');
  const bounds = {
    maxSessionsPerUser: positiveInt(opts, 'maxSessionsPerUser'),
    maxLiveStreams: positiveInt(opts, 'maxLiveStreams'),
    maxLiveStreamsPerUser: positiveInt(opts, 'maxLiveStreamsPerUser'),
    maxMappingRunsPerUser: positiveInt(opts, 'maxMappingRunsPerUser'),
    mappingWorkers: positiveInt(opts, 'mappingWorkers'),
  };
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kubeConfig = new KubeConfig();
  if (opts.kubeconfig) kubeConfig.loadFromFile(String(opts.kubeconfig));
  else if (mode === 'token') kubeConfig.loadFromCluster();
  else kubeConfig.loadFromDefault();
  const logger = createLogger(String(opts.logLevel), 'console');
  const { startConsole } = await import('../../console/server/main.js');
  const running = await startConsole({
    kubeConfig,
    mode,
    host: listen.host,
    port: listen.port,
    ...(opts.ingestUrl ? { ingestUrl: String(opts.ingestUrl) } : {}),
    ...(opts.ingesterAdminUrl ? { ingesterAdminUrl: String(opts.ingesterAdminUrl).replace(/\/+$/, '') } : {}),
    ...(opts.allowedHosts ? { allowedHosts: commaList(opts.allowedHosts) } : {}),
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
  stopOnSignals({ stop: () => running.close(), logger });
}
