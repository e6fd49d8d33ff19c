/** Wires the operator: leader election, the controller, and the admin listener. */
import { hostname } from 'node:os';
import type { AddressInfo } from 'node:net';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { TenantLimitDefaults } from '../api/limits.js';
import type { Listen } from '../common/config-files.js';
import { loadKubeConfig } from '../kube/config.js';
import { LeaderElector } from '../kube/leader.js';
import { MappingWorkerPool, logWorkerPriority } from '../api/mapping/worker-pool.js';
import { Controller } from './controller.js';
import { OperatorMetrics } from './metrics.js';
import type { ActivitySettings } from './activity/sync.js';

export interface OperatorSettings {
  kubeconfig?: string;
  namespace: string;
  watchNamespaces: string[];
  publicBaseUrl: string;
  leaderElect: boolean;
  leaseName: string;
  adminListen: Listen;
  defaultMaxSeries: number;
  /** A namespace's own Destinations published, the oldest first. */
  maxDestinationsPerNamespace: number;
  /** Destination names the ingesters are configured with (spec.destinations must name these). */
  destinations: string[];
  /** Cluster defaults of the per-tenant limits (chart values tenantLimits), under any IntakeQuota. */
  limitDefaults: TenantLimitDefaults;
  resyncPeriodMs: number;
  workers: number;
  /** Collect the ingesters' activity into status.activity (absent: off). */
  activity?: ActivitySettings;
}

export interface RunningOperator {
  adminUrl: string;
  stop(): Promise<void>;
}

export async function startOperator(
  s: OperatorSettings,
  logger: Logger,
  onFatal: (reason: string) => void,
): Promise<RunningOperator> {
  const kubeConfig = loadKubeConfig(s.kubeconfig);
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'intake_operator_' });
  const metrics = new OperatorMetrics(registry);
  // Tenants' mapping tests run in one worker process, stopped at the CPU limit: a hostile
  // expression cannot hold the controller.
  const mappingWorkers = new MappingWorkerPool({
    size: 1,
    onWorkerLost: (reason) => logger.warn({ reason }, 'mapping test worker killed or ended, and replaced'),
    onFirstWorker: logWorkerPriority(logger, 'mapping test workers'),
  });
  const controller = new Controller({
    kubeConfig,
    namespace: s.namespace,
    watchNamespaces: s.watchNamespaces,
    publicBaseUrl: s.publicBaseUrl.replace(/\/+$/, ''),
    defaultMaxSeries: s.defaultMaxSeries,
    maxDestinationsPerNamespace: s.maxDestinationsPerNamespace,
    destinations: s.destinations,
    limitDefaults: s.limitDefaults,
    resyncPeriodMs: s.resyncPeriodMs,
    workers: s.workers,
    metrics,
    logger,
    mappingRunner: mappingWorkers,
    ...(s.activity ? { activity: s.activity } : {}),
  });
  const state = { leading: !s.leaderElect };
  const admin = buildAdmin(registry, () => !state.leading || controller.synced, logger);
  await admin.listen({ host: s.adminListen.host, port: s.adminListen.port });
  const address = admin.server.address() as AddressInfo;
  const adminUrl = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;

  const elector = s.leaderElect
    ? new LeaderElector({
        kubeConfig,
        namespace: s.namespace,
        name: s.leaseName,
        identity: `${hostname()}-${process.pid}`,
        logger,
      })
    : undefined;
  const run = async (): Promise<void> => {
    if (elector) {
      logger.info({ lease: `${s.namespace}/${s.leaseName}` }, 'waiting for leadership');
      await elector.acquire(() => onFatal('leadership lost'));
    }
    state.leading = true;
    metrics.leader.set(1);
    await controller.run();
  };
  run().catch((err: Error) => onFatal(`controller failed: ${err.message}`));
  logger.info(
    {
      admin: adminUrl,
      namespace: s.namespace,
      watchNamespaces: s.watchNamespaces,
      leaderElect: s.leaderElect,
      destinations: s.destinations,
      activity: s.activity ?? 'off',
    },
    'operator started',
  );

  return {
    adminUrl,
    stop: async () => {
      controller.stop();
      metrics.leader.set(0);
      await elector?.release();
      await admin.close();
      await mappingWorkers.close();
    },
  };
}

function buildAdmin(registry: Registry, ready: () => boolean, logger: Logger): FastifyInstance {
  const app = Fastify({
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true }),
  }) as unknown as FastifyInstance;
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) =>
    ready() ? { status: 'ready' } : reply.code(503).send({ status: 'caches not synced' }),
  );
  app.get('/metrics', async (_req, reply) => reply.type(registry.contentType).send(await registry.metrics()));
  return app;
}
