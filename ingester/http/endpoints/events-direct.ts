/**
 * POST /events/webhook_<name> served straight from node:http, ahead of fastify, for the request
 * most senders make: one JSON body with a Content-Length, Basic credentials, an unsigned
 * integration; and, of a signed integration's requests of that shape, those refused before any
 * byte of their body is read (refusedBeforeBody). Everything else (a signed integration's
 * requests that get that far, `?dryRun`, Content-Encoding, chunked bodies,
 * `Expect: 100-continue`, bodies announced over the limit, an X-Forwarded-For that is not a list of
 * addresses while a proxy is trusted, an ingester that is loading, shutting down or overloaded,
 * unknown names) is left to fastify's route (events.ts), decided from the request line and headers
 * before anything is done. Behind a trusted proxy the sender's address is worked out as fastify
 * does (client-address.ts, the same trust function).
 *
 * Why: fastify's lifecycle (routing, hooks, reply, serializer) cost about as much per single
 * event as all of intake's own steps together (docs/benchmarks.md, where the single-event path's
 * time goes). The steps are the same functions the fastify route runs, in the same order, with
 * the same answers:
 *
 *   takes         the request line and headers say this is the common request (else: fastify)
 *   authenticate  the integration's Basic credentials (auth/authenticator.ts: brute-force guard,
 *                 failure floor), then the tenant's request admission (429/503)
 *   reserveBody   the body's bytes from the namespace's in-flight budget (body-admission.ts)
 *   readBody      the bytes; the upload-rate guard has watched them since the headers came in
 *   decode        JSON with the depth limit (body.ts), the event context (events.ts)
 *   mapAndValidate, admit, handOff, countDropped   events.ts, shared with the fastify route
 *   answer        200, or the refusal of the error catalogue, with the security headers
 *   answered      (on finish) request metrics and activity, as the listener's onResponse does
 *
 * A signed integration (signature only) reads its body before it can refuse, so the bytes are first
 * reserved from the budgets of senders not yet proven (http/body-admission.ts). A stranger's
 * uploads that find those full come hundreds a second, and through fastify each refusal cost the
 * ingester twice what a bare node:http server spends answering it: so the steps before the body
 * (the brute-force guard's block, the signature headers, the body's reservation) are taken here
 * first, and a refusal among them is answered here. A request that passes them goes to fastify's
 * route, which takes them again, reserves the bytes and reads the body.
 */
