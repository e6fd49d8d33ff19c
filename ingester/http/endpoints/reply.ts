/** The 200 answer both ingest routes give (the interface document's shape, exactly). */
import type { FastifyReply, FastifyRequest } from 'fastify';

export const okSchema = {
  200: {
    type: 'object',
    properties: {
      response: {
        type: 'object',
        properties: { processed: { type: 'integer' }, cached: { type: 'integer' }, received: { type: 'integer' } },
      },
      success: { type: 'boolean' },
      message: { type: 'string' },
    },
  },
};

export const okBody = (processed: number, cached: number, received: number, noun: string) => ({
  response: { processed, cached, received },
  success: true,
  message: `Processed ${processed} ${noun}(s)`,
});

/**
 * `Expect: 100-continue` is answered by the listener (listener.ts, preParsing) once the body's
 * bytes are reserved, not when the sender has authenticated: a sender waiting for it while the
 * budget is full gets the refusal before it sends a byte. Kept as a no-op for endpoints that
 * still call it after authentication.
 */
export function continueIfExpected(_req: FastifyRequest, _reply: FastifyReply): void {}
