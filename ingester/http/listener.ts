/**
 * The ingest listener (docs/design.md §4): POST /events/webhook_<name> and POST /v1/integrations/metrics.
 * This file builds the server and what every request goes through; each endpoint lives in
 * endpoints/ and gets the listener's context (context.ts).
 *
 * A request's lifecycle, in fastify's hook order as used here (nothing else is hooked):
 *
 * | step | fastify stage                | where                          | what                                                                    | refusal (errors catalogue)                  |
 * |------|------------------------------|--------------------------------|-------------------------------------------------------------------------|---------------------------------------------|
 * | 0    | node http server             | guards.ts                      | malformed HTTP, header/request timeouts; `Expect: 100-continue` deferred | 400/408/431 (clientErrorHandler)            |
 * |      |                              | connections-per-address.ts     | one remote address's connections past its bound closed at once           |                                             |
 * |      |                              | upload-rate.ts (from step 1)   | a body slower than the minimum upload rate cut                           | 408, or closed if answered already          |
 * | 1    | onRequest (global)           | below                          | security headers; X-Forwarded-For check; shutting down; event loop late  | badHeader 400, unavailable 503              |
 * | 2    | onRequest (endpoint)         | endpoints/*.ts `authenticate`  | credentials, then per-tenant request admission                          | unauthorized 401, suspended 403, 429/503    |
 * | 3    | preParsing (global)          | below, body-admission.ts       | reserve the body's bytes (per address and integration before            | BODY_BYTES_LIMITED 429/503                  |
 * |      |                              | upload-rate.ts                 | authentication, per namespace after); watch its upload rate;            | REQUEST_TIMEOUT 408 (too slow)              |
 * |      |                              |                                | then 100 Continue sent                                                   |                                             |
 * | 4    | content type parser          | below, body.ts                 | the body's bytes, content-encoding undone (nothing parsed yet)           | 413, 415                                    |
 * | 5    | handler                      | endpoints/*.ts                 | signature (signed integrations), parse JSON with a depth limit, map,     | 401, 400, 415, 422, 429, 503                |
 * |      |                              |                                | validate, hand off or store, answer 200                                  |                                             |
 * | 6    | error handler                | below `toIntakeError`          | any error becomes a catalogue error and its JSON body                    | BAD_REQUEST 4xx, INTERNAL 500               |
 * | 6'   | not-found / other methods    | below                          | unknown path, method other than POST                                     | notFound 404, methodNotAllowed 405          |
 * | 7    | onResponse (global)          | below                          | request count and duration metrics; activity (accepted or refused)       |                                             |
 * | 8    | onClose                      | below                          | stop the event loop guard                                                |                                             |
 *
 * Authentication (2) runs before any byte of the body is read (3, 4), so unauthenticated senders cost little.
 *
 * The common webhook request (Basic, unsigned, a plain JSON body with a Content-Length, nothing
 * unusual in its URL or headers) skips fastify: endpoints/events-direct.ts serves it from the
 * node http server's request event, with the same steps 1-7 in the same order and the same
 * answers; so does a signed integration's request of that shape that is refused before its body
 * (2, 3: a stranger's refused uploads). Every other request goes to fastify untouched
 * (serveDirectFirst below).
 */
import Fastify, {
  LogController,
  type FastifyError,
  type FastifyReply,
  type FastifyInstance,
  type FastifyRequest,
  type FastifyBodyParser,
} from 'fastify';
import type { Logger } from 'pino';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Authenticator } from '../auth/authenticator.js';
import { SeenMessages } from '../auth/seen-messages.js';
import type { SignedHeaders } from '../auth/signature-check.js';
import type { NormalisedEvent } from '../core/event.js';
import type { Inspector } from '../inspector/inspector.js';
import type { Endpoint } from '../core/ingester-metrics.js';
import {
  badHeader,
  badRequest,
  bodyTooSlow,
  internalError,
  IntakeError,
  methodNotAllowed,
  notFound,
  payloadTooLarge,
  unavailable,
  unsupportedMediaType,
} from '../core/errors.js';
import { LogLimiter } from '../core/log-limiter.js';
import { isDryRun } from '../mapping/mapped-webhooks.js';
import { newVerifiedCache } from '../routing/credentials.js';
import type { RouteEntry, RouteTable } from '../routing/route-table.js';
import type { RuleDecision } from '../../api/routing-rules.js';
import { BodyAdmission, DEFAULT_BODY_ADMISSION } from './body-admission.js';
import { UploadRateGuard } from './upload-rate.js';
import { ConnectionsPerAddress } from './connections-per-address.js';
import { trustFunction } from './client-address.js';
import type { Socket } from 'node:net';
import { decodeContentEncoding } from './body.js';
import type { IngestContext, IngestLimits, IngestServerOptions } from './context.js';
import { dataPointsEndpoint, METRICS_PATH } from './endpoints/data-points.js';
import { eventsEndpoint, EVENTS_PATH } from './endpoints/events.js';
import { directEventsRoute, type DirectRoute } from './endpoints/events-direct.js';
import {
  answerAndClose,
  clientErrorHandler,
  deferContinue,
  expectsContinue,
  forwardedForProblem,
  keepsConnectionAfterTooLarge,
  serverTimeoutOptions,
  type TimeoutSettings,
} from './guards.js';
import { EventLoopGuard } from './overload.js';
import { securityHeaders } from './security-headers.js';
import { recordActivity } from './request-activity.js';
import { nextRequestId } from './request-id.js';
import { sendError } from './send-error.js';

