/**
 * The admin listener: health, readiness, the ingester's own metrics and the received series.
 * Never expose it publicly: /metrics/ingested holds every tenant's series.
 */
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { notFound } from './errors.js';
import type { SeriesStore } from './series-store.js';
import { sendError, type Lifecycle } from './server.js';

export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export function buildAdminServer(o: { registry: Registry; series: SeriesStore; exposition?: boolean; lifecycle: Lifecycle; logger: Logger }): FastifyInstance {
  const app = Fastify({ loggerInstance: o.logger, logController: new LogController({ disableRequestLogging: true }), return503OnClosing: false }) as unknown as FastifyInstance;
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    if (o.lifecycle.ready && !o.lifecycle.closing) return { status: 'ready' };
    return reply.code(503).header('retry-after', '1').send({ status: o.lifecycle.closing ? 'shutting down' : 'not ready' });
  });
  app.get('/metrics', async (_req, reply) => reply.type(o.registry.contentType).send(await o.registry.metrics()));
  if (o.exposition ?? true) app.get('/metrics/ingested', async (_req, reply) => reply.type(EXPOSITION_CONTENT_TYPE).send(o.series.render()));
  app.setNotFoundHandler((req, reply) => sendError(reply, notFound(req.method, req.url)));
  return app;
}
