/**
 * The sender's address (ingester/http/client-address.ts) is the one fastify's request.ip gives for
 * the same trustProxy setting: the direct events route and fastify's route key the per-address
 * budgets and the brute-force guard alike.
 */
import Fastify from 'fastify';
import { clientAddress, trustFunction } from '../../../../ingester/http/client-address.js';

describe('clientAddress', () => {
  const cases: Array<[string | false, string, string | undefined]> = [
    [false, '127.0.0.1', '203.0.113.7'],
    ['127.0.0.1', '127.0.0.1', '203.0.113.7'],
    ['127.0.0.1', '127.0.0.1', undefined],
    ['127.0.0.1', '192.0.2.1', '203.0.113.7'],
    ['127.0.0.1, 10.0.0.0/8', '127.0.0.1', '198.51.100.1, 203.0.113.7, 10.1.2.3'],
    ['uniquelocal', '10.4.5.6', '203.0.113.7, 192.168.1.1'],
    ['loopback', '::1', '2001:db8::7'],
  ];

  it.each(cases)('trustProxy %p, peer %s, X-Forwarded-For %p: as fastify', async (setting, peer, forwardedFor) => {
    const trust = trustFunction(setting);
    const app = Fastify({ trustProxy: trust });
    let fromFastify = '';
    let ours = '';
    app.get('/', (req, reply) => {
      fromFastify = req.ip;
      ours = clientAddress(req.raw, trust);
      reply.send('');
    });
    await app.inject({
      method: 'GET',
      url: '/',
      remoteAddress: peer,
      headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
    });
    await app.close();
    expect(ours).toBe(fromFastify);
    expect(ours).not.toBe('');
  });

  it('trusts nobody without a setting, and no hop count (as fastify: a client could add hops)', () => {
    expect(trustFunction(undefined)).toBe(false);
    expect(trustFunction(false)).toBe(false);
    expect((trustFunction(2) as (a: string, i: number) => boolean)('127.0.0.1', 0)).toBe(false);
  });
});
