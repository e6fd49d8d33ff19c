/** Wires the ingester together: settings, route source, sinks, both listeners, reloads, shutdown. */
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server as HttpsServer } from 'node:https';
import { watch } from 'chokidar';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { buildAdminServer } from './http/admin-listener.js';
import { AuthThrottle } from './auth/auth-throttle.js';
import type { IngesterSettings } from './config.js';
import { IngesterMetrics } from './core/ingester-metrics.js';
import {
  RouteTable,
  type AppliedChanges,
  type RouteChange,
  type RouteEntry,
  type RouteInput,
  type SkippedRoute,
} from './routing/route-table.js';
import type { RouteSource } from './routing/route-source.js';
import { SeriesStore } from './series/series-store.js';
import { ingestConnectionCap, openFilesLimit } from './http/guards.js';
import type { Lifecycle } from './http/context.js';
import { buildIngestServer } from './http/listener.js';
import { ActivityRecorder } from './activity/recorder.js';
import { registerDeadLetterEndpoints } from './dead-letters/admin-endpoints.js';
import { registerDestinationEndpoints } from './destinations/admin-endpoints.js';
import { registerDeliveryStatus } from './destinations/status/delivery-report.js';
import { finishInterruptedReplays, type DeadLetterReplayers } from './dead-letters/dead-letter-replay.js';
import type { DeadLetterMetrics } from './dead-letters/metrics.js';
import type { DeadLetterStore } from './dead-letters/model.js';
import { setUpDeadLetters } from './dead-letters/setup.js';
import { BulkReplays } from './dead-letters/bulk-replay.js';
import { MappingMetrics } from './mapping/metrics.js';
import { MappedWebhooks } from './mapping/mapped-webhooks.js';
import { RouteDecider } from './routing/rule-decisions.js';
import { loadMappingEngineFor } from '../api/mapping/mapping-engine-loader.js';
import { MappingWorkerPool, logWorkerPriority } from '../api/mapping/worker-pool.js';
import type { Route } from '../api/route.js';
import { replayMapping } from './events/mapping-replay.js';
import { registerInspector, setUpInspector } from './inspector/setup.js';
import { LogSink } from './sinks/log-sink.js';
import { DISK_RESERVE_BYTES } from './storage/disk-reserve.js';
import { OUTBOX_WAL_SIZE_LIMIT_BYTES } from './storage/sqlite-space.js';
import { checkStoreVolume } from './storage/volume-check.js';
import type { ReplicaCount } from './limits/replicas.js';
import type { TeamDestinationSource } from './destinations/team/kubernetes-destinations.js';
import { TenantLimiter } from './limits/tenant-limiter.js';
import { registerLimitMetrics } from './limits/limit-metrics.js';
import type { EventSink } from './sinks/sink.js';
import { startTracing, stopTracing } from './tracing/tracing.js';
import { useServingV8Flags } from './serving-v8-flags.js';

export interface RunningIngester {
  ingestUrl: string;
  adminUrl: string;
  metrics: IngesterMetrics;
  /** Unready, stop accepting, finish in-flight requests, flush sinks. */
  shutdown(): Promise<void>;
  /** Reopens files the ingester appends to (log rotation: SIGHUP). */
  reopenFiles(): void;
}

const SWEEP_INTERVAL_MS = 30_000;
const KEEP_ALIVE_GRACE_MS = 1000;

/**
 * `replicas`: Kubernetes mode, the ready replicas sharing the per-tenant limits (standalone: 1).
 * The steps, in order: the hand-off sinks, the dead-letter store, destinations, remote write,
 * mapping and limits, the first routing table, the listeners; shutdown undoes them in reverse.
 */
