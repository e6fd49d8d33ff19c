/**
 * A bound on the connections one remote address holds at once, so that one address cannot take
 * every connection the listener accepts (`limits.maxConnections`): past it, its new connections
 * are closed at once, before a byte is read, as connections past the listener's cap are.
 *
 * The proxies named in `trustProxy` are exempt (the listener passes the trust function fastify and
 * the direct route read X-Forwarded-For with, client-address.ts): behind an ingress every
 * connection comes from the proxy's address, and its clients are told apart only per request (X-Forwarded-For), where the
 * per-address budgets of bodies and the brute-force guard apply.
 */
import type { Socket } from 'node:net';

/** Counts each remote address's open connections; `admit` closes one past the bound. */
export class ConnectionsPerAddress {
  private readonly open = new Map<string, number>();

  constructor(
    readonly maxPerAddress: number,
    private readonly exempt: (address: string) => boolean,
  ) {}

  /** Called for each new connection: keeps it (counted until it closes) or destroys it. */
  admit(socket: Socket): void {
    const address = socket.remoteAddress;
    if (address === undefined || this.exempt(address)) return;
    const held = this.open.get(address) ?? 0;
    if (held >= this.maxPerAddress) {
      socket.destroy();
      return;
    }
    this.open.set(address, held + 1);
    socket.once('close', () => {
      const left = (this.open.get(address) ?? 1) - 1;
      if (left <= 0) this.open.delete(address);
      else this.open.set(address, left);
    });
  }

  held(address: string): number {
    return this.open.get(address) ?? 0;
  }
}
