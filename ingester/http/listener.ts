/**
 * The ingest listener (docs/design.md §4): POST /events/webhook_<name> and POST /v1/integrations/metrics.
 * This file builds the server and what every request goes through (security headers, shutdown and
 * overload answers, the body budget, metrics, error mapping); each route lives in routes/.
 * Authentication runs in the route's onRequest, before the body is read, so unauthenticated
 * senders cost little.
 */
import Fastify, { LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { AuthThrottle } from '../auth/auth-throttle.js';
import { Authenticator } from '../auth/authenticator.js';
import { BodyBudget } from './body-budget.js';
import { decodeContentEncoding, parseJsonBody } from './body.js';
import { newVerifiedCache } from '../routing/credentials.js';
import { LogLimiter } from '../core/log-limiter.js';
import { badHeader, IntakeError, methodNotAllowed, notFound, payloadTooLarge, unavailable, unsupportedMediaType } from '../core/errors.js';
import { clientErrorHandler, deferContinue, forwardedForProblem, serverTimeoutOptions, type TimeoutSettings } from './guards.js';
import type { MappedWebhooks } from '../mapping/mapped-webhooks.js';
import type { TenantLimiter } from '../limits/tenant-limiter.js';
import type { Endpoint, IngesterMetrics } from '../core/ingester-metrics.js';
import { EventLoopGuard } from './overload.js';
import type { RouteEntry, RouteTable } from '../routing/route-table.js';
import type { RemoteWriter } from '../series/remote-write/writer.js';
import { eventsRoute, EVENTS_PATH } from './endpoints/events.js';
import { metricsRoute, METRICS_PATH } from './endpoints/data-points.js';
import { securityHeaders } from './security-headers.js';
import type { SeriesStore } from '../series/series-store.js';
import type { EventSink } from '../sinks/sink.js';

export { EVENTS_PATH, METRICS_PATH };

export interface IngestLimits extends Partial<TimeoutSettings> {
  bodyBytes: number;
  eventsPerRequest: number;
  pointsPerRequest: number;
  maxEventLoopDelayMs: number;
  /** Request-body bytes held in memory at once across all requests (default 64 MiB). */
  maxInFlightBodyBytes?: number;
  /** Total characters of one series' labels (default 2048). */
  maxSeriesLabelChars?: number;
  /** Client connections held at once (default: from the file-descriptor limit). */
  maxConnections?: number;
  /** Nesting of a JSON body at most (default 64). */
  maxJsonDepth?: number;
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
  /** When set, data points are also forwarded by Prometheus Remote Write. */
  remoteWrite?: RemoteWriter;
  metrics: IngesterMetrics;
  limits: IngestLimits;
  throttle: AuthThrottle;
  /** Least time before a 401 for wrong credentials (see authenticate.ts); default 0. */
  authFailureDelayMs?: number;
  lifecycle: Lifecycle;
  logger: Logger;
  trustProxy?: boolean | number | string;
  https?: { key: Buffer; cert: Buffer };
  /** Data mapping, dry run and dead letter (ingester/mapping/). */
  mapped: MappedWebhooks;
  /** Per-tenant limits (limits/tenant-limiter.ts); absent: none. */
  limiter?: TenantLimiter;
}

/** What the route modules get: the options, plus the per-server pieces built here. */
export interface IngestContext extends IngestServerOptions {
  auth: Authenticator;
  mapped: MappedWebhooks;
  /** Sink failures repeat while a sink is down: logged at most once per interval. */
  failures: LogLimiter;
}

export const DEFAULT_TIMEOUTS: TimeoutSettings = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000 };
const DEFAULT_IN_FLIGHT_BODY_BYTES = 64 * 1024 * 1024;
const OTHER_METHODS = ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

declare module 'fastify' {
  interface FastifyRequest {
    routeEntry: RouteEntry | null;
    /** The body's JSON bytes, kept for a mapping that runs in a worker (it gets these, not the object). */
    rawJson: Buffer | null;
  }
}

