#!/usr/bin/env node
/** The `intake` command: one entry point for every component. */
import { Command, Option } from 'commander';
import { ConfigError, readYamlFile, resolveSettings } from '../ingester/config.js';
import { createLogger } from '../ingester/logger.js';
import { startIngester } from '../ingester/main.js';
import { FileRouteSource } from '../ingester/route-sources/file.js';

const program = new Command('intake').description('Kubernetes-native ingestion of monitoring events and metric data points').showHelpAfterError();

program
  .command('ingester')
  .description('accept events and metric data points over HTTP (standalone with --config, or from route Secrets)')
  .addOption(new Option('-c, --config <file>', 'YAML config file: settings and, in standalone mode, routes').env('INTAKE_CONFIG'))
  .addOption(new Option('--listen <host:port>', 'ingest listener (default 127.0.0.1:8080)').env('INTAKE_LISTEN'))
  .addOption(new Option('--admin-listen <host:port>', 'admin listener: /healthz /readyz /metrics /metrics/ingested (default 127.0.0.1:8081)').env('INTAKE_ADMIN_LISTEN'))
  .addOption(new Option('--tls-cert <file>', 'serve HTTPS with this certificate (reloaded on change)').env('INTAKE_TLS_CERT'))
  .addOption(new Option('--tls-key <file>', 'private key for --tls-cert').env('INTAKE_TLS_KEY'))
  .addOption(new Option('--events-log <file>', 'where the log sink writes events, one JSON line each ("-" = stdout)').env('INTAKE_EVENTS_LOG'))
  .addOption(new Option('--trust-proxy <value>', 'trust X-Forwarded-For from: true, a hop count, or comma-separated CIDRs').env('INTAKE_TRUST_PROXY'))
  .addOption(new Option('--log-level <level>', 'operational log level').choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).env('INTAKE_LOG_LEVEL'))
  .action(async (opts: Record<string, string | undefined>) => {
    const file = opts.config ? readYamlFile(opts.config) : {};
    const settings = resolveSettings(file, opts, opts.config ?? 'config');
    const logger = createLogger(settings.logLevel);
    if (!opts.config) throw new ConfigError('--config is required until Kubernetes mode is available: it lists the routes');
    const running = await startIngester(settings, new FileRouteSource(opts.config), logger);
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
  });

program.parseAsync(process.argv).catch((err: Error) => {
  const known = err instanceof ConfigError || (err as { code?: string }).code === 'EADDRINUSE';
  process.stderr.write(`intake: ${known ? err.message : (err.stack ?? err.message)}\n`);
  process.exit(2);
});
