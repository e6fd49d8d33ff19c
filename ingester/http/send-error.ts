/**
 * Every refusal's answer, whichever step refused: the error handler (listener.ts), the hooks, and
 * an endpoint that answers a refusal without throwing it (endpoints/events.ts, a sender over its
 * limit before its body is read). One function, so those answers cannot differ by a byte.
 */
import type { FastifyReply } from 'fastify';
import type { IntakeError } from '../core/errors.js';

export function sendError(reply: FastifyReply, err: IntakeError): FastifyReply {
  // The ingest listener's requests are decorated with it (the admin listener's are not, and ignore it).
  reply.request.refusal = err;
  if (err.headers) reply.headers(err.headers);
  // A string with a JSON content type goes out as it is: the bytes JSON.stringify(err.toBody())
  // that fastify's serializer would have made of the object (no schema covers an error status).
  return reply.code(err.statusCode).type('application/json; charset=utf-8').send(err.renderedBody());
}
