/**
 * POST /events/webhook_<name>: authenticate (onRequest), then validate and normalise the events,
 * hand them to every sink, and answer what the sinks hold.
 */
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { idSourceOf } from '../../core/event-id.js';
import { parseEvents, type EventContext, type NormalisedEvent } from '../../core/event.js';
import { isDryRun } from '../../mapping/mapped-webhooks.js';
import type { RouteEntry } from '../../routing/route-table.js';
import type { IngestContext } from '../context.js';
import { deliverToAll } from '../../sinks/sink.js';
import { continueIfExpected, okBody, okSchema } from './reply.js';

export const EVENTS_PATH = '/events/webhook_:name';

type EventsRequest = FastifyRequest<{ Params: { name: string } }>;

export function eventsEndpoint(ctx: IngestContext): RouteOptions {
  const { metrics } = ctx;

  /** The integration's mapping (if any) turns the body into events; then the usual validation. */
  const validate = async (req: EventsRequest, entry: RouteEntry, eventCtx: EventContext): Promise<NormalisedEvent[]> => {
    try {
      return entry.mapping ? await ctx.mapped.toEvents(req.body, entry, eventCtx, req.headers['content-type'], req.rawJson ?? undefined) : parseEvents(req.body, ctx.limits.eventsPerRequest, eventCtx);
    } catch (err) {
      metrics.eventsRejected.inc({ integration: entry.name, namespace: entry.namespace, reason: entry.mapping ? 'mapping' : 'invalid' }, Array.isArray(req.body) ? req.body.length : 1);
      throw err;
    }
  };

  const handOff = (req: EventsRequest, events: NormalisedEvent[]) =>
    deliverToAll(ctx.sinks, events, (sink, err) => {
      metrics.sinkErrors.inc({ sink });
      ctx.failures.error(`sink:${sink}`, err, { sink, reqId: req.id }, 'event sink failed; answered 503');
    });

  return {
    method: 'POST',
    url: EVENTS_PATH,
    schema: { response: okSchema },
    onRequest: async (req: EventsRequest, reply: FastifyReply) => {
      req.routeEntry = await ctx.auth.webhook(req, req.params.name);
      ctx.limiter?.admitRequest(req.routeEntry);
      continueIfExpected(req, reply);
    },
    handler: async (req: EventsRequest, reply: FastifyReply) => {
      const entry = req.routeEntry as RouteEntry;
      const labels = { integration: entry.name, namespace: entry.namespace };
      const eventCtx: EventContext = { ...labels, receivedAtMs: Date.now(), idSource: idSourceOf(req.headers['idempotency-key']) };
      // ?dryRun=true: what the body maps to, accepting and counting nothing.
      if (isDryRun(req.query)) return reply.type('application/json; charset=utf-8').send(JSON.stringify(await ctx.mapped.dryRun(req.body, entry, eventCtx, req.rawJson ?? undefined)));
      const events = await validate(req, entry, eventCtx);
      // Per-tenant limits: the whole batch, or a refusal (429/503) and nothing accepted.
      ctx.limiter?.take(entry, events.length);
      metrics.eventsReceived.inc(labels, events.length);
      const result = await handOff(req, events);
      metrics.eventsProcessed.inc(labels, result.processed);
      if (result.cached > 0) metrics.eventsCached.inc(labels, result.cached);
      return reply.send(okBody(result.processed, result.cached, events.length, 'event'));
    },
  } as RouteOptions;
}
