/**
 * POST /events/webhook_<name>, top to bottom. Each step is a function below, in this order:
 *
 *   authenticate   (onRequest, before any byte of the body)  the integration's Basic credentials and/or its
 *                             signature headers (a stale timestamp is refused here), request admission
 *   verifySignature (handler, over the body's bytes as received, Content-Encoding undone, before any
 *                             parsing)  signed integrations: the signature (auth/signature-check.ts), then admission
 *   answerRepeated            a signed message id (webhook-id) answered while its timestamp is accepted: the same 200 again
 *   decode                    the body parsed as JSON (body.ts) and the event context (ids from the message id if signed)
 *   answerSlackChallenge      scheme slack: Slack's url_verification request answered with its challenge, nothing stored
 *   mapAndValidate            the integration's mapping if it has one (a custom expression first reserves
 *                             its worst-case CPU time from the namespace), then the contract's validation;
 *                             mapping/mapped-webhooks.ts `map` is the one place that asks "mapped or not"
 *   admit                     per-tenant limits on the whole batch (429/503, nothing accepted)
 *   route                     the integration's routing rules, once per event (routing/rule-decisions.ts),
 *                             their CPU time charged to the namespace; a refusal gives admit's rate back
 *   handOff                   events/accept.ts: to every sink with the rules' decisions (shared with mapping
 *                             dead-letter replay); a refused hand-off gives admit's rate back
 *   answer                    200 with what the sinks hold (remembered for the message id, if signed)
 *
 * `?dryRun=true` stops after mapAndValidate and answers what the body maps to. Every refusal is an
 * error of the catalogue (core/errors.ts), rendered by the listener's error handler.
 */
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { idSourceOf, type IdSource } from '../../core/event-id.js';
import type { EventContext, NormalisedEvent } from '../../core/event.js';
import type { IngesterMetrics } from '../../core/ingester-metrics.js';
import { IntakeError, LimitError } from '../../core/errors.js';
import { acceptEvents } from '../../events/accept.js';
import { destinationsOf } from '../../routing/rule-decisions.js';
import type { RuleDecision } from '../../../api/routing-rules.js';
import { repeatableForMs } from '../../auth/signature-check.js';
import { isDryRun } from '../../mapping/mapped-webhooks.js';
import type { RouteEntry } from '../../routing/route-table.js';
import type { HandOffResult } from '../../sinks/sink.js';
import { traceOf, traceRequests, type TraceCarrier } from '../../tracing/tracing.js';
import { parseRequestBody } from '../body.js';
import { sendError } from '../send-error.js';
import type { IngestContext } from '../context.js';
import { okBody, okSchema } from './reply.js';

export const EVENTS_PATH = '/events/webhook_:name';

type EventsRequest = FastifyRequest<{ Params: { name: string } }>;

/** A request whose sender is proven: its route, and the signed message id if its scheme has one. */
interface Authenticated {
  entry: RouteEntry;
  messageId?: string;
}

/** What decode gives the later steps. */
interface Decoded {
  entry: RouteEntry;
  messageId: string | undefined;
  body: unknown;
  /** The body's JSON bytes, for a mapping that runs in a worker. */
  json: Buffer | undefined;
  eventCtx: EventContext;
}

/** The body as the content type parser kept it: bytes, Content-Encoding undone (none: no body was sent). */
const bodyBytes = (req: FastifyRequest): Buffer => (Buffer.isBuffer(req.body) ? req.body : EMPTY);
const EMPTY = Buffer.alloc(0);

