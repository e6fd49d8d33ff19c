/**
 * A bound on the connections one remote address holds at once, so that one address cannot take
 * every connection the listener accepts (`limits.maxConnections`): past it, its new connections
 * are closed at once, before a byte is read, as connections past the listener's cap are.
 *
 * The proxies named in `trustProxy` are exempt: behind an ingress every connection comes from the
 * proxy's address, and its clients are told apart only per request (X-Forwarded-For), where the
 * per-address budgets of bodies and the brute-force guard apply.
 */
import { BlockList, isIP, type Socket } from 'node:net';

/** Address ranges behind proxy-addr's names (what fastify's trustProxy accepts). */
const RANGES: Record<string, Array<[string, number, 'ipv4' | 'ipv6']>> = {
  loopback: [
    ['127.0.0.0', 8, 'ipv4'],
    ['::1', 128, 'ipv6'],
  ],
  linklocal: [
    ['169.254.0.0', 16, 'ipv4'],
    ['fe80::', 10, 'ipv6'],
  ],
  uniquelocal: [
    ['10.0.0.0', 8, 'ipv4'],
    ['172.16.0.0', 12, 'ipv4'],
    ['192.168.0.0', 16, 'ipv4'],
    ['fc00::', 7, 'ipv6'],
  ],
};

/** Whether an address is one of the trusted proxies (`trustProxy`: addresses, CIDRs, range names). */
export function trustedProxies(trustProxy: string | false | undefined): (address: string) => boolean {
  if (!trustProxy) return () => false;
  const list = new BlockList();
  for (const part of trustProxy.split(',').map((s) => s.trim())) {
    const named = RANGES[part];
    if (named) {
      for (const [net, prefix, family] of named) list.addSubnet(net, prefix, family);
      continue;
    }
    const [address = '', prefix] = part.split('/');
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(prefix), family);
  }
  return (address) => {
    const plain = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
    return list.check(plain, isIP(plain) === 6 ? 'ipv6' : 'ipv4');
  };
}

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
