/**
 * POST /events/webhook_<name>: authenticate (onRequest), then validate and normalise the events,
 * hand them to every sink, and answer what the sinks hold.
 */
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { idSourceOf } from '../event-id.js';
import { parseEvents, type NormalisedEvent } from '../events.js';
import type { RouteEntry } from '../route-table.js';
import type { IngestContext } from '../server.js';
import { deliverToAll } from '../sinks/sink.js';
import { continueIfExpected, okBody, okSchema } from './reply.js';

export const EVENTS_PATH = '/events/webhook_:name';

type EventsRequest = FastifyRequest<{ Params: { name: string } }>;

export function eventsRoute(ctx: IngestContext): RouteOptions {
  const { metrics } = ctx;

  const validate = (req: EventsRequest, entry: RouteEntry): NormalisedEvent[] => {
    const labels = { integration: entry.name, namespace: entry.namespace };
    try {
      return parseEvents(req.body, ctx.limits.eventsPerRequest, { ...labels, receivedAtMs: Date.now(), idSource: idSourceOf(req.headers['idempotency-key']) });
    } catch (err) {
      metrics.eventsRejected.inc({ ...labels, reason: 'invalid' }, Array.isArray(req.body) ? req.body.length : 1);
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
      continueIfExpected(req, reply);
    },
    handler: async (req: EventsRequest, reply: FastifyReply) => {
      const entry = req.routeEntry as RouteEntry;
      const labels = { integration: entry.name, namespace: entry.namespace };
      const events = validate(req, entry);
      metrics.eventsReceived.inc(labels, events.length);
      const result = await handOff(req, events);
      metrics.eventsProcessed.inc(labels, result.processed);
      if (result.cached > 0) metrics.eventsCached.inc(labels, result.cached);
      return reply.send(okBody(result.processed, result.cached, events.length, 'event'));
    },
  } as RouteOptions;
}
