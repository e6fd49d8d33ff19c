import type { V1EndpointSlice } from '@kubernetes/client-node';
import { readyEndpoints } from '../../../../ingester/limits/replicas.js';

const slice = (endpoints: Array<{ uid: string; ready?: boolean; address: string }>): V1EndpointSlice => ({
  addressType: 'IPv4',
  endpoints: endpoints.map((e) => ({
    addresses: [e.address],
    targetRef: { kind: 'Pod', uid: e.uid },
    conditions: e.ready === undefined ? {} : { ready: e.ready },
  })),
});

describe('readyEndpoints', () => {
  it('counts each ready pod once across slices (dual stack: one slice per address family)', () => {
    const v4 = slice([
      { uid: 'a', address: '10.0.0.1' },
      { uid: 'b', address: '10.0.0.2', ready: true },
      { uid: 'c', address: '10.0.0.3', ready: false },
    ]);
    const v6 = {
      ...slice([
        { uid: 'a', address: 'fd00::1' },
        { uid: 'b', address: 'fd00::2' },
      ]),
      addressType: 'IPv6',
    };
    expect(readyEndpoints([v4, v6])).toBe(2);
  });

  it('is 0 without endpoints (the caller never divides by less than 1)', () => {
    expect(readyEndpoints([{ addressType: 'IPv4', endpoints: [] }])).toBe(0);
  });
});