export { EVENTS_PATH, METRICS_PATH };

export const DEFAULT_TIMEOUTS: TimeoutSettings = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
};
/** A body must arrive at least this fast on average, after the grace (http/upload-rate.ts). */
export const DEFAULT_MIN_BODY_BYTES_PER_SECOND = 8192;
export const DEFAULT_BODY_RATE_GRACE_MS = 2000;
const OTHER_METHODS = ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

declare module 'fastify' {
  interface FastifyRequest {
    routeEntry: RouteEntry | null;
    /** A signed integration's signature headers, read in onRequest, checked against the body by the handler. */
    signedHeaders: SignedHeaders | null;
    /** No credential checked before the body (a signed-only integration): its body is charged to the unauthenticated budgets. */
    unauthenticated: boolean;
    /** Events or data points a 200 accepted (set by the endpoint), for the activity record. */
    accepted: number;
    /** Of the accepted events, those a routing rule dropped (set by the endpoint), for the activity record. */
    droppedByRule: number;
    /** The error this request was answered with (sendError), for the activity record. */
    refusal: IntakeError | null;
    /** Whether the request proved its credentials (auth/authenticator.ts), for the activity record. */
    authenticated: boolean;
    /** The events the body was mapped to (set by the endpoint), for the event inspector. */
    mappedEvents: readonly NormalisedEvent[] | null;
    /** Their routing rules' decisions (set by the endpoint), for the event inspector. */
    ruleDecisions: readonly RuleDecision[] | null;
  }
}

