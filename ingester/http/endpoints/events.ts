/**
 * POST /events/webhook_<name>, top to bottom. Each step is a function below, in this order:
 *
 *   authenticate   (onRequest, before any byte of the body)  the integration's credentials, request admission
 *   decode         (handler)  the parsed body (http/listener.ts content parser) and the event context
 *   mapAndValidate            the integration's mapping if it has one, then the contract's validation;
 *                             mapping/mapped-webhooks.ts `map` is the one place that asks "mapped or not"
 *   admit                     per-tenant limits on the whole batch (429/503, nothing accepted)
 *   handOff                   events/accept.ts: to every sink (shared with mapping dead-letter replay)
 *   answer                    200 with what the sinks hold
 *
 * `?dryRun=true` stops after mapAndValidate and answers what the body maps to. Every refusal is an
 * error of the catalogue (core/errors.ts), rendered by the listener's error handler.
 */
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { idSourceOf } from '../../core/event-id.js';
import type { EventContext, NormalisedEvent } from '../../core/event.js';
import { IntakeError } from '../../core/errors.js';
import { acceptEvents } from '../../events/accept.js';
import { isDryRun } from '../../mapping/mapped-webhooks.js';
import type { RouteEntry } from '../../routing/route-table.js';
import type { HandOffResult } from '../../sinks/sink.js';
import type { IngestContext } from '../context.js';
import { continueIfExpected, okBody, okSchema } from './reply.js';

export const EVENTS_PATH = '/events/webhook_:name';

type EventsRequest = FastifyRequest<{ Params: { name: string } }>;

/** What decode gives the later steps. */
interface Decoded {
  entry: RouteEntry;
  body: unknown;
  /** The body's JSON bytes, for a mapping that runs in a worker. */
  json: Buffer | undefined;
  eventCtx: EventContext;
}

export function eventsEndpoint(ctx: IngestContext): RouteOptions {
  const { metrics } = ctx;

  /** The integration's credentials, then its request admission (limits); invites the body (100 Continue). */
  const authenticate = async (req: EventsRequest, reply: FastifyReply): Promise<void> => {
    req.routeEntry = await ctx.auth.webhook(req, req.params.name);
    ctx.limiter?.admitRequest(req.routeEntry);
    continueIfExpected(req, reply);
  };

  /** The body as the listener parsed it, and where its events' ids and times come from. */
  const decode = (req: EventsRequest): Decoded => {
    const entry = req.routeEntry as RouteEntry;
    const eventCtx: EventContext = {
      integration: entry.name,
      namespace: entry.namespace,
      receivedAtMs: Date.now(),
      idSource: idSourceOf(req.headers['idempotency-key']),
    };
    return { entry, body: req.body, json: req.rawJson ?? undefined, eventCtx };
  };

  /** Mapped (a failure is kept as a dead letter and answered 422) or as sent, then validated; a refusal is counted. */
  const mapAndValidate = async (req: EventsRequest, d: Decoded): Promise<NormalisedEvent[]> => {
    try {
      return await ctx.mapped.toEvents(d.body, d.entry, d.eventCtx, req.headers['content-type'], d.json);
    } catch (err) {
      // Only the contract's validation refuses a body as sent with INVALID_BODY; a mapped body's
      // problems are the mapping's (422, 503), never INVALID_BODY.
      const reason = err instanceof IntakeError && err.code === 'INVALID_BODY' ? 'invalid' : 'mapping';
      metrics.eventsRejected.inc(
        { integration: d.entry.name, namespace: d.entry.namespace, reason },
        Array.isArray(d.body) ? d.body.length : 1,
      );
      throw err;
    }
  };

  /** Per-tenant limits: the whole batch, or a refusal (429/503) and nothing accepted. */
  const admit = (d: Decoded, events: readonly NormalisedEvent[]): void => {
    ctx.limiter?.take(d.entry, events.length);
  };

  /** To every sink (events/accept.ts); a failing sink means 503 and nothing acknowledged. */
  const handOff = (req: EventsRequest, d: Decoded, events: readonly NormalisedEvent[]): Promise<HandOffResult> =>
    acceptEvents(events, d.eventCtx, {
      sinks: ctx.sinks,
      metrics,
      onSinkError: (sink, err) =>
        ctx.failures.error(`sink:${sink}`, err, { sink, reqId: req.id }, 'event sink failed; answered 503'),
    });

  /** 200 with what the sinks hold; the request notes what it accepted (the listener records activity). */
  const answer = (req: EventsRequest, reply: FastifyReply, result: HandOffResult, received: number): FastifyReply => {
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
    handler: async (req: EventsRequest, reply: FastifyReply) => {
      const decoded = decode(req);
      if (isDryRun(req.query)) return answerDryRun(reply, decoded);
      const events = await mapAndValidate(req, decoded);
      admit(decoded, events);
      const result = await handOff(req, decoded, events);
      return answer(req, reply, result, events.length);
    },
  } as RouteOptions;
}
