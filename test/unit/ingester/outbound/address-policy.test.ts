/** The address guard's decisions: CIDR matching of IPv4, IPv6 and their mapped forms, and the precedence of the lists. */
import {
  AddressPolicy,
  contains,
  describeRefusal,
  parseAddress,
  parseCidr,
  type AddressPolicyRanges,
} from '../../../../ingester/outbound/address-policy.js';

const policy = (r: Partial<AddressPolicyRanges> = {}): AddressPolicy =>
  new AddressPolicy({ denied: [], allowed: [], cluster: ['10.0.0.0/8', 'fd00::/8'], own: [], ...r });
const refusedBy = (p: AddressPolicy, address: string): string | undefined => {
  const v = p.check(address);
  return v.allowed ? undefined : v.by;
};

describe('CIDR matching', () => {
  it.each([
    ['127.0.0.0/8', '127.0.0.1', true],
    ['127.0.0.0/8', '127.255.255.254', true],
    ['127.0.0.0/8', '128.0.0.1', false],
    ['10.1.2.0/23', '10.1.3.255', true],
    ['10.1.2.0/23', '10.1.4.0', false],
    ['172.16.0.0/12', '172.31.255.255', true],
    ['172.16.0.0/12', '172.32.0.0', false],
    ['0.0.0.0/0', '203.0.113.9', true],
    ['192.0.2.7', '192.0.2.7', true],
    ['192.0.2.7', '192.0.2.8', false],
    ['fe80::/10', 'fe80::1', true],
    ['fe80::/10', 'febf:ffff::1', true],
    ['fe80::/10', 'fec0::1', false],
    ['2001:db8::/32', '2001:db8:ffff::1', true],
    ['2001:db8::/32', '2001:db9::1', false],
    ['::1/128', '::1', true],
    ['::1/128', '0:0:0:0:0:0:0:1', true],
    ['::1/128', '::2', false],
    ['fd00::/8', 'fd12:3456::1', true],
    // IPv4 ranges hold the IPv4-mapped IPv6 forms of their addresses, written either way.
    ['127.0.0.0/8', '::ffff:127.0.0.1', true],
    ['127.0.0.0/8', '::ffff:7f00:1', true],
    ['127.0.0.0/8', '0:0:0:0:0:ffff:7f01:203', true],
    ['127.0.0.0/8', '[::ffff:127.0.0.1]', true],
    ['169.254.0.0/16', '::ffff:169.254.169.254', true],
    ['169.254.0.0/16', '::ffff:a9fe:a9fe', true],
    ['::ffff:10.0.0.0/104', '10.9.9.9', true],
    ['10.0.0.0/8', '::ffff:11.0.0.1', false],
    // An IPv4 range does not hold an IPv6 address with the same low bytes.
    ['127.0.0.0/8', '::7f00:1', false],
    ['127.0.0.0/8', '2001:db8::7f00:1', false],
    // A zone is left out.
    ['fe80::/10', 'fe80::1%eth0', true],
  ])('%s holds %s: %s', (cidr, address, held) => {
    expect(contains(parseCidr(cidr), parseAddress(address) as Uint8Array)).toBe(held);
  });

  it.each(['10.0.0.0/33', '::/129', '10.0.0/8', 'example.com', '10.0.0.0/x', '10.0.0.0/-1', 'fe80::1%eth0/64', ''])(
    'refuses %j as a range',
    (text) => {
      expect(() => parseCidr(text)).toThrow(/not an IP address|prefix length/);
    },
  );

  it('reads no name as an address', () => {
    expect(parseAddress('localhost')).toBeUndefined();
    expect(parseAddress('1.2.3')).toBeUndefined();
  });
});

describe('the policy', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.3.4.5', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['fe80::abcd', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['10.96.0.1', 'cluster'],
    ['::ffff:10.96.0.1', 'cluster'],
    ['fd00::10', 'cluster'],
    // NAT64 and the IPv4-compatible form lead to the IPv4 address they embed.
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['::127.0.0.1', 'loopback'],
    ['::10.1.1.1', 'cluster'],
  ])('refuses %s by default (%s)', (address, by) => {
    expect(refusedBy(policy(), address)).toBe(by);
  });

  it.each(['203.0.113.10', '2001:db8::1', '::ffff:203.0.113.10', '64:ff9b::cb00:710a', '11.0.0.1'])(
    'lets %s through by default',
    (address) => {
      expect(refusedBy(policy(), address)).toBeUndefined();
    },
  );

  it('refuses the own addresses it is given', () => {
    const p = policy({ cluster: [], own: ['198.51.100.7', '2001:db8::7'] });
    expect(refusedBy(p, '198.51.100.7')).toBe('own');
    expect(refusedBy(p, '::ffff:198.51.100.7')).toBe('own');
    expect(refusedBy(p, '2001:db8::7')).toBe('own');
    expect(refusedBy(p, '198.51.100.8')).toBeUndefined();
  });

  it('lets an allowed range through a default refusal, and a denied range wins over both', () => {
    const p = policy({
      allowed: ['127.0.0.0/8', '::1/128', '10.20.0.0/16'],
      denied: ['127.0.0.2/32', '203.0.113.0/24'],
    });
    expect(p.check('127.0.0.1')).toEqual({ allowed: true, by: 'allowed' });
    expect(p.check('::ffff:127.0.0.1')).toEqual({ allowed: true, by: 'allowed' });
    expect(p.check('::1')).toEqual({ allowed: true, by: 'allowed' });
    expect(p.check('10.20.3.4')).toEqual({ allowed: true, by: 'allowed' });
    expect(refusedBy(p, '10.21.3.4')).toBe('cluster');
    expect(p.check('127.0.0.2')).toEqual({ allowed: false, by: 'denied', range: '127.0.0.2/32', address: '127.0.0.2' });
    expect(refusedBy(p, '::ffff:127.0.0.2')).toBe('denied');
    expect(refusedBy(p, '203.0.113.10')).toBe('denied');
    expect(refusedBy(p, '64:ff9b::cb00:710a')).toBe('denied');
  });

  it('denies loopback explicitly, whichever way it is written', () => {
    const p = policy({ denied: ['127.0.0.0/8', '::1/128'], allowed: ['0.0.0.0/0', '::/0'] });
    for (const a of ['127.0.0.1', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '64:ff9b::7f00:1', '::127.0.0.1'])
      expect([a, refusedBy(p, a)]).toEqual([a, 'denied']);
  });

  it('refuses what is not an address', () => {
    expect(refusedBy(policy(), 'localhost')).toBe('reserved');
  });

  it('says what it refused and why', () => {
    const v = policy().check('127.0.0.1');
    if (v.allowed) throw new Error('allowed');
    expect(describeRefusal('localhost', v)).toBe(
      'the address guard refused 127.0.0.1 (resolved from localhost): it is in 127.0.0.0/8 (loopback, refused by default)',
    );
    const d = policy({ denied: ['127.0.0.0/8'] }).check('127.0.0.1');
    if (d.allowed) throw new Error('allowed');
    expect(describeRefusal('127.0.0.1', d)).toBe(
      'the address guard refused 127.0.0.1: it is in the denied range 127.0.0.0/8',
    );
  });
});