export async function buildIngestServer(o: IngestServerOptions): Promise<FastifyInstance> {
  const headers = securityHeaders();
  const trust = trustFunction(o.trustProxy);
  const timeouts = serverTimeoutOptions({ ...DEFAULT_TIMEOUTS, ...definedOnly(o.limits) });
  const minBodyBytesPerSecond = o.limits.minBodyBytesPerSecond ?? DEFAULT_MIN_BODY_BYTES_PER_SECOND;
  const tooSlow = bodyTooSlow(minBodyBytesPerSecond);
  const answer = answerAndClose(headers);
  const uploads = new UploadRateGuard({
    minBytesPerSecond: minBodyBytesPerSecond,
    graceMs: o.limits.bodyRateGraceMs ?? DEFAULT_BODY_RATE_GRACE_MS,
    // Answered 408 unless the request was answered already (a refusal before its body was read):
    // then only closed, as a second answer on the connection would be garbage to the sender.
    onTooSlow: (socket, res) => (res.headersSent ? socket.destroy() : answer(socket, tooSlow)),
  });
  const app = Fastify({
    loggerInstance: o.logger,
    logController: new LogController({ disableRequestLogging: true }),
    // No pino child logger per request (about 1.5 µs and its garbage on every request, under
    // load and under refusals alike): the one place that logs for a request names its id itself.
    childLoggerFactory: (logger) => logger,
    // One counter with the direct events route's requests (request-id.ts).
    genReqId: nextRequestId,
    bodyLimit: o.limits.bodyBytes,
    return503OnClosing: false,
    // Idle keep-alive connections are not reset at shutdown: they get the 503 below (see main.ts).
    forceCloseConnections: false,
    exposeHeadRoutes: false,
    requestTimeout: timeouts.requestTimeout,
    keepAliveTimeout: timeouts.keepAliveTimeout,
    clientErrorHandler: clientErrorHandler(headers, (socket) => uploads.answeredBeforeBody(socket)),
    // The same function the direct events route works the sender's address out with (client-address.ts).
    trustProxy: trust,
    ...(o.https ? { https: { ...o.https, ...timeouts } } : { http: timeouts }),
  }) as unknown as FastifyInstance;
  const server = app.server as Server;
  if (o.limits.maxConnections !== undefined) server.maxConnections = o.limits.maxConnections;
  // One address never holds more than half of them (trusted proxies exempt: connections-per-address.ts).
  const perAddress =
    o.limits.maxConnectionsPerAddress ??
    (o.limits.maxConnections !== undefined ? Math.max(1, Math.floor(o.limits.maxConnections / 2)) : undefined);
  if (perAddress !== undefined) {
    // The trusted proxies are the ones fastify and the direct route read X-Forwarded-For from.
    const connections = new ConnectionsPerAddress(perAddress, trust ? (address) => trust(address, 0) : () => false);
    server.on('connection', (socket: Socket) => connections.admit(socket));
  }
  deferContinue(server);

  const overload = new EventLoopGuard(o.limits.maxEventLoopDelayMs);
  app.addHook('onClose', (_app, done) => (overload.stop(), done()));
  const bodies = new BodyAdmission({
    ...DEFAULT_BODY_ADMISSION,
    ...definedLimits(o.limits),
    bodyBytes: o.limits.bodyBytes,
  });
  app.addHook('onClose', (_app, done) => (uploads.stop(), done()));
  const ctx: IngestContext = {
    ...o,
    auth: new Authenticator({
      routes: o.routes,
      throttle: o.throttle,
      metrics: o.metrics,
      verified: newVerifiedCache(),
      failureDelayMs: o.authFailureDelayMs ?? 0,
    }),
    failures: new LogLimiter(o.logger),
    mapped: o.mapped,
    seen: new SeenMessages(o.routes),
  };

  app.decorateRequest('routeEntry', null);
  app.decorateRequest('signedHeaders', null);
  app.decorateRequest('unauthenticated', false);
  app.decorateRequest('accepted', 0);
  app.decorateRequest('droppedByRule', 0);
  app.decorateRequest('refusal', null);
  app.decorateRequest('authenticated', false);
  app.decorateRequest('mappedEvents', null);
  app.decorateRequest('ruleDecisions', null);
  app.removeAllContentTypeParsers();
  // Bytes only: the handler checks a signature over them before it parses them (body.ts parseRequestBody).
  const readBody: FastifyBodyParser<Buffer> = (req, body, done) => {
    try {
      done(null, decodeContentEncoding(req.headers['content-encoding'], body as Buffer, o.limits.bodyBytes));
    } catch (err) {
      done(err as Error, undefined);
    }
  };
  // The same parser under the JSON type too: fastify caches the parser it found for a
  // Content-Type only when it was registered under a type, never the catch-all, so with '*' alone
  // it parsed every request's header again (about 3 µs per request in the profile).
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, readBody);
  app.addContentTypeParser('*', { parseAs: 'buffer' }, readBody);

  // Callback-style hooks: the hot path allocates no promise for them.
  app.addHook('onRequest', (req, reply, done) => {
    reply.headers(headers);
    // From now until all of it has arrived, whatever is answered meanwhile (http/upload-rate.ts).
    if (hasBody(req.headers)) uploads.watch(req.raw, reply.raw);
    if (trust) {
      const problem = forwardedForProblem(req.headers['x-forwarded-for']);
      if (problem) return sendError(reply, badHeader('x-forwarded-for', problem));
    }
    if (o.lifecycle.closing) {
      reply.header('connection', 'close');
      return sendError(reply, unavailable('the ingester is shutting down; retry against another replica', 1));
    }
    if (overload.overloaded) return sendError(reply, unavailable('the ingester is overloaded; retry later'));
    // Before the first routing table every credential would look wrong: say "not yet", not 401.
    if (o.lifecycle.loading)
      return sendError(reply, unavailable('the ingester is still loading its routes; retry in a moment', 1));
    done();
  });

  // After authentication (route onRequest), before any byte of the body is read: the body's bytes
  // are reserved from the budgets of whoever is known to send it.
  app.addHook('preParsing', (req, reply, payload, done) => {
    const bytes = bodies.bytesFor(req.headers['content-length'], req.headers['transfer-encoding']);
    const entry = req.routeEntry;
    const reserved =
      entry && !req.unauthenticated
        ? bodies.reserveAuthenticated(entry.namespace, bytes, entry.overLimitStatus)
        : bodies.reserveUnauthenticated(
            req.ip,
            entry?.name,
            bytes,
            entry !== null && ctx.auth.knownSenders.knows(req.ip, entry.name),
          );
    // Answered here rather than through the error handler: a stranger's refused uploads come
    // hundreds a second, and the answer is the same either way (sendError).
    if (typeof reserved !== 'function') return void sendError(reply, reserved);
    // Only now is the sender invited to upload (`Expect: 100-continue`): one that waits for it
    // while its budget is full got the refusal above before sending a byte of the body.
    // A body announced over the limit is refused next (413) without being invited.
    if (expectsContinue(req.raw) && !(Number(req.headers['content-length']) > o.limits.bodyBytes))
      reply.raw.writeContinue();
    reply.raw.once('close', () => {
      reserved();
      // A body read before its sender was known that never arrived whole (too slow, timed out,
      // abandoned), unanswered or cut with 408: a failed login for the guard, so that holding
      // uploads open without ever proving anything ends in a block, as guessing does.
      if (entry && req.unauthenticated && !req.raw.complete && (!reply.raw.headersSent || reply.statusCode === 408))
        ctx.auth.chargeIncompleteBody(req, entry).catch(() => {});
    });
    done(null, payload);
  });

  app.addHook('onResponse', (req, reply, done) => {
    const endpoint = endpointOf(req);
    o.metrics.requestCounts.add(endpoint, reply.statusCode);
    o.metrics.requestDuration.observe(endpoint, reply.elapsedTime / 1000);
    if (o.activity && endpoint !== 'other')
      recordActivity(o.activity, o.routes, req, endpoint, (req.params as { name?: string }).name);
    if (o.inspector && endpoint === 'events' && req.authenticated) inspect(o.inspector, o.routes, req, reply);
    done();
  });

  app.setErrorHandler((err: FastifyError | IntakeError, req, reply) => {
    const mapped = toIntakeError(err, o.limits.bodyBytes);
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' && keepsConnectionAfterTooLarge(req.raw, o.limits.bodyBytes))
      reply.removeHeader('connection');
    if (mapped.statusCode >= 500 && mapped.code === 'INTERNAL')
      o.logger.error({ err, reqId: req.id }, 'request failed');
    sendError(reply, mapped);
  });
  app.setNotFoundHandler((req, reply) => sendError(reply, notFound(req.method, req.url)));

  app.route(eventsEndpoint(ctx));
  serveDirectFirst(
    server,
    directEventsRoute({ ctx, securityHeaders: headers, bodies, uploads, overload, trust }),
    o.logger,
  );
  app.route(dataPointsEndpoint(ctx));
  for (const url of [EVENTS_PATH, METRICS_PATH]) {
    app.route({
      method: [...OTHER_METHODS],
      url,
      handler: async (req, reply) => sendError(reply, methodNotAllowed(req.method, 'POST')),
    });
  }
  return app;
}

