import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { ConnectionsPerAddress } from '../../../../ingester/http/connections-per-address.js';
import { trustFunction } from '../../../../ingester/http/client-address.js';

/** Whether an address is a trusted proxy, as the listener exempts it (the trust function at hop 0). */
const trustedProxies = (setting: string | false) => {
  const trust = trustFunction(setting);
  return (address: string) => (trust ? trust(address, 0) : false);
};

class FakeSocket extends EventEmitter {
  destroyed = false;
  constructor(readonly remoteAddress: string) {
    super();
  }
  destroy(): void {
    this.destroyed = true;
    this.emit('close');
  }
}
const from = (address: string) => new FakeSocket(address) as unknown as Socket & FakeSocket;

describe('the trusted proxies exempt from the bound', () => {
  it('matches addresses, CIDRs and range names, IPv4-mapped addresses as IPv4', () => {
    const trusted = trustedProxies('10.0.0.0/8, 192.0.2.7, loopback, 2001:db8::/32');
    expect(trusted('10.1.2.3')).toBe(true);
    expect(trusted('::ffff:10.1.2.3')).toBe(true);
    expect(trusted('192.0.2.7')).toBe(true);
    expect(trusted('192.0.2.8')).toBe(false);
    expect(trusted('127.0.0.1')).toBe(true);
    expect(trusted('::1')).toBe(true);
    expect(trusted('2001:db8::5')).toBe(true);
    expect(trusted('198.51.100.1')).toBe(false);
    expect(trustedProxies('uniquelocal')('172.20.0.1')).toBe(true);
    expect(trustedProxies('uniquelocal')('172.32.0.1')).toBe(false);
    expect(trustedProxies(false)('10.0.0.1')).toBe(false);
  });
});

describe('ConnectionsPerAddress', () => {
  it('closes an address’s connections past the bound at once, counts them down as they close', () => {
    const c = new ConnectionsPerAddress(2, () => false);
    const [a, b, third] = [from('198.51.100.1'), from('198.51.100.1'), from('198.51.100.1')];
    c.admit(a);
    c.admit(b);
    c.admit(third);
    expect(third.destroyed).toBe(true);
    expect([a.destroyed, b.destroyed]).toEqual([false, false]);
    // Another address is not affected.
    const other = from('198.51.100.2');
    c.admit(other);
    expect(other.destroyed).toBe(false);
    a.destroy();
    const again = from('198.51.100.1');
    c.admit(again);
    expect(again.destroyed).toBe(false);
    expect(c.held('198.51.100.1')).toBe(2);
  });

  it('never bounds a trusted proxy (every client behind an ingress shares its address)', () => {
    const c = new ConnectionsPerAddress(1, trustedProxies('10.0.0.0/8'));
    const sockets = Array.from({ length: 5 }, () => from('10.0.0.9'));
    for (const s of sockets) c.admit(s);
    expect(sockets.every((s) => !s.destroyed)).toBe(true);
    expect(c.held('10.0.0.9')).toBe(0);
  });
});