export function eventsEndpoint(ctx: IngestContext): RouteOptions {
  const { metrics } = ctx;

  /**
   * The integration's credentials, then its request admission (limits); the listener invites the
   * body (100 Continue) once its bytes are reserved. A signed integration is admitted once its signature holds (verifySignature): a
   * forged request must not spend the tenant's limits.
   *
   * A refusal at admission is answered here (send-error.ts, as the error handler would), not
   * thrown: a sender far over its limit makes most of an ingester's requests, and the throw and
   * fastify's error route were a measurable part of each refusal's cost, paid on the core the
   * other tenants share. The e2e tests compare this answer with the error handler's byte for byte.
   */
  const authenticate = async (req: EventsRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const { entry, signed, unauthenticated } = await ctx.auth.webhook(req, req.params.name);
    req.routeEntry = entry;
    req.signedHeaders = signed ?? null;
    req.unauthenticated = unauthenticated === true;
    if (!signed) {
      const refusal = ctx.limiter?.refusalFor(entry);
      if (refusal) return sendError(reply, refusal);
    }
    return undefined;
  };

  /** Signed integrations: the signature over the body's bytes, before anything parses them; then admission. */
  const verifySignature = async (req: EventsRequest, bytes: Buffer): Promise<Authenticated> => {
    const entry = req.routeEntry as RouteEntry;
    const signed = req.signedHeaders;
    if (!signed) return { entry };
    await ctx.auth.verifySignature(req, entry, signed, bytes);
    ctx.limiter?.admitRequest(entry);
    return signed.id === undefined ? { entry } : { entry, messageId: signed.id };
  };

  /** A signed message id this replica answered while its timestamp is still accepted: the same 200, nothing processed again. */
  const answerRepeated = (reply: FastifyReply, a: Authenticated): FastifyReply | undefined => {
    if (a.messageId === undefined) return undefined;
    const seen = ctx.seen.answerFor(a.entry.name, a.messageId);
    if (!seen) return undefined;
    metrics.messagesRepeated.inc({ integration: a.entry.name, namespace: a.entry.namespace });
    return reply.send(okBody(seen.processed, seen.cached, seen.received, 'event'));
  };

  /** The body parsed, and where its events' ids and times come from: a signed message id names the events. */
  const decode = (req: EventsRequest, a: Authenticated, bytes: Buffer): Decoded => {
    const body = parseRequestBody(req, ctx.limits.maxJsonDepth);
    const eventCtx = eventContextOf(a.entry, req.headers['idempotency-key'], a.messageId);
    const json = a.entry.mapping?.isolated ? bytes : undefined;
    return { entry: a.entry, messageId: a.messageId, body, json, eventCtx };
  };

  /**
   * Slack's Events API proves a Request URL before it sends any event: a signed
   * `{"type":"url_verification","challenge":"..."}` that must be answered 200 with the challenge
   * (https://api.slack.com/events/url_verification), or the subscription cannot be set up. Only for
   * scheme slack, only once its signature holds (verifySignature), and nothing is stored or
   * mapped: it is not an event. A string, so the route's 200 schema does not serialize it away.
   */
  const answerSlackChallenge = (reply: FastifyReply, d: Decoded): FastifyReply | undefined => {
    if (d.entry.signature?.rule.scheme !== 'slack') return undefined;
    const body = d.body as { type?: unknown; challenge?: unknown } | null | undefined;
    if (typeof body !== 'object' || body === null || body.type !== 'url_verification') return undefined;
    if (typeof body.challenge !== 'string') return undefined;
    return reply.type('application/json; charset=utf-8').send(JSON.stringify({ challenge: body.challenge }));
  };

  /** Mapped (a failure is kept as a dead letter and answered 422) or as sent, then validated; a refusal is counted. */
  const mapAndValidate = (req: EventsRequest, d: Decoded): NormalisedEvent[] | Promise<NormalisedEvent[]> =>
    mapAndValidateEvents(ctx, d.entry, d.body, d.eventCtx, req.headers['content-type'], d.json);

  /** 200 with what the sinks hold; the request notes what it accepted (the listener records activity). */
  const answer = (
    req: EventsRequest,
    reply: FastifyReply,
    d: Decoded,
    result: HandOffResult,
    received: number,
  ): FastifyReply => {
    if (d.messageId !== undefined)
      ctx.seen.remember(
        d.entry.name,
        d.messageId,
        repeatableForMs(d.entry.signature!.rule, req.signedHeaders!, Date.now()),
        {
          processed: result.processed,
          cached: result.cached,
          received,
        },
      );
    req.accepted = received;
    return reply.send(okBody(result.processed, result.cached, received, 'event'));
  };

  /** ?dryRun=true: what the body maps to, accepting and counting nothing. */
  const answerDryRun = async (reply: FastifyReply, d: Decoded): Promise<FastifyReply> =>
    reply
      .type('application/json; charset=utf-8')
      .send(JSON.stringify(await ctx.mapped.dryRun(d.body, d.entry, d.eventCtx, d.json)));

  return {
    method: 'POST',
    url: EVENTS_PATH,
    schema: { response: okSchema },
    onRequest: authenticate,
    // Tracing (tracing/tracing.ts): a receive span around the handler, and its map and hand-off steps.
    handler: traceRequests(EVENTS_PATH, async (req: EventsRequest, reply: FastifyReply) => {
      const trace = traceOf(req);
      const bytes = bodyBytes(req);
      const authenticated = await verifySignature(req, bytes);
      const dryRun = isDryRun(req.query);
      if (!dryRun) {
        const repeated = answerRepeated(reply, authenticated);
        if (repeated) return repeated;
      }
      const decoded = decode(req, authenticated, bytes);
      const challenged = answerSlackChallenge(reply, decoded);
      if (challenged) return challenged;
      if (dryRun) return answerDryRun(reply, decoded);
      const mapping = trace?.step('map');
      const events = await mapAndValidate(req, decoded);
      mapping?.end();
      req.mappedEvents = events;
      admit(ctx, decoded.entry, events);
      const decisions = await route(ctx, decoded.entry, events);
      req.ruleDecisions = decisions ?? null;
      const handing = trace?.step('hand-off');
      const result = await handOff(ctx, decoded.entry, decoded.eventCtx, events, req.id, decisions, handing?.carrier);
      handing?.end();
      if (decisions) req.droppedByRule = countDropped(decoded.entry, decisions, metrics);
      return answer(req, reply, decoded, result, events.length);
    }),
  } as RouteOptions;
}

