/**
 * The event inspector on the admin listener (never public: payloads are tenants' data):
 *   GET  /inspector/:namespace/:integration         the integration's kept requests, newest first (no bodies)
 *   GET  /inspector/:namespace/:integration/:id     one request: headers, body, events, routing, attempts
 *   POST /inspector/:namespace/:integration/:id/replay   body {"event": <index>}
 *        hands that event to the sinks again, as a new event (a new id), through the tenant's rate
 *        limit: its destinations get it once more. Needs X-Intake-Admin: true and a JSON body
 *        (http/admin-guard.ts), like every state-changing admin call.
 * With the bus every replica answers the same (they read one stream); without it, what this
 * replica received. 404 when the integration is not published here or does not enable the inspector.
 * `intake inspect` and the console call these; the console checks the reader's permission first.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { IntakeError } from '../core/errors.js';
import type { Inspector } from './inspector.js';

export interface InspectorEndpointsOptions {
  inspector: Inspector;
  /** Hands a captured event to the sinks again; resolves with its new id. */
  replay(where: { namespace: string; integration: string }, event: Record<string, unknown>): Promise<string>;
}

type Params = { namespace: string; integration: string; id?: string };

const NAME = /^[a-z0-9]([a-z0-9_-]{0,251}[a-z0-9])?$/;

export function registerInspectorEndpoints(app: FastifyInstance, o: InspectorEndpointsOptions): void {
  app.get<{ Params: Params }>('/inspector/:namespace/:integration', async (req, reply) => {
    const where = whereOf(req.params, reply);
    if (!where) return reply;
    const list = await unavailableOnError(() => o.inspector.list(where), reply);
    if (list === null) return reply;
    if (!list) return notInspected(reply, where);
    return { namespace: where.namespace, integration: where.integration, count: list.length, requests: list };
  });
  app.get<{ Params: Params }>('/inspector/:namespace/:integration/:id', async (req, reply) => {
    const where = whereOf(req.params, reply);
    if (!where) return reply;
    const found = await unavailableOnError(() => o.inspector.get(where, req.params.id ?? ''), reply);
    if (found === null) return reply;
    if (!found)
      return reply
        .code(404)
        .send({ error: 'not_found', message: 'no such request kept (too old, or pushed out by newer ones)' });
    return found;
  });
  app.post<{ Params: Params; Body: { event?: unknown } }>(
    '/inspector/:namespace/:integration/:id/replay',
    async (req, reply) => {
      const where = whereOf(req.params, reply);
      if (!where) return reply;
      const found = await unavailableOnError(() => o.inspector.get(where, req.params.id ?? ''), reply);
      if (found === null) return reply;
      if (!found) return reply.code(404).send({ error: 'not_found', message: 'no such request kept' });
      const index = (req.body ?? {}).event ?? 0;
      const event = typeof index === 'number' ? found.events?.[index] : undefined;
      if (event === undefined || typeof event !== 'object' || event === null)
        return reply.code(400).send({
          error: 'invalid_query',
          field: 'event',
          message: `no event ${JSON.stringify(index)} in this request`,
        });
      try {
        const id = await o.replay(where, event as Record<string, unknown>);
        return { replayed: 1, id };
      } catch (err) {
        // Over the tenant's rate (429/503 with Retry-After), or a sink refused it (503).
        if (err instanceof IntakeError) {
          for (const [name, value] of Object.entries(err.headers ?? {})) void reply.header(name, value);
          return reply.code(err.statusCode).send({ error: err.code, message: err.message });
        }
        return reply.code(503).send({ error: 'unavailable', message: (err as Error).message });
      }
    },
  );
}

function whereOf(p: Params, reply: FastifyReply): { namespace: string; integration: string } | undefined {
  if (!NAME.test(p.namespace) || !NAME.test(p.integration)) {
    void reply.code(400).send({ error: 'invalid_query', message: 'namespace and integration must be names' });
    return undefined;
  }
  return { namespace: p.namespace, integration: p.integration };
}

const notInspected = (reply: FastifyReply, w: { namespace: string; integration: string }) =>
  reply.code(404).send({
    error: 'not_inspected',
    message: `integration ${w.namespace}/${w.integration} is not published here or does not enable the inspector (spec.inspect.enabled)`,
  });

/** The store's failure (the bus unreachable) is a 503; null tells the caller it was answered. */
async function unavailableOnError<T>(run: () => Promise<T>, reply: FastifyReply): Promise<T | null> {
  try {
    return await run();
  } catch (err) {
    void reply.code(503).send({ error: 'unavailable', message: (err as Error).message });
    return null;
  }
}
