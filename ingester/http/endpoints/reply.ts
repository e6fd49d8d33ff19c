/** The 200 answer both ingest routes give (the interface document's shape, exactly). */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { expectsContinue } from '../guards.js';

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

/** `Expect: 100-continue`: invite the body only now that the sender has authenticated. */
export function continueIfExpected(req: FastifyRequest, reply: FastifyReply): void {
  if (expectsContinue(req.raw)) reply.raw.writeContinue();
}
