/**
 * The sender's address, worked out once for both ways a request is served: fastify's `request.ip`
 * and the direct events route (endpoints/events-direct.ts). With trusted proxies (`trustProxy`:
 * addresses, CIDRs, range names; config.ts refuses `true` and hop counts), it is the nearest
 * address in X-Forwarded-For that is not one of them, as proxy-addr (the library fastify uses)
 * finds it; without, the connection's peer. Fastify is given the same compiled function, so the
 * per-address budgets and the brute-force guard key a sender alike whichever way it was served.
 */
import proxyAddr from '@fastify/proxy-addr';
import type { IncomingMessage } from 'node:http';

/** What fastify's `trustProxy` takes: whether an address (at a hop from the server) is a trusted proxy. */
export type TrustFunction = (address: string, hop: number) => boolean;

/** The trust function for a `trustProxy` setting, as fastify compiles it; false: no proxy is trusted. */
export function trustFunction(setting: boolean | number | string | undefined): TrustFunction | false {
  if (setting === undefined || setting === false) return false;
  if (setting === true) return () => true;
  // As fastify: a hop count alone cannot tell a proxy from a client that adds hops itself.
  if (typeof setting === 'number') return () => false;
  return proxyAddr.compile(setting.split(',').map((part) => part.trim()));
}

/** The sender's address of a request, for a trust function (or none). */
export function clientAddress(req: IncomingMessage, trust: TrustFunction | false): string {
  return trust ? proxyAddr(req, trust) : (req.socket.remoteAddress ?? '');
}