export async function startIngester(
  settings: IngesterSettings,
  source: RouteSource,
  logger: Logger,
  replicas?: ReplicaCount,
  /** Kubernetes mode: the teams' own destinations (`Destination` resources), kept live. */
  teamDestinations?: TeamDestinationSource,
): Promise<RunningIngester> {
  // Loading until the first routing table is installed: the ports listen, ingest answers 503.
  const lifecycle: Lifecycle = { ready: false, closing: false, loading: true };
  // Before the routes are built: their handlers are wrapped only while tracing is on.
  await startTracing(process.env, logger);
  const registry = new Registry();
  const series = new SeriesStore({
    ttlMs: settings.limits.seriesTTLSeconds * 1000,
    maxSeriesTotal: settings.limits.maxSeriesTotal,
    maxSeriesPerNamespace: settings.limits.maxSeriesPerNamespace,
  });
  const metrics = new IngesterMetrics(registry, series);
  let table = RouteTable.empty();
  const routes = (): RouteTable => table;

  const handOff = await startSinks(settings, registry, logger);
  // Mapping and delivery failures, one store (the bus, the storage directory, or a local file).
  const deadLetters = await setUpDeadLetters({
    settings: settings.deadLetter,
    ...(handOff.bus ? { bus: handOff.bus } : {}),
    ...(settings.spool ? { storageDir: settings.spool.path } : {}),
    registry,
    logger,
  });
  const destinations = await setUpDestinationsIfAny(
    settings,
    routes,
    handOff,
    deadLetters.store,
    registry,
    logger,
    teamDestinations !== undefined,
  );
  if (destinations?.sink) handOff.sinks.push(destinations.sink);
  const remoteWrite = settings.remoteWrite
    ? new (await import('./series/remote-write/writer.js')).RemoteWriter(settings.remoteWrite, {
        registry,
        logger,
        seriesTtlMs: settings.limits.seriesTTLSeconds * 1000,
        rejected: metrics.pointsRejected,
      })
    : undefined;
  const { mappingWorkers, limiter, mapped } = setUpMappingAndLimits(
    settings,
    source,
    metrics,
    deadLetters.store,
    registry,
    logger,
  );
  replicas?.start((n) => limiter.setReplicas(n));
  registerLimitMetrics(registry, limiter);

  const activity = new ActivityRecorder();
  // Captures of integrations that enabled the event inspector (inspector/; docs/inspector.md).
  const inspector = await setUpInspector({
    settings: settings.inspector,
    routes,
    logger,
    ...(handOff.bus ? { bus: handOff.bus } : {}),
  });

  const { sinks } = handOff;
  const tls = settings.tls ? readTls(settings.tls) : undefined;
  const ingest = await buildIngestServer({
    routes,
    sinks,
    series,
    ...(remoteWrite ? { remoteWrite } : {}),
    metrics,
    limits: { ...settings.limits, maxConnections: connectionCap(settings, logger) },
    throttle: new AuthThrottle(settings.authThrottle),
    authFailureDelayMs: settings.authThrottle.failureDelayMs,
    lifecycle,
    logger,
    trustProxy: settings.trustProxy,
    mapped,
    limiter,
    activity,
    inspector,
    ...(tls ? { https: tls } : {}),
  });
  const admin = buildAdminServer({
    registry,
    series,
    exposition: settings.exposition.enabled,
    lifecycle,
    logger,
    sinks,
    activity,
    timeouts: settings.limits,
    allowedHosts: settings.adminAllowedHosts,
    // The dead letters on the bus until their stream first opened (bus-store.ts says why).
    refusing: [{ unavailable: () => deadLetters.store.unavailable?.() }],
    // Remote write never makes the replica unready: a full queue refuses data points alone (one
    // namespace's share, or all namespaces when the receiver fails for all, as on every replica).
  });
  const replayers: DeadLetterReplayers = {
    mapping: (letter) => replayMapping(letter, { mapped, routes, sinks, metrics, logger }),
    ...(destinations
      ? {
          delivery: (letter) => destinations.requeue(letter),
          removed: async (letter) => (letter.kind === 'delivery' ? destinations.replayed(letter) : undefined),
        }
      : {}),
  };
  const deadLetterReplay = {
    store: deadLetters.store,
    replayers,
    metrics: deadLetters.metrics,
    leaseMs: deadLetters.leaseMs,
    logger,
  };
  const bulkReplays = new BulkReplays({ ...deadLetterReplay, limits: settings.deadLetter.bulkReplay });
  registerDeadLetterEndpoints(admin, { ...deadLetterReplay, bulk: bulkReplays });
  registerDestinationEndpoints(admin, destinations);
  registerDeliveryStatus(admin, destinations);
  registerInspector(admin, inspector, { routes, sinks, metrics, limiter, logger });
  const stopTlsWatch = settings.tls ? watchTls(settings.tls, ingest, logger) : undefined;
  const sweeper = setInterval(
    () => series.sweep(),
    Math.min(SWEEP_INTERVAL_MS, settings.limits.seriesTTLSeconds * 1000),
  );
  sweeper.unref();

  // Listen before the routes load: with 20,000 routes that takes seconds, and meanwhile /healthz
  // answers (the process is alive), /readyz says not ready and ingest requests get 503 with
  // Retry-After (never a 401 from an empty table).
  await ingest.listen({ host: settings.listen.host, port: settings.listen.port });
  await admin.listen({ host: settings.adminListen.host, port: settings.adminListen.port });
  const ingestUrl = urlOf(ingest, tls ? 'https' : 'http');
  const adminUrl = urlOf(admin, 'http');
  logger.info({ ingest: ingestUrl, admin: adminUrl }, 'ingester listening; loading routes');

  const compiled = new WeakMap<Route, RouteEntry>();
  /** Route documents not in the table and why, by source (intake_routes_skipped). */
  const skippedRoutes = new Map<string, string>();
  const tableOptions = { settings, source, mappingWorkers, limiter, metrics, logger, compiled, skippedRoutes };
  const installTable = async (inputs: RouteInput[], unparsable?: SkippedRoute[]): Promise<void> => {
    await loadMappingEngineFor(inputs.map((i) => i.route));
    table = await buildTable(inputs, unparsable, tableOptions);
    activity.sync(table.entries());
    // Serving from now: the compilers that suit a long-running request path (serving-v8-flags.ts).
    useServingV8Flags();
    lifecycle.loading = false;
    lifecycle.ready = !lifecycle.closing;
  };
  // Tables are built in steps (the event loop turns between them), and they and changes to single
  // routes are installed one at a time, in the order the source handed them over.
  let installing = Promise.resolve();
  const inOrder = (install: () => Promise<void>): Promise<void> => {
    const installed = installing.then(install);
    // A failed install (reported to the source) does not stop the ones after it.
    installing = installed.catch(() => undefined);
    return installed;
  };
  await loadRoutes(source, metrics, logger, {
    onRoutes: (inputs, unparsable) => inOrder(() => installTable(inputs, unparsable)),
    onChanges: (changes, unparsable, all) =>
      inOrder(async () => {
        await loadMappingEngineFor(changes.flatMap((c) => (c.input ? [c.input.route] : [])));
        const applied = applyChanges(table, changes, unparsable, tableOptions);
        if (applied) {
          activity.update(applied.removed, applied.added);
          return;
        }
        const set = all();
        await installTable(set.inputs, set.unparsable);
      }),
  });
  // The teams' own destinations (Kubernetes mode) are known before delivery starts, then kept live.
  if (destinations && teamDestinations) await teamDestinations.start((team) => destinations.setTeamDestinations(team));
  // The first routing table decides which destinations get which events: deliver only from now.
  destinations?.start();
  const stopReplaySweep = sweepInterruptedReplays(deadLetters.store, replayers, deadLetters.metrics, logger);

  let stopping: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    stopping ??= (async () => {
      // cmd/intake.ts exits at shutdown.timeoutSeconds; leave a second for the rest.
      const deadlineMs = Date.now() + settings.shutdown.timeoutSeconds * 1000 - 1000;
      lifecycle.ready = false;
      logger.info({ drainDelaySeconds: settings.shutdown.drainDelaySeconds }, 'shutting down: unready');
      if (settings.shutdown.drainDelaySeconds > 0)
        await new Promise((r) => setTimeout(r, settings.shutdown.drainDelaySeconds * 1000));
      // From here every request is answered 503 with `Connection: close`, including those that
      // arrive on idle keep-alive connections. A request a sender already sent on such a
      // connection arrives within a moment: wait that moment (or until every connection is gone)
      // so it gets that answer instead of a reset, then stop listening and close the idle ones.
      lifecycle.closing = true;
      clearInterval(sweeper);
      stopReplaySweep();
      await stopTlsWatch?.();
      await source.stop();
      replicas?.stop();
      await closeIngestListener(ingest, settings);
      await remoteWrite?.close(deadlineMs);
      // A bulk replay hands its letter in hand on before the destinations close.
      await bulkReplays.close();
      // Deliveries in flight are settled before the bus connection or the outbox closes.
      teamDestinations?.stop();
      await destinations?.close();
      teamDestinations?.removeFiles();
      await Promise.all(sinks.map((s) => s.close()));
      await deadLetters.store.close();
      await inspector.close();
      await mappingWorkers.close();
      await stopTracing();
      await admin.close();
      logger.info('shutdown complete');
    })();
    return stopping;
  };
  return { ingestUrl, adminUrl, metrics, shutdown, reopenFiles: () => handOff.logSink?.reopen() };
}