export async function buildIngestServer(o: IngestServerOptions): Promise<FastifyInstance> {
  const headers = securityHeaders();
  const timeouts = serverTimeoutOptions({ ...DEFAULT_TIMEOUTS, ...definedOnly(o.limits) });
  const app = Fastify({
    loggerInstance: o.logger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: o.limits.bodyBytes,
    return503OnClosing: false,
    // Idle keep-alive connections are not reset at shutdown: they get the 503 below (see main.ts).
    forceCloseConnections: false,
    exposeHeadRoutes: false,
    requestTimeout: timeouts.requestTimeout,
    keepAliveTimeout: timeouts.keepAliveTimeout,
    clientErrorHandler: clientErrorHandler(headers),
    // fastify accepts a hop count at run time; its types omit it.
    trustProxy: (o.trustProxy ?? false) as boolean,
    ...(o.https ? { https: { ...o.https, ...timeouts } } : { http: timeouts }),
  }) as unknown as FastifyInstance;
  const server = app.server as Server;
  if (o.limits.maxConnections !== undefined) server.maxConnections = o.limits.maxConnections;
  deferContinue(server);

  const overload = new EventLoopGuard(o.limits.maxEventLoopDelayMs);
  app.addHook('onClose', (_app, done) => (overload.stop(), done()));
  const bodies = new BodyBudget(o.limits.maxInFlightBodyBytes ?? DEFAULT_IN_FLIGHT_BODY_BYTES);
  const ctx: IngestContext = {
    ...o,
    auth: new Authenticator({ routes: o.routes, throttle: o.throttle, metrics: o.metrics, verified: newVerifiedCache(), failureDelayMs: o.authFailureDelayMs ?? 0 }),
    failures: new LogLimiter(o.logger),
    mapped: o.mapped,
  };

  app.decorateRequest('routeEntry', null);
  app.decorateRequest('rawJson', null);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (req, body, done) => {
    try {
      const raw = decodeContentEncoding(req.headers['content-encoding'], body as Buffer, o.limits.bodyBytes);
      const parsed = parseJsonBody(req.headers['content-type'], raw, o.limits.maxJsonDepth);
      if (req.routeEntry?.mapping?.isolated) req.rawJson = raw;
      done(null, parsed);
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  const trustsProxy = o.trustProxy !== undefined && o.trustProxy !== false;
  // Callback-style hooks: the hot path allocates no promise for them.
  app.addHook('onRequest', (req, reply, done) => {
    reply.headers(headers);
    if (trustsProxy) {
      const problem = forwardedForProblem(req.headers['x-forwarded-for']);
      if (problem) return sendError(reply, badHeader('x-forwarded-for', problem));
    }
    if (o.lifecycle.closing) {
      reply.header('connection', 'close');
      return sendError(reply, unavailable('the ingester is shutting down; retry against another replica', 1));
    }
    if (overload.overloaded) return sendError(reply, unavailable('the ingester is overloaded; retry later'));
    done();
  });

  // After authentication (route onRequest), before any byte of the body is read.
  app.addHook('preParsing', (req, reply, payload, done) => {
    const announced = Number(req.headers['content-length']);
    const bytes = Number.isFinite(announced) && announced >= 0 ? Math.min(announced, o.limits.bodyBytes) : o.limits.bodyBytes;
    const release = bodies.reserve(bytes);
    if (!release) return done(unavailable('too many request bodies are being received at once; retry later', 1));
    reply.raw.once('close', release);
    done(null, payload);
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

  app.route(eventsRoute(ctx));
  app.route(metricsRoute(ctx));
  for (const url of [EVENTS_PATH, METRICS_PATH]) {
    app.route({ method: [...OTHER_METHODS], url, handler: async (req, reply) => sendError(reply, methodNotAllowed(req.method, 'POST')) });
  }
  return app;
}

function definedOnly(limits: IngestLimits): Partial<TimeoutSettings> {
  const out: Partial<TimeoutSettings> = {};
  for (const key of ['headersTimeoutMs', 'requestTimeoutMs', 'keepAliveTimeoutMs'] as const) if (limits[key] !== undefined) out[key] = limits[key];
  return out;
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