import type { FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { badRequest, internalError, IntakeError, unavailable } from '../../core/errors.js';
import type { RouteEntry } from '../../routing/route-table.js';
import { isAcceptedContentType, parseJsonBody } from '../body.js';
import type { BodyAdmission } from '../body-admission.js';
import type { IngestContext } from '../context.js';
import { clientAddress, type TrustFunction } from '../client-address.js';
import { forwardedForProblem } from '../guards.js';
import type { EventLoopGuard } from '../overload.js';
import { recordActivity, type AnsweredRequest } from '../request-activity.js';
import { nextRequestId } from '../request-id.js';
import type { UploadRateGuard } from '../upload-rate.js';
import type { WebhookAuthentication } from '../../auth/authenticator.js';
import { tracingOn } from '../../tracing/tracing.js';
import { includesBasic } from '../../../api/signatures.js';
import { admit, countDropped, eventContextOf, handOff, mapAndValidateEvents, route } from './events.js';

export interface DirectEventsOptions {
  ctx: IngestContext;
  securityHeaders: Readonly<Record<string, string>>;
  bodies: BodyAdmission;
  uploads: UploadRateGuard;
  overload: EventLoopGuard;
  /** The trusted proxies (fastify is given the same function), or false: the sender is the connection's peer. */
  trust: TrustFunction | false;
}

/** Serves the request and returns true, or returns false at once, having done nothing: fastify serves it. */
export type DirectRoute = (req: IncomingMessage, res: ServerResponse) => boolean;

const PREFIX = '/events/webhook_';
/** Integration names as Kubernetes names them; anything else (escapes, a query, a slash) goes to fastify's router. */
const PLAIN_NAME = /^[a-z0-9][a-z0-9.-]*$/;
const DIGITS = /^[0-9]+$/;
const JSON_TYPE = 'application/json; charset=utf-8';
const CHANGED = 'the integration changed while this request was being checked; retry';

/** One request on its way through, and what the listener records of it once answered. */
interface DirectRequest extends AnsweredRequest {
  id: string;
  /** As on fastify's request: the Authenticator reads the raw headers from it. */
  raw: IncomingMessage;
  name: string;
  startedMs: number;
}

export function directEventsRoute(o: DirectEventsOptions): DirectRoute {
  const { ctx, bodies, uploads } = o;
  const { metrics, limits } = ctx;
  const security = Object.entries(o.securityHeaders).flat();

  /**
   * The common request, decided from its request line and headers alone: its integration's name,
   * and whether the integration is signed (only a refusal before its body is answered here), or undefined.
   */
  const takes = (req: IncomingMessage): { name: string; bytes: number; signed: boolean } | undefined => {
    // With tracing on, fastify's route serves every request: its spans are made there (tracing/).
    if (req.method !== 'POST' || tracingOn()) return undefined;
    const url = req.url;
    if (url === undefined || !url.startsWith(PREFIX)) return undefined;
    const name = url.slice(PREFIX.length);
    if (!PLAIN_NAME.test(name)) return undefined;
    const h = req.headers;
    if (h['transfer-encoding'] !== undefined || h.expect !== undefined || h['content-encoding'] !== undefined)
      return undefined;
    // A malformed X-Forwarded-For from behind a trusted proxy: fastify's onRequest answers 400.
    if (o.trust && forwardedForProblem(h['x-forwarded-for']) !== undefined) return undefined;
    const length = h['content-length'];
    if (length === undefined || !DIGITS.test(length)) return undefined;
    const bytes = Number(length);
    if (bytes === 0 || bytes > limits.bodyBytes || !isAcceptedContentType(h['content-type'])) return undefined;
    const { lifecycle } = ctx;
    if (lifecycle.closing || lifecycle.loading || o.overload.overloaded) return undefined;
    const entry = ctx.routes().webhook(name);
    // An inspected integration is captured in fastify's route.
    if (!entry || entry.inspectRequests !== undefined) return undefined;
    // A signed one checks its signature there; one that takes Basic credentials too is checked there whole.
    if (entry.signature) return includesBasic(entry.mode) ? undefined : { name, bytes, signed: true };
    return { name, bytes, signed: false };
  };

  /**
   * A signed integration's request refused before its body is read: the answer fastify's route
   * would give, from the step that gives it first (the guard's block: 429, thrown; a missing or
   * stale signature header: 401 after the failure floor, a promise), else the unproven senders'
   * body budget's when the body would not fit. Undefined otherwise: nothing was kept or counted,
   * and fastify's route serves it (checking the same again, and reserving the bytes itself).
   */
  const refusedBeforeBody = (r: DirectRequest, bytes: number): IntakeError | Promise<IntakeError> | undefined => {
    let checked: ReturnType<typeof ctx.auth.webhook>;
    try {
      checked = ctx.auth.webhook(r as unknown as FastifyRequest, r.name);
    } catch (err) {
      return asRefusal(err);
    }
    // A signature-only integration's check passes at once or fails after the floor: a promise
    // that resolves means the integration changed meanwhile (it takes Basic credentials now).
    if (checked instanceof Promise) return checked.then(() => unavailable(CHANGED, 1), asRefusal);
    const trial = bodies.reserveUnauthenticated(r.ip, r.name, bytes, ctx.auth.knownSenders.knows(r.ip, r.name));
    if (typeof trial === 'function') return void trial();
    r.routeEntry = checked.entry;
    return trial;
  };

  /** After the Basic credentials (authenticate, in serve): request admission; the route, or undefined once refused. */
  const admitted = (r: DirectRequest, res: ServerResponse, auth: WebhookAuthentication): RouteEntry | undefined => {
    const { entry, signed } = auth;
    r.routeEntry = entry;
    // The integration became a signed one (a reload) after `takes` looked: its signature is checked
    // only on fastify's route, so this request is not accepted here.
    if (signed || entry.signature) return void refuse(r, res, unavailable(CHANGED, 1));
    const refusal = ctx.limiter?.refusalFor(entry);
    if (refusal) return void refuse(r, res, refusal);
    return entry;
  };

  /** The body's bytes from the namespace's budget, given back when the response closes; false once refused. */
  const reserveBody = (r: DirectRequest, res: ServerResponse, entry: RouteEntry, bytes: number): boolean => {
    const reserved = bodies.reserveAuthenticated(entry.namespace, bytes, entry.overLimitStatus);
    if (typeof reserved !== 'function') return (refuse(r, res, reserved), false);
    // A response closes once: `on`, without once's wrapper per request.
    res.on('close', reserved);
    return true;
  };

  const serve = async (r: DirectRequest, res: ServerResponse, bytes: number): Promise<void> => {
    try {
      // The integration's Basic credentials: a sender whose header verified before is answered
      // at once, without a promise.
      const checked = ctx.auth.webhook(r as unknown as FastifyRequest, r.name);
      const entry = admitted(r, res, checked instanceof Promise ? await checked : checked);
      if (!entry || !reserveBody(r, res, entry, bytes)) return;
      const raw = await readBody(r.raw, bytes);
      const contentType = r.headers['content-type'];
      const body = parseJsonBody(contentType, raw, limits.maxJsonDepth);
      const eventCtx = eventContextOf(entry, r.headers['idempotency-key']);
      const json = entry.mapping?.isolated ? raw : undefined;
      // Without a mapping or rules these two answer at once: no turn of the microtask queue each.
      const mapped = mapAndValidateEvents(ctx, entry, body, eventCtx, contentType, json);
      const events = Array.isArray(mapped) ? mapped : await mapped;
      admit(ctx, entry, events);
      const routed = route(ctx, entry, events);
      const decisions = routed instanceof Promise ? await routed : routed;
      const result = await handOff(ctx, entry, eventCtx, events, r.id, decisions);
      if (decisions) r.droppedByRule = countDropped(entry, decisions, metrics);
      r.accepted = events.length;
      send(res, 200, okJson(result.processed, result.cached, events.length), undefined);
    } catch (err) {
      const refusal = err instanceof IntakeError ? err : internalError();
      if (refusal.code === 'INTERNAL') ctx.logger.error({ err, reqId: r.id }, 'request failed');
      refuse(r, res, refusal);
    }
  };

  /** The catalogue's answer (send-error.ts gives fastify's requests the same bytes). */
  const refuse = (r: DirectRequest, res: ServerResponse, err: IntakeError): void => {
    r.refusal = err;
    send(res, err.statusCode, err.renderedBody(), err.headers);
  };

  const send = (
    res: ServerResponse,
    status: number,
    body: string,
    extra: Readonly<Record<string, string>> | undefined,
  ): void => {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, extra ? headersFor(body, extra) : okHeadersFor(body)).end(body);
  };

  /**
   * In fastify's order (security headers, the refusal's own, then the body's), so that an answer
   * is the same bytes whichever way its request was served. Node only reads the list.
   */
  const headersFor = (body: string, extra: Readonly<Record<string, string>> | undefined): string[] => {
    const headers = security.slice();
    if (extra) for (const [name, value] of Object.entries(extra)) headers.push(name, value);
    headers.push('content-type', JSON_TYPE, 'content-length', String(Buffer.byteLength(body)));
    return headers;
  };
  /** An answer without headers of its own: the last body's list is reused (every single event's 200 is the same). */
  let lastBody = '';
  let lastHeaders: string[] = [];
  const okHeadersFor = (body: string): string[] => {
    if (body !== lastBody) {
      lastHeaders = headersFor(body, undefined);
      lastBody = body;
    }
    return lastHeaders;
  };

  /** What the listener's onResponse does for fastify's requests. */
  const answered = (r: DirectRequest, res: ServerResponse): void => {
    metrics.requestCounts.add('events', res.statusCode);
    metrics.requestDuration.observe('events', (performance.now() - r.startedMs) / 1000);
    if (ctx.activity) recordActivity(ctx.activity, ctx.routes, r, 'events', r.name);
  };

  return (req, res) => {
    const taken = takes(req);
    if (!taken) return false;
    const r: DirectRequest = {
      id: nextRequestId(),
      raw: req,
      name: taken.name,
      startedMs: performance.now(),
      ip: clientAddress(req, o.trust),
      headers: req.headers as IncomingHttpHeaders,
      authenticated: false,
      routeEntry: null,
      refusal: null,
      accepted: 0,
      droppedByRule: 0,
    };
    const refusal = taken.signed ? refusedBeforeBody(r, taken.bytes) : undefined;
    if (taken.signed && refusal === undefined) return false;
    res.on('finish', () => answered(r, res));
    // From now until all of it has arrived, whatever is answered meanwhile (upload-rate.ts).
    uploads.watch(req, res);
    if (refusal instanceof Promise) void refusal.then((err) => refuse(r, res, err));
    else if (refusal) refuse(r, res, refusal);
    else void serve(r, res, taken.bytes);
    return true;
  };
}

const asRefusal = (err: unknown): IntakeError => (err instanceof IntakeError ? err : internalError());

/** The body's bytes; Node's parser delivers exactly Content-Length of them, or the request never ends. */
function readBody(req: IncomingMessage, expected: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
    });
    // A request ends or fails once: `on`, without once's wrapper per request.
    req.on('end', () =>
      received === expected
        ? resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received))
        : reject(badRequest(400, 'Request body size did not match Content-Length')),
    );
    // As fastify answers a body that failed to arrive (its sender gone, mostly): 400.
    req.on('error', (err) => reject(badRequest(400, err.message)));
  });
}

/**
 * The 200 answer (reply.ts okBody, the interface document's shape), as fastify's serializer
 * writes it; the one for a single event made once.
 */
const okJson = (processed: number, cached: number, received: number): string =>
  processed === 1 && cached === 0 && received === 1
    ? ONE_EVENT
    : `{"response":{"processed":${processed},"cached":${cached},"received":${received}},"success":true,"message":"Processed ${processed} event(s)"}`;
const ONE_EVENT =
  '{"response":{"processed":1,"cached":0,"received":1},"success":true,"message":"Processed 1 event(s)"}';