/** The hand-off sinks: the log sink, the bus (started). */
async function startSinks(settings: IngesterSettings, registry: Registry, logger: Logger) {
  // A storage directory's volume that can never hold spool.maxBytes (and, without the bus, the dead letters kept
  // beside it) refuses the start (a ConfigError); one that is merely full is warned about.
  if (settings.spool) {
    const spool = { setting: 'spool.maxBytes', maxBytes: settings.spool.maxBytes };
    // Without the bus, the storage directory holds the outbox and the dead letters, each with a disk reserve.
    const reserveBytes = DISK_RESERVE_BYTES;
    const deadLetters = { setting: 'deadLetter.maxBytes', maxBytes: settings.deadLetter.maxBytes, reserveBytes };
    const warning = checkStoreVolume(
      settings.spool.path,
      settings.sinks.jetstream
        ? [spool]
        : [{ ...spool, reserveBytes, largestWalBytes: OUTBOX_WAL_SIZE_LIMIT_BYTES }, deadLetters],
    );
    if (warning) logger.warn({ spool: settings.spool.path }, warning);
  }
  const logSink =
    settings.sinks.log.enabled === false
      ? undefined
      : new LogSink(settings.sinks.log.path, { timeoutMs: settings.sinks.log.timeoutMs });
  const sinks: EventSink[] = logSink ? [logSink] : [];
  // The bus client, SQLite and the remote write client are loaded only when configured: a
  // standalone ingester with the log sink does not pay their memory (about 40 MiB resident).
  const jetstream = settings.sinks.jetstream;
  const busSink = jetstream
    ? new (await import('./sinks/jetstream-sink.js')).JetStreamSink({
        settings: jetstream,
        ...(settings.spool ? { spool: settings.spool } : {}),
        registry,
        logger,
        drainTimeoutMs: drainBudgetMs(settings),
      })
    : undefined;
  if (busSink) {
    sinks.push(busSink);
    await busSink.start();
  }
  const bus =
    busSink && jetstream
      ? { settings: jetstream, onConnected: (l: Parameters<typeof busSink.onConnected>[0]) => busSink.onConnected(l) }
      : undefined;
  return { sinks, logSink, bus };
}

