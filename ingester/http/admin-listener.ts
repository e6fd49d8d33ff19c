/**
 * The admin listener: health, readiness, the ingester's own metrics, the received series and
 * each integration's activity (and, registered by main.ts, the dead letters).
 * Never expose it publicly: /metrics/ingested holds every tenant's series. Every request passes
 * the admin guard first (admin-guard.ts: the Host check, and what a state-changing call carries);
 * the chart's NetworkPolicy decides who reaches the port at all.
 */
import { Readable } from 'node:stream';
import Fastify, { LogController, type FastifyError, type FastifyInstance } from 'fastify';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { notFound, type IntakeError } from '../core/errors.js';
import { registerAdminGuard } from './admin-guard.js';
import { toIntakeError } from './listener.js';
import { ADMIN_MAX_CONNECTIONS, clientErrorHandler, serverTimeoutOptions, type TimeoutSettings } from './guards.js';
import { securityHeaders } from './security-headers.js';
import type { SeriesStore } from '../series/series-store.js';
import type { Lifecycle } from './context.js';
import { sendError } from './send-error.js';
import type { EventSink } from '../sinks/sink.js';
import type { ActivityRecorder } from '../activity/recorder.js';

export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export interface AdminServerOptions {
  registry: Registry;
  series: SeriesStore;
  /** Serve /metrics/ingested (off when points go by remote write only). */
  exposition?: boolean;
  lifecycle: Lifecycle;
  logger: Logger;
  /** Readiness also means every sink can take events now. */
  sinks?: readonly EventSink[];
  /** Other parts that may refuse requests for a reason another replica may not have (remote write's full queue). */
  refusing?: ReadonlyArray<{ unavailable(): string | undefined }>;
  timeouts?: TimeoutSettings;
  /** What each integration and key received on this replica (GET /status/activity). */
  activity?: ActivityRecorder;
  /** Host names answered besides IP literals and localhost (adminAllowedHosts). */
  allowedHosts?: readonly string[];
}

/** An admin call's body is a few filters: anything larger is not one. */
const ADMIN_BODY_LIMIT = 64 * 1024;

export function buildAdminServer(o: AdminServerOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: o.logger,
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: false,
    bodyLimit: ADMIN_BODY_LIMIT,
    // The admin API answers no request before its body (no refusal reads ahead of it).
    clientErrorHandler: clientErrorHandler(securityHeaders(), () => false),
    ...(o.timeouts ? { http: serverTimeoutOptions(o.timeouts), requestTimeout: o.timeouts.requestTimeoutMs } : {}),
  }) as unknown as FastifyInstance;
  (app.server as Server).maxConnections = ADMIN_MAX_CONNECTIONS;
  registerAdminGuard(app, o.allowedHosts ?? []);
  // fastify's own refusals (an empty or malformed JSON body, too large) in the catalogue's shape.
  app.setErrorHandler((err: FastifyError | IntakeError, req, reply) => {
    const mapped = toIntakeError(err, ADMIN_BODY_LIMIT);
    if (mapped.code === 'INTERNAL') o.logger.error({ err, reqId: req.id }, 'admin request failed');
    sendError(reply, mapped);
  });
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    const unready = o.lifecycle.closing
      ? 'shutting down'
      : o.lifecycle.loading
        ? 'loading routes'
        : !o.lifecycle.ready
          ? 'not ready'
          : (sinkProblem(o.sinks ?? []) ?? o.refusing?.map((r) => r.unavailable()).find((p) => p !== undefined));
    if (unready === undefined) return { status: 'ready' };
    return reply.code(503).header('retry-after', '1').send({ status: unready });
  });
  // The operator merges every replica's report into status.activity; `intake status` prints it.
  if (o.activity) {
    const activity = o.activity;
    app.get('/status/activity', async () => activity.report());
  }
  app.get('/metrics', async (_req, reply) => reply.type(o.registry.contentType).send(await o.registry.metrics()));
  if (o.exposition ?? true)
    app.get('/metrics/ingested', async (_req, reply) =>
      reply.type(EXPOSITION_CONTENT_TYPE).send(Readable.from(yieldingChunks(o.series))),
    );
  app.setNotFoundHandler((req, reply) => sendError(reply, notFound(req.method, req.url)));
  return app;
}

function sinkProblem(sinks: readonly EventSink[]): string | undefined {
  for (const sink of sinks) {
    const problem = sink.unavailable?.();
    if (problem) return `sink ${sink.name} cannot take events: ${problem}`;
  }
  return undefined;
}

/** The exposition's chunks, with a turn of the event loop between them so ingest requests go on. */
async function* yieldingChunks(series: SeriesStore): AsyncGenerator<string> {
  for (const chunk of series.chunks()) {
    yield chunk;
    await new Promise((resolve) => setImmediate(resolve));
  }
}
