/**
 * Request ids of the ingest listener (`req-<base 36>`, as fastify makes them), from one counter
 * for fastify's requests and the direct events route's (endpoints/events-direct.ts), so that an id
 * in the log names one request whichever way it was served.
 */
const MAX_ID = 2147483647;
let next = 0;

export function nextRequestId(): string {
  next = (next + 1) & MAX_ID;
  return `req-${next.toString(36)}`;
}