/** Delivery after the hand-off, loaded only when destinations are configured. */
async function setUpDestinationsIfAny(
  settings: IngesterSettings,
  routes: () => RouteTable,
  handOff: Awaited<ReturnType<typeof startSinks>>,
  deadLetters: DeadLetterStore,
  registry: Registry,
  logger: Logger,
  /** Teams may add destinations while running (Kubernetes mode): set up whenever delivery is possible. */
  teamDestinations: boolean,
) {
  const canDeliver = handOff.bus !== undefined || settings.spool !== undefined;
  if (teamDestinations && !canDeliver)
    logger.warn(
      "teams' Destinations are not delivered to by this ingester: delivery needs the bus (sinks.jetstream) or the storage directory (spool.path)",
    );
  if (settings.destinations.length === 0 && !(teamDestinations && canDeliver)) return undefined;
  const { setUpDestinations } = await import('./destinations/set-up-destinations.js');
  return setUpDestinations({
    destinations: settings.destinations,
    routes,
    registry,
    logger,
    ...(handOff.bus ? { bus: handOff.bus } : {}),
    ...(settings.spool ? { storage: settings.spool } : {}),
    deadLetters,
    addressGuard: settings.addressGuard,
  });
}

/** The mapping workers, the per-tenant limits and the mapped-webhook pipeline that uses both. */
function setUpMappingAndLimits(
  settings: IngesterSettings,
  source: RouteSource,
  metrics: IngesterMetrics,
  deadLetters: DeadLetterStore,
  registry: Registry,
  logger: Logger,
) {
  const mappingMetrics = new MappingMetrics(registry);
  // Tenants' expressions run in worker processes, stopped at their limits (presets run here).
  const mappingWorkers = new MappingWorkerPool({
    size: settings.mapping.workers,
    maxQueued: settings.mapping.maxQueued,
    maxQueuedBytes: settings.mapping.maxQueuedBytes,
    // One namespace's share; unset, the pool's defaults (half the workers, a quarter of the queue).
    maxRunningPerTenant: settings.mapping.maxWorkersPerNamespace,
    maxQueuedPerTenant: settings.mapping.maxQueuedPerNamespace,
    maxQueuedBytesPerTenant: settings.mapping.maxQueuedBytesPerNamespace,
    heapMb: settings.mapping.workerHeapMb,
    onWorkerLost: (reason) => {
      mappingMetrics.workerRestarts.inc();
      logger.warn({ reason }, 'mapping worker killed or ended, and replaced');
    },
    onFirstWorker: logWorkerPriority(logger, 'mapping workers'),
  });
  const limiter = new TenantLimiter({
    defaults: settings.tenantLimits,
    mode: source.allowPlaintext ? 'file' : 'kubernetes',
    eventsRefused: metrics.eventsRefused,
    pointsRefused: metrics.pointsRefused,
    mappingReserveMs: settings.mapping.timeoutMs,
  });
  const mapped = new MappedWebhooks({
    deadLetter: deadLetters,
    metrics: mappingMetrics,
    eventsPerRequest: settings.limits.eventsPerRequest,
    mappedEventsPerRequest: settings.mapping.maxEvents,
    chargeMappingCpu: (entry, cpuMs) => limiter.chargeMappingCpu(entry, cpuMs),
    reserveMappingCpu: (entry) => limiter.reserveMappingCpu(entry),
    routeDecider: new RouteDecider({ cpu: limiter, runner: mappingWorkers, limits: settings.mapping }),
  });
  return { mappingWorkers, limiter, mapped };
}