/**
 * The direct events route (endpoints/events-direct.ts) sees each request first; what it does not
 * take goes to fastify's handler, as before. `checkContinue` requests arrive here too (deferContinue).
 */
function serveDirectFirst(server: Server, direct: DirectRoute, logger: Logger): void {
  const handlers = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    let served = false;
    try {
      served = direct(req, res);
    } catch (err) {
      // Never a crash of the request event: a request the direct route could not judge is fastify's.
      logger.error({ err }, 'direct events route failed; the request goes to fastify');
    }
    if (served) return;
    for (const handler of handlers) handler.call(server, req, res);
  });
}

/** A request announces a body: a length above zero, or a chunked body. */
function hasBody(h: { 'content-length'?: string; 'transfer-encoding'?: string }): boolean {
  return h['transfer-encoding'] !== undefined || (h['content-length'] !== undefined && h['content-length'] !== '0');
}

function definedLimits(limits: IngestLimits): Partial<typeof DEFAULT_BODY_ADMISSION> {
  const out: Partial<typeof DEFAULT_BODY_ADMISSION> = {};
  for (const key of Object.keys(DEFAULT_BODY_ADMISSION) as Array<keyof typeof DEFAULT_BODY_ADMISSION>)
    if (limits[key] !== undefined) out[key] = limits[key];
  return out;
}

function definedOnly(limits: IngestLimits): Partial<TimeoutSettings> {
  const out: Partial<TimeoutSettings> = {};
  for (const key of ['headersTimeoutMs', 'requestTimeoutMs', 'keepAliveTimeoutMs'] as const)
    if (limits[key] !== undefined) out[key] = limits[key];
  return out;
}

function endpointOf(req: FastifyRequest): Endpoint {
  const url = req.routeOptions.url;
  return url === EVENTS_PATH ? 'events' : url === METRICS_PATH ? 'metrics' : 'other';
}

/**
 * The event inspector (inspector/inspector.ts) keeps this request if its integration asked for it
 * and the request proved its credentials (the caller checks): a stranger's requests are never kept.
 */
function inspect(inspector: Inspector, routes: () => RouteTable, req: FastifyRequest, reply: FastifyReply): void {
  const entry = req.routeEntry ?? routes().webhook((req.params as { name?: string }).name ?? '');
  if (entry?.inspectRequests === undefined || isDryRun(req.query)) return;
  inspector.capture({
    entry,
    receivedAtMs: Date.now() - reply.elapsedTime,
    remoteAddress: req.ip,
    status: reply.statusCode,
    refusal: req.refusal,
    headers: req.headers,
    body: Buffer.isBuffer(req.body) ? req.body : undefined,
    events: req.mappedEvents ?? undefined,
    decisions: req.ruleDecisions ?? undefined,
  });
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
  if (status >= 400 && status < 500) return badRequest(status, err.message);
  return internalError();
}
