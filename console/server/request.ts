/** What the endpoints read from a request: the object it names, and its JSON body. */
import type { FastifyRequest } from 'fastify';
import { HttpError } from './http-error.js';
import { isPlural, type Plural } from './kube.js';

export type ObjectParams = { ns: string; plural: string; name: string };

/** The object of /api/namespaces/:ns/:plural/:name; 404 for a kind the console does not manage. */
export function targetOf(req: FastifyRequest): { ns: string; plural: Plural; name: string } {
  const p = req.params as ObjectParams;
  if (!isPlural(p.plural)) throw new HttpError(404, 'not_found', `no such kind: ${p.plural}`);
  return { ns: p.ns, plural: p.plural, name: p.name };
}

export function objectBody(req: FastifyRequest): Record<string, unknown> {
  if (!req.body || typeof req.body !== 'object' || Array.isArray(req.body))
    throw new HttpError(400, 'invalid_body', 'the body must be a JSON object');
  return req.body as Record<string, unknown>;
}
