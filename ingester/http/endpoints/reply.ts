/** The 200 answer both ingest endpoints give (the interface document's shape, exactly). */

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