/** Starts the route source: `handlers.onRoutes` gets every complete set of routes, the first before this resolves. */
async function loadRoutes(
  source: RouteSource,
  metrics: IngesterMetrics,
  logger: Logger,
  handlers: Pick<Parameters<RouteSource['start']>[0], 'onRoutes' | 'onChanges'>,
): Promise<void> {
  await source.start({
    ...handlers,
    onError: (err) => {
      metrics.routeReloads.inc({ result: 'error' });
      logger.error(
        { err: { message: err.message, code: (err as { code?: string }).code } },
        'routes not reloaded; keeping the current table',
      );
    },
  });
}

interface TableOptions {
  settings: IngesterSettings;
  source: RouteSource;
  mappingWorkers: MappingWorkerPool;
  limiter: TenantLimiter;
  metrics: IngesterMetrics;
  logger: Logger;
  /** Compiled entries of earlier tables (the options above never change in a process). */
  compiled: WeakMap<Route, RouteEntry>;
  /** Route documents not in the table and why, by source. */
  skippedRoutes: Map<string, string>;
}

/**
 * Changes to single routes applied to the table in place, only their entries and limits touched;
 * undefined when they need a full build instead (RouteTable.apply).
 */
function applyChanges(
  table: RouteTable,
  changes: RouteChange[],
  unparsable: SkippedRoute[],
  o: TableOptions,
): AppliedChanges | undefined {
  const { metrics, logger, skippedRoutes } = o;
  const applied = table.apply(changes);
  if (!applied) return undefined;
  o.limiter.update(applied.removed, applied.added);
  for (const { source } of changes) skippedRoutes.delete(source);
  for (const s of [...unparsable, ...applied.skipped]) {
    logger.warn({ route: s.source, reason: s.reason }, 'route skipped');
    skippedRoutes.set(s.source, s.reason);
  }
  metrics.routesSkipped.set(skippedRoutes.size);
  metrics.routes.set({ kind: 'WebhookIntegration' }, table.size.webhooks);
  metrics.routes.set({ kind: 'ApiKey' }, table.size.apiKeys);
  metrics.routeReloads.inc({ result: 'ok' });
  metrics.routesPlaced.inc({ update: 'incremental' }, applied.added.length);
  logger.info(
    {
      changed: changes.length,
      webhooks: table.size.webhooks,
      apiKeys: table.size.apiKeys,
      skipped: skippedRoutes.size,
    },
    'routing table updated',
  );
  return applied;
}

/** A new routing table from a set of routes: skipped ones logged and counted, limits synced. */
async function buildTable(inputs: RouteInput[], unparsable: SkippedRoute[] = [], o: TableOptions): Promise<RouteTable> {
  const { settings, metrics, logger } = o;
  const built = await RouteTable.buildInSteps(inputs, {
    allowPlaintext: o.source.allowPlaintext,
    mappingLimits: settings.mapping,
    mappingRunner: o.mappingWorkers,
    destinations: settings.destinations,
    compiled: o.compiled,
  });
  const skipped = [...unparsable, ...built.skipped];
  for (const s of skipped) logger.warn({ route: s.source, reason: s.reason }, 'route skipped');
  o.skippedRoutes.clear();
  for (const s of skipped) o.skippedRoutes.set(s.source, s.reason);
  metrics.routesSkipped.set(skipped.length);
  o.limiter.sync(built.table.entries());
  const table = built.table;
  metrics.routes.set({ kind: 'WebhookIntegration' }, table.size.webhooks);
  metrics.routes.set({ kind: 'ApiKey' }, table.size.apiKeys);
  metrics.routeReloads.inc({ result: 'ok' });
  metrics.routesPlaced.inc({ update: 'full' }, inputs.length);
  logger.info(
    { webhooks: table.size.webhooks, apiKeys: table.size.apiKeys, skipped: skipped.length },
    'routing table installed',
  );
  return table;
}

