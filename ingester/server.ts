/**
 * The ingest listener (DESIGN.md §4): POST /events/webhook_<name> and POST /v1/integrations/metrics.
 * Authentication runs in onRequest, before the body is read, so unauthenticated senders cost little.
 */
import Fastify, { LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import underPressure from '@fastify/under-pressure';
import type { Logger } from 'pino';
import { AuthThrottle } from './auth-throttle.js';
import { parseBasicAuth, soleHeader } from './basic-auth.js';
import { decodeContentEncoding, parseJsonBody } from './body.js';
import { securityHeaders } from './security-headers.js';
import { newVerifiedCache } from './credentials.js';
import { parseDataPoints } from './datapoints.js';
import {
  authThrottled,
  IntakeError,
  methodNotAllowed,
  notFound,
  payloadTooLarge,
  suspended,
  unauthorized,
  unauthorizedApiKey,
  unavailable,
  unsupportedMediaType,
} from './errors.js';
import { parseEvents } from './events.js';
import { MemoryDeadLetter } from './mapping/dead-letter.js';
import { MappingMetrics } from './mapping/metrics.js';
import { isDryRun, MappedWebhooks } from './mapping/pipeline.js';
import type { Endpoint, IngesterMetrics } from './metrics.js';
import type { RouteEntry, RouteTable } from './route-table.js';
import type { SeriesStore } from './series-store.js';
import { deliverToAll, type EventSink } from './sinks/sink.js';

export interface IngestLimits {
  bodyBytes: number;
  eventsPerRequest: number;
  pointsPerRequest: number;
  maxEventLoopDelayMs: number;
}

/** Shared with the admin listener and the shutdown sequence. */
export interface Lifecycle {
  ready: boolean;
  closing: boolean;
}

export interface IngestServerOptions {
  /** Returns the current table; reloads swap it underneath without locking. */
  routes: () => RouteTable;
  sinks: readonly EventSink[];
  series: SeriesStore;
  metrics: IngesterMetrics;
  limits: IngestLimits;
  throttle: AuthThrottle;
  lifecycle: Lifecycle;
  logger: Logger;
  trustProxy?: boolean | number | string;
  https?: { key: Buffer; cert: Buffer };
  /** Data mapping, dry run and dead letter (ingester/mapping/); in memory when not given. */
  mapped?: MappedWebhooks;
}

export const EVENTS_PATH = '/events/webhook_:name';
export const METRICS_PATH = '/v1/integrations/metrics';
const OTHER_METHODS = ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

declare module 'fastify' {
  interface FastifyRequest {
    routeEntry: RouteEntry | null;
  }
}

const okBody = (processed: number, cached: number, received: number, noun: string) => ({
  response: { processed, cached, received },
  success: true,
  message: `Processed ${processed} ${noun}(s)`,
});

const okSchema = {
  200: {
    type: 'object',
    properties: {
      response: { type: 'object', properties: { processed: { type: 'integer' }, cached: { type: 'integer' }, received: { type: 'integer' } } },
      success: { type: 'boolean' },
      message: { type: 'string' },
    },
  },
};

export async function buildIngestServer(o: IngestServerOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: o.logger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: o.limits.bodyBytes,
    return503OnClosing: false,
    exposeHeadRoutes: false,
    // fastify accepts a hop count at run time; its types omit it.
    trustProxy: (o.trustProxy ?? false) as boolean,
    ...(o.https ? { https: o.https } : {}),
  }) as unknown as FastifyInstance;
  const verified = newVerifiedCache();
  const headers = securityHeaders();
  const memoryDeadLetter = o.mapped ? undefined : new MemoryDeadLetter();
  const mapped =
    o.mapped ??
    new MappedWebhooks({ deadLetter: memoryDeadLetter as MemoryDeadLetter, metrics: new MappingMetrics(o.metrics.registry, () => memoryDeadLetter?.bytes ?? 0), eventsPerRequest: o.limits.eventsPerRequest });

  app.decorateRequest('routeEntry', null);
  await app.register(underPressure, {
    maxEventLoopDelay: o.limits.maxEventLoopDelayMs,
    retryAfter: 5,
    pressureHandler: (_req, reply, type, value) => {
      sendError(reply, unavailable(`the ingester is overloaded (${type} ${value}); retry later`));
    },
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (req, body, done) => {
    try {
      done(null, parseJsonBody(req.headers['content-type'], decodeContentEncoding(req.headers['content-encoding'], body as Buffer, o.limits.bodyBytes)));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  // Callback-style hooks: the hot path allocates no promise for them.
  app.addHook('onRequest', (_req, reply, done) => {
    reply.headers(headers);
    if (!o.lifecycle.closing) return done();
    reply.header('connection', 'close');
    sendError(reply, unavailable('the ingester is shutting down; retry against another replica', 1));
  });

  app.addHook('onResponse', (req, reply, done) => {
    const endpoint = endpointOf(req);
    o.metrics.requests.inc({ endpoint, status: reply.statusCode });
    o.metrics.requestDuration.observe({ endpoint }, reply.elapsedTime / 1000);
    done();
  });

  app.setErrorHandler((err: FastifyError | IntakeError, req, reply) => {
    const mapped = toIntakeError(err, o.limits.bodyBytes);
    if (mapped.statusCode >= 500 && mapped.code === 'INTERNAL') req.log.error({ err }, 'request failed');
    sendError(reply, mapped);
  });
  app.setNotFoundHandler((req, reply) => sendError(reply, notFound(req.method, req.url)));

  const throttled = async (req: FastifyRequest, endpoint: Endpoint, reason: string): Promise<never> => {
    o.metrics.authFailures.inc({ endpoint, reason });
    const blocked = await o.throttle.recordFailure(req.ip);
    if (blocked > 0) throw authThrottled(blocked);
    throw endpoint === 'events' ? unauthorized() : unauthorizedApiKey();
  };

  const guard = (req: FastifyRequest): void => {
    const wait = o.throttle.blockedFor(req.ip);
    if (wait > 0) throw authThrottled(wait);
  };

  const checkSuspended = (entry: RouteEntry): void => {
    if (entry.suspended) throw suspended(entry.kind, entry.kind === 'ApiKey' ? `${entry.namespace}/${entry.name}` : entry.name);
  };

  app.route<{ Params: { name: string } }>({
    method: 'POST',
    url: EVENTS_PATH,
    schema: { response: okSchema },
    onRequest: async (req) => {
      guard(req);
      const creds = parseBasicAuth(soleHeader(req.raw.rawHeaders, 'authorization'));
      if (!creds) return throttled(req, 'events', 'missing');
      const entry = await o.routes().authenticateWebhook(req.params.name, creds.username, creds.password, verified);
      if (!entry) return throttled(req, 'events', 'invalid');
      checkSuspended(entry);
      req.routeEntry = entry;
    },
    handler: async (req, reply) => {
      const entry = req.routeEntry as RouteEntry;
      const labels = { integration: entry.name, namespace: entry.namespace };
      const ctx = { ...labels, receivedAtMs: Date.now() };
      if (isDryRun(req.query)) return reply.type('application/json; charset=utf-8').send(JSON.stringify(await mapped.dryRun(req.body, entry, ctx)));
      let events;
      try {
        events = entry.mapping ? await mapped.toEvents(req.body, entry, ctx, req.headers['content-type']) : parseEvents(req.body, o.limits.eventsPerRequest, ctx);
      } catch (err) {
        o.metrics.eventsRejected.inc({ ...labels, reason: entry.mapping ? 'mapping' : 'invalid' }, Array.isArray(req.body) ? req.body.length : 1);
        throw err;
      }
      o.metrics.eventsReceived.inc(labels, events.length);
      const result = await deliverToAll(o.sinks, events, (sink, err) => {
        o.metrics.sinkErrors.inc({ sink });
        req.log.error({ err, sink }, 'event sink failed');
      });
      o.metrics.eventsProcessed.inc(labels, result.processed);
      if (result.cached > 0) o.metrics.eventsCached.inc(labels, result.cached);
      return reply.send(okBody(result.processed, result.cached, events.length, 'event'));
    },
  });

  app.route({
    method: 'POST',
    url: METRICS_PATH,
    schema: { response: okSchema },
    onRequest: async (req) => {
      guard(req);
      const header = req.headers.apikey;
      let entry: RouteEntry | undefined;
      if (header !== undefined) {
        if (typeof header !== 'string' || header === '') return throttled(req, 'metrics', 'missing');
        entry = o.routes().authenticateApiKey(header.trim(), undefined);
      } else {
        const creds = parseBasicAuth(soleHeader(req.raw.rawHeaders, 'authorization'));
        if (!creds) return throttled(req, 'metrics', 'missing');
        entry = o.routes().authenticateApiKey(creds.password, creds.username);
      }
      if (!entry) return throttled(req, 'metrics', 'invalid');
      checkSuspended(entry);
      req.routeEntry = entry;
    },
    handler: async (req, reply) => {
      const entry = req.routeEntry as RouteEntry;
      const namespace = entry.namespace;
      let points;
      try {
        points = parseDataPoints(req.body, o.limits.pointsPerRequest);
      } catch (err) {
        o.metrics.pointsRejected.inc({ namespace, reason: 'invalid' }, Array.isArray(req.body) ? req.body.length : 1);
        throw err;
      }
      o.metrics.pointsReceived.inc({ namespace }, points.length);
      try {
        o.series.write(namespace, points, entry.maxSeries);
      } catch (err) {
        o.metrics.pointsRejected.inc({ namespace, reason: 'series_limit' }, points.length);
        throw err;
      }
      o.metrics.pointsProcessed.inc({ namespace }, points.length);
      return reply.send(okBody(points.length, 0, points.length, 'data point'));
    },
  });

  for (const url of [EVENTS_PATH, METRICS_PATH]) {
    app.route({ method: [...OTHER_METHODS], url, handler: async (req, reply) => sendError(reply, methodNotAllowed(req.method, 'POST')) });
  }
  return app;
}

function endpointOf(req: FastifyRequest): Endpoint {
  const url = req.routeOptions.url;
  return url === EVENTS_PATH ? 'events' : url === METRICS_PATH ? 'metrics' : 'other';
}

export function sendError(reply: FastifyReply, err: IntakeError): FastifyReply {
  if (err.headers) reply.headers(err.headers);
  return reply.code(err.statusCode).type('application/json; charset=utf-8').send(err.toBody());
}

/** Maps fastify's own errors (body limits, content types, malformed requests) into the catalogue. */
export function toIntakeError(err: FastifyError | IntakeError, bodyLimit: number): IntakeError {
  if (err instanceof IntakeError) return err;
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return payloadTooLarge(bodyLimit);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return unsupportedMediaType(undefined);
  }
  const status = err.statusCode ?? 500;
  if (status >= 400 && status < 500) return new IntakeError('BAD_REQUEST', status, err.message);
  return new IntakeError('INTERNAL', 500, 'internal error; the request was not accepted');
}
