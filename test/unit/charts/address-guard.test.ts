/** The chart's addressGuard value: written to the ingester's config file as is, which the ingester accepts; absent by default. */
import { parse } from 'yaml';
import { resolveSettings } from '../../../ingester/config.js';
import { renderChart } from '../../support/helm.js';

interface Obj {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
}

const ingesterConfig = (...args: string[]): Record<string, unknown> => {
  const map = renderChart<Obj>('r', 'intake', args).find(
    (o) => o.kind === 'ConfigMap' && o.metadata.name === 'r-intake-ingester',
  );
  return parse(map?.data?.['intake.yaml'] ?? '') as Record<string, unknown>;
};

it('writes no addressGuard by default: the ingester defaults apply', () => {
  const config = ingesterConfig();
  expect(config.addressGuard).toBeUndefined();
  expect(resolveSettings(config, {}).addressGuard.platformDestinations).toBe(false);
});

it('writes the addressGuard value as given, and the ingester reads it', () => {
  const config = ingesterConfig(
    '--set-json',
    'addressGuard={"clusterCIDRs":["10.244.0.0/16","10.96.0.0/12"],"allowedCIDRs":["10.96.40.0/24"],"platformDestinations":true}',
  );
  expect(config.addressGuard).toEqual({
    clusterCIDRs: ['10.244.0.0/16', '10.96.0.0/12'],
    allowedCIDRs: ['10.96.40.0/24'],
    platformDestinations: true,
  });
  expect(resolveSettings(config, {}).addressGuard).toEqual({
    clusterCIDRs: ['10.244.0.0/16', '10.96.0.0/12'],
    allowedCIDRs: ['10.96.40.0/24'],
    deniedCIDRs: [],
    platformDestinations: true,
  });
});

it('refuses an unknown key under addressGuard', () => {
  expect(() => ingesterConfig('--set-json', 'addressGuard={"allowed":["10.0.0.0/8"]}')).toThrow(/allowed/);
});