/*
 * The steps both ways of serving this route share: this fastify route and the direct node:http
 * one (events-direct.ts), which serves the common request (Basic, unsigned, plain JSON) without
 * fastify's lifecycle. One definition each, so the two cannot drift apart.
 */

/** Where a request's events get their ids and time: a signed message id names them, else the Idempotency-Key. */
export function eventContextOf(
  entry: RouteEntry,
  idempotencyKey: string | string[] | undefined,
  messageId?: string,
): EventContext {
  const idSource: IdSource =
    messageId !== undefined ? { kind: 'key', key: `message-id ${messageId}` } : idSourceOf(idempotencyKey);
  return { integration: entry.name, namespace: entry.namespace, receivedAtMs: Date.now(), idSource };
}

/**
 * Mapped (a failure is kept as a dead letter and answered 422) or as sent, then validated; a
 * refusal is counted. An integration without a mapping is answered synchronously (no promise).
 */
export function mapAndValidateEvents(
  ctx: IngestContext,
  entry: RouteEntry,
  body: unknown,
  eventCtx: EventContext,
  contentType: string | undefined,
  json: Buffer | undefined,
): NormalisedEvent[] | Promise<NormalisedEvent[]> {
  const counted = (err: unknown): never => {
    // A namespace that could not reserve its mapping's CPU was counted as refused by the limiter.
    if (err instanceof LimitError) throw err;
    // Only the contract's validation refuses a body as sent with INVALID_BODY; a mapped body's
    // problems are the mapping's (422, 503), never INVALID_BODY.
    const reason = err instanceof IntakeError && err.code === 'INVALID_BODY' ? 'invalid' : 'mapping';
    ctx.metrics.eventsRejected.inc(
      { integration: entry.name, namespace: entry.namespace, reason },
      Array.isArray(body) ? body.length : 1,
    );
    throw err;
  };
  try {
    const events = ctx.mapped.toEvents(body, entry, eventCtx, contentType, json);
    return Array.isArray(events) ? events : events.catch(counted);
  } catch (err) {
    return counted(err);
  }
}

/** Per-tenant limits: the whole batch, or a refusal (429/503) and nothing accepted. */
export function admit(ctx: IngestContext, entry: RouteEntry, events: readonly NormalisedEvent[]): void {
  ctx.limiter?.take(entry, events.length);
}

/**
 * The routing rules' decision for each event, taken once here and charged to the namespace's CPU
 * (routing/rule-decisions.ts); undefined for an integration without rules. A namespace over its
 * CPU budget is refused, with admit's rate given back: nothing was accepted.
 */
export function route(
  ctx: IngestContext,
  entry: RouteEntry,
  events: readonly NormalisedEvent[],
): RuleDecision[] | undefined | Promise<RuleDecision[] | undefined> {
  // Without rules there is nothing to decide or charge: no promise either.
  if (!entry.rules) return undefined;
  return decideByRules(ctx, entry, events);
}

async function decideByRules(
  ctx: IngestContext,
  entry: RouteEntry,
  events: readonly NormalisedEvent[],
): Promise<RuleDecision[] | undefined> {
  try {
    return await ctx.mapped.decideRoutes(entry, events);
  } catch (err) {
    ctx.limiter?.giveBack(entry, events.length);
    throw err;
  }
}

/**
 * To every sink (events/accept.ts), each event to the destinations its rules decided; a failing sink means 503 and nothing acknowledged. A refused
 * hand-off (the namespace's share of the spool or the outbox full, the bus down with no room to
 * spool) gives back the rate admit took: nothing was accepted, and the sender's retry once the
 * store recovers must not meet a 429 for events it was never allowed to send. The store's room
 * is only known once the batch reaches it (it is shared by requests in flight, and the bus
 * answers first), so the rate is taken first and returned, never checked against a guess.
 */
export async function handOff(
  ctx: IngestContext,
  entry: RouteEntry,
  eventCtx: EventContext,
  events: readonly NormalisedEvent[],
  reqId: string,
  decisions?: readonly RuleDecision[],
  trace?: TraceCarrier,
): Promise<HandOffResult> {
  try {
    return await acceptEvents(
      events,
      eventCtx,
      {
        sinks: ctx.sinks,
        metrics: ctx.metrics,
        trace,
        onSinkError: (sink, err) =>
          ctx.failures.error(`sink:${sink}`, err, { sink, reqId }, 'event sink failed; answered 503'),
      },
      decisions && destinationsOf(decisions),
    );
  } catch (err) {
    ctx.limiter?.giveBack(entry, events.length);
    throw err;
  }
}

/** Accepted events a routing rule dropped, counted by rule (intake_events_dropped_by_rule_total). */
export function countDropped(entry: RouteEntry, decisions: readonly RuleDecision[], metrics: IngesterMetrics): number {
  let dropped = 0;
  for (const d of decisions) {
    if (d.droppedBy === undefined) continue;
    dropped++;
    metrics.eventsDroppedByRule.inc({ integration: entry.name, namespace: entry.namespace, rule: d.droppedBy });
  }
  return dropped;
}
