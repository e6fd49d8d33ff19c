/**
 * The console API's answers to failure: a refusal the endpoints throw (HttpError, with the stable
 * `error` code the page shows), and the one error handler that turns any thrown error into the
 * JSON body `{ error, message }` (and `Retry-After` when waiting helps).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { MappingBusy } from '../../api/mapping/engine.js';
import type { Refusal } from './bounds.js';
import { KubeError } from './kube.js';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }

  static of(refusal: Refusal): HttpError {
    return new HttpError(refusal.status, refusal.code, refusal.message, refusal.retryAfterSeconds);
  }
}

/** The server's error handler: the error's own status and message for what the user can act on, a 500 otherwise. */
export function errorHandler(logger: Logger) {
  return (err: FastifyError | Error, _req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof HttpError) {
      if (err.retryAfterSeconds !== undefined) reply.header('retry-after', String(err.retryAfterSeconds));
      return reply.code(err.status).send({ error: err.code, message: err.message });
    }
    if (err instanceof MappingBusy)
      return reply
        .code(503)
        .header('retry-after', String(err.retryAfterSeconds))
        .send({ error: 'mapping_busy', message: `the console's mapping workers are busy: ${err.message}` });
    if (err instanceof KubeError)
      return reply.code(err.status).send({ error: 'kubernetes', reason: err.reason, message: err.message });
    const status = (err as { statusCode?: number }).statusCode;
    if (status && status < 500) return reply.code(status).send({ error: 'bad_request', message: err.message });
    logger.error({ err: err.message }, 'console request failed');
    return reply.code(500).send({ error: 'internal', message: 'the console failed; see its log' });
  };
}
