/** The address guard's settings: defaults, ranges checked at start-up, own addresses; a destination's namespace. */
import { ConfigError } from '../../../../common/config-files.js';
import { resolveSettings } from '../../../../ingester/config.js';
import { addressPolicy, ownAddresses } from '../../../../ingester/destinations/address-guard-settings.js';

const withDestination = {
  spool: { path: '/tmp/unused' },
  destinations: [{ name: 'a', http: { url: 'https://x.test' } }],
};

it('guards team destinations only, refusing private ranges, by default', () => {
  const s = resolveSettings({}, {});
  expect(s.addressGuard).toEqual({
    platformDestinations: false,
    deniedCIDRs: [],
    allowedCIDRs: [],
    clusterCIDRs: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7'],
  });
  const policy = addressPolicy(s.addressGuard, []);
  expect(policy.check('10.96.0.1')).toMatchObject({ allowed: false, by: 'cluster' });
  expect(policy.check('192.0.2.1')).toEqual({ allowed: true });
});

it('takes the admin lists and names a range that is not one', () => {
  const s = resolveSettings(
    {
      addressGuard: {
        platformDestinations: true,
        deniedCIDRs: ['127.0.0.0/8'],
        allowedCIDRs: ['10.5.0.0/16'],
        clusterCIDRs: [],
      },
    },
    {},
  );
  expect(s.addressGuard).toEqual({
    platformDestinations: true,
    deniedCIDRs: ['127.0.0.0/8'],
    allowedCIDRs: ['10.5.0.0/16'],
    clusterCIDRs: [],
  });
  expect(() => resolveSettings({ addressGuard: { allowedCIDRs: ['10.0.0.0/8', '10.0.0.0/40'] } }, {})).toThrow(
    new ConfigError('addressGuard.allowedCIDRs[1]: "10.0.0.0/40": the prefix length must be 0 to 32'),
  );
  expect(() => resolveSettings({ addressGuard: { deniedCIDRs: ['intake.svc'] } }, {})).toThrow(
    /addressGuard\.deniedCIDRs\[0\]: "intake.svc" is not an IP address/,
  );
  expect(() => resolveSettings({ addressGuard: { allowed: [] } }, {})).toThrow(/allowed/);
});

it("refuses the ingester's own addresses and its namespace's Services by default", () => {
  const own = ownAddresses({
    NATS_SERVICE_HOST: '198.51.100.20',
    KUBERNETES_SERVICE_HOST: 'fd00::1',
    X_SERVICE_HOST: 'name',
  });
  expect(own).toEqual(expect.arrayContaining(['127.0.0.1', '198.51.100.20', 'fd00::1']));
  expect(own).not.toContain('name');
  const policy = addressPolicy(resolveSettings({ addressGuard: { clusterCIDRs: [] } }, {}).addressGuard, own);
  expect(policy.check('198.51.100.20')).toMatchObject({ allowed: false, by: 'own' });
  expect(policy.check('198.51.100.21')).toEqual({ allowed: true });
});

it("keeps a destination's namespace, and a platform destination has none", () => {
  const s = resolveSettings(
    {
      ...withDestination,
      destinations: [
        ...withDestination.destinations,
        { name: 'b', namespace: 'team-a', http: { url: 'https://y.test' } },
      ],
    },
    {},
  );
  expect(s.destinations.map((d) => d.namespace)).toEqual([undefined, 'team-a']);
  expect(() =>
    resolveSettings(
      { ...withDestination, destinations: [{ name: 'b', namespace: 'Team A', http: { url: 'https://y.test' } }] },
      {},
    ),
  ).toThrow(/namespace/);
});
