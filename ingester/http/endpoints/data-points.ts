/**
 * POST /v1/integrations/metrics: authenticate the API key (onRequest), then validate the data
 * points and write them to the series of the key's namespace, all or nothing.
 */
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { parseDataPoints, type DataPoint } from '../../series/data-points.js';
import type { RouteEntry } from '../../routing/route-table.js';
import { parseRequestBody } from '../body.js';
import type { IngestContext } from '../context.js';
import { traceRequests } from '../../tracing/tracing.js';
import { okBody, okSchema } from './reply.js';

export const METRICS_PATH = '/v1/integrations/metrics';

export function dataPointsEndpoint(ctx: IngestContext): RouteOptions {
  const { metrics } = ctx;

  const validate = (body: unknown, namespace: string): DataPoint[] => {
    try {
      return parseDataPoints(body, ctx.limits.pointsPerRequest, { maxLabelChars: ctx.limits.maxSeriesLabelChars });
    } catch (err) {
      metrics.pointsRejected.inc({ namespace, reason: 'invalid' }, Array.isArray(body) ? body.length : 1);
      throw err;
    }
  };

  /** All or nothing; a batch the series caps refuse gives back the rate it took: none of it was stored. */
  const store = (entry: RouteEntry, points: DataPoint[]): void => {
    try {
      ctx.series.write(entry.namespace, points, ctx.limiter ? ctx.limiter.maxSeries(entry) : entry.maxSeries);
    } catch (err) {
      ctx.limiter?.giveBack(entry, points.length);
      metrics.pointsRejected.inc({ namespace: entry.namespace, reason: 'series_limit' }, points.length);
      throw err;
    }
  };

  return {
    method: 'POST',
    url: METRICS_PATH,
    schema: { response: okSchema },
    // `Expect: 100-continue` is answered by the listener once the body's bytes are reserved.
    onRequest: async (req: FastifyRequest) => {
      req.routeEntry = await ctx.auth.apiKey(req);
      ctx.limiter?.admitRequest(req.routeEntry);
    },
    // Tracing (tracing/tracing.ts): a receive span around the handler.
    handler: traceRequests(METRICS_PATH, async (req: FastifyRequest, reply: FastifyReply) => {
      const entry = req.routeEntry as RouteEntry;
      const points = validate(parseRequestBody(req, ctx.limits.maxJsonDepth), entry.namespace);
      // Remote write admits the batch first (503 when the namespace's share of its queue, or the
      // queue, is full), and queues it only once the rate and the series caps accepted it: all or
      // nothing, with nothing awaited in between, so the room admit() found is still there for
      // commit(). Admitting before the rate's tokens are taken means a batch the queue refuses
      // does not spend the namespace's rate: its retry, once the queue drains, is not refused for
      // a rate it never used.
      const forward = ctx.remoteWrite?.admit(entry.namespace, points);
      // Per-tenant limits: the whole batch, or a refusal (429/503) and nothing accepted.
      ctx.limiter?.take(entry, points.length);
      metrics.pointsReceived.inc({ namespace: entry.namespace }, points.length);
      store(entry, points);
      forward?.commit();
      metrics.pointsProcessed.inc({ namespace: entry.namespace }, points.length);
      req.accepted = points.length;
      return reply.send(okBody(points.length, 0, points.length, 'data point'));
    }),
  };
}