/** The ingest listener's connection cap, from the open-files limit unless configured. */
function connectionCap(settings: IngesterSettings, logger: Logger): number {
  const fdLimit = openFilesLimit();
  const maxConnections = ingestConnectionCap(fdLimit, settings.limits.maxConnections);
  logger.info({ maxConnections, openFilesLimit: fdLimit ?? 'unknown' }, 'ingest connection cap');
  return maxConnections;
}

/** Lets idle keep-alive connections get their 503, then closes the listener (cut off at the deadline). */
async function closeIngestListener(ingest: FastifyInstance, settings: IngesterSettings): Promise<void> {
  await connectionsDrained(ingest, Math.min(KEEP_ALIVE_GRACE_MS, settings.limits.keepAliveTimeoutMs));
  // An upload that never finishes must not hold the shutdown past its deadline.
  const hardStop = setTimeout(
    () => (ingest.server as unknown as { closeAllConnections(): void }).closeAllConnections(),
    Math.max(1000, settings.shutdown.timeoutSeconds * 1000 - 3000),
  );
  await ingest.close();
  clearTimeout(hardStop);
}

/** Resolves when the server holds no connection any more, or after `maxMs`. */
async function connectionsDrained(app: FastifyInstance, maxMs: number): Promise<void> {
  const deadline = Date.now() + maxMs;
  const count = (): Promise<number> =>
    new Promise((resolve) => app.server.getConnections((err, n) => resolve(err ? 0 : n)));
  while (Date.now() < deadline && (await count()) > 0) await new Promise((r) => setTimeout(r, 50));
}

/** The spool drain gets the shutdown timeout minus the drain delay and a margin to close the rest. */
function drainBudgetMs(settings: IngesterSettings): number {
  return Math.max(0, (settings.shutdown.timeoutSeconds - settings.shutdown.drainDelaySeconds) * 1000 - 2000);
}

function urlOf(app: FastifyInstance, scheme: string): string {
  const address = app.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `${scheme}://${host}:${address.port}`;
}

function readTls(files: { certFile: string; keyFile: string }): { cert: Buffer; key: Buffer } {
  return { cert: readFileSync(files.certFile), key: readFileSync(files.keyFile) };
}

/** Certificates rotate (cert-manager renews them): reload them in place, keep serving on failure. */
function watchTls(
  files: { certFile: string; keyFile: string },
  app: FastifyInstance,
  logger: Logger,
): () => Promise<void> {
  const watcher = watch([files.certFile, files.keyFile], {
    ignoreInitial: true,
    awaitWriteFinish: { stabilityThreshold: 200, pollInterval: 50 },
  });
  watcher.on('all', () => {
    try {
      (app.server as unknown as HttpsServer).setSecureContext(readTls(files));
      logger.info('TLS certificate reloaded');
    } catch (err) {
      logger.error(
        { err: { message: (err as Error).message } },
        'TLS certificate not reloaded; keeping the current one',
      );
    }
  });
  return () => watcher.close();
}

/** How often every replica looks for dead-letter replays that were cut (the bus keeps their claims). */
const REPLAY_SWEEP_INTERVAL_MS = 5000;

/** Finishes cut replays (dead-letter-replay.ts) every few seconds; returns what stops it. */
function sweepInterruptedReplays(
  store: DeadLetterStore,
  replayers: DeadLetterReplayers,
  metrics: DeadLetterMetrics,
  logger: Logger,
): () => void {
  if (!store.interruptedReplays) return () => undefined;
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void finishInterruptedReplays(store, replayers, metrics)
      .then((results) => {
        if (results.length > 0)
          logger.info(
            {
              finished: results.filter((r) => r.result === 'replayed').length,
              failed: results.filter((r) => r.result === 'failed').length,
            },
            'dead-letter replays that were cut (their process stopped) finished: each letter handed on again (the bus stores it once) and removed',
          );
      })
      .catch((err: Error) =>
        logger.warn({ err: { message: err.message } }, 'finishing cut dead-letter replays failed; trying again'),
      )
      .finally(() => {
        running = false;
      });
  }, REPLAY_SWEEP_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
