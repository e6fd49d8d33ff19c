/**
 * The destinations on the admin listener: their state, and pause and resume at runtime.
 *   GET  /destinations                 every destination: kind, circuit state, pause (and its
 *                                      Paused condition: Suspended, AutoPaused, PausedByAdmin, Active)
 *   GET  /destinations/<name>          one
 *   POST /destinations/<name>/pause    holds its events (nothing sent, nothing dead-lettered) until a resume
 *   POST /destinations/<name>/resume   ends a pause by this API or an auto-pause; 409 when its settings
 *                                      say `suspend: true` (the settings win: change them instead)
 * Like every state-changing admin call the POSTs need X-Intake-Admin: true and a JSON body
 * (http/admin-guard.ts). With the bus, a pause or resume holds on every replica (pause-kv-store.ts).
 * `intake destination list|get|pause|resume` calls these.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Destinations } from './set-up-destinations.js';

/** What the endpoints need of the destinations (undefined: none configured). */
export type DestinationsView = Pick<Destinations, 'names' | 'pauses' | 'describe'> | undefined;

type Params = { name: string };

export function registerDestinationEndpoints(app: FastifyInstance, destinations: DestinationsView): void {
  const view = (name: string): Record<string, unknown> | undefined => {
    const d = destinations?.describe(name);
    const pause = destinations?.pauses.status(name);
    const pausedCondition = destinations?.pauses.condition(name);
    return d && pause && { name, kind: d.kind, circuit: d.circuit, ...pause, pausedCondition };
  };
  const unknown = (reply: FastifyReply, name: string): FastifyReply =>
    reply.code(404).send({ error: 'unknown_destination', message: `no destination named ${JSON.stringify(name)}` });

  app.get('/destinations', async () => ({
    destinations: (destinations?.names ?? []).map((n) => view(n)),
  }));
  app.get<{ Params: Params }>(
    '/destinations/:name',
    async (req, reply) => view(req.params.name) ?? unknown(reply, req.params.name),
  );
  app.post<{ Params: Params }>('/destinations/:name/pause', async (req, reply) => {
    const name = req.params.name;
    if (!(await destinations?.pauses.pause(name))) return unknown(reply, name);
    return view(name);
  });
  app.post<{ Params: Params }>('/destinations/:name/resume', async (req, reply) => {
    const name = req.params.name;
    const resumed = await destinations?.pauses.resume(name);
    if (!resumed) return unknown(reply, name);
    if (resumed.result === 'suspended_by_settings')
      return reply.code(409).send({
        error: 'suspended_by_settings',
        message: `destination ${name} has suspend: true in its settings; set it to false there to resume it`,
        ...view(name),
      });
    return { result: resumed.result, ...view(name) };
  });
}
