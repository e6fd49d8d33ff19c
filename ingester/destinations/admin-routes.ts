/**
 * Dead letters of the destinations on the admin listener (never public: events are tenants' data):
 *   GET  /destinations/deadletter[?destination=NAME][&limit=N]       what is kept, with the reason
 *   POST /destinations/deadletter/replay[?destination=NAME][&seq=N,M] hands them back to their
 *        destination (attempts start again) and removes them from the dead letter.
 * `intake undelivered list|replay` calls these.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Destinations } from './wiring.js';
import type { DeadLetterQuery } from './dead-letters.js';

type Query = { destination?: string; seq?: string; limit?: string };

const MAX_LIMIT = 10_000;

export function registerDestinationRoutes(app: FastifyInstance, d: Destinations): void {
  app.get<{ Querystring: Query }>('/destinations/deadletter', async (req, reply) => {
    const q = queryOf(req.query, d, reply);
    if (!q) return reply;
    const items = await withStore(() => d.deadLetters.list(q), reply);
    return items === undefined ? reply : { count: items.length, items };
  });
  app.post<{ Querystring: Query }>('/destinations/deadletter/replay', async (req, reply) => {
    const q = queryOf(req.query, d, reply);
    if (!q) return reply;
    const replayed = await withStore(() => d.deadLetters.replay(q), reply);
    return replayed === undefined ? reply : { replayed };
  });
}

function queryOf(q: Query, d: Destinations, reply: FastifyReply): DeadLetterQuery | undefined {
  const fail = (field: string, message: string): undefined => void reply.code(400).send({ error: 'invalid_query', field, message });
  if (q.destination !== undefined && !d.names.includes(q.destination)) return fail('destination', `unknown destination ${JSON.stringify(q.destination)} (configured: ${d.names.join(', ')})`);
  const limit = q.limit === undefined ? 1000 : Number(q.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) return fail('limit', `must be an integer 1..${MAX_LIMIT}`);
  const out: DeadLetterQuery = { limit };
  if (q.destination) out.destination = q.destination;
  if (q.seq !== undefined) {
    const seqs = q.seq.split(',').map(Number);
    if (seqs.length === 0 || seqs.some((n) => !Number.isInteger(n) || n < 1)) return fail('seq', 'must be positive integers separated by commas');
    out.seqs = seqs;
  }
  return out;
}

async function withStore<T>(run: () => Promise<T>, reply: FastifyReply): Promise<T | undefined> {
  try {
    return await run();
  } catch (err) {
    void reply.code(503).send({ error: 'unavailable', message: (err as Error).message });
    return undefined;
  }
}
