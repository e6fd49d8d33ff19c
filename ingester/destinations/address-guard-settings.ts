/**
 * Settings of the address guard (`addressGuard:` in the ingester config file): which addresses a
 * destination whose URL a tenant wrote may connect to (outbound/address-policy.ts says how they
 * are decided). Team-owned destinations are always guarded; the platform's own (this file's
 * `destinations`) only with `platformDestinations: true`, since the platform admin wrote them.
 */
import { networkInterfaces } from 'node:os';
import { ConfigError } from '../../common/config-files.js';
import { AddressPolicy, DEFAULT_CLUSTER_CIDRS, parseCidr } from '../outbound/address-policy.js';

export interface AddressGuardSettings {
  /** Guard the platform's destinations too (team-owned ones always are). */
  platformDestinations: boolean;
  /** Never reached, also when allowed. */
  deniedCIDRs: string[];
  /** Reached although in a range refused by default (loopback, link-local, own, cluster...). */
  allowedCIDRs: string[];
  /** The cluster's pod and Service ranges, refused by default. */
  clusterCIDRs: string[];
}

export const DEFAULT_ADDRESS_GUARD: AddressGuardSettings = {
  platformDestinations: false,
  deniedCIDRs: [],
  allowedCIDRs: [],
  clusterCIDRs: [...DEFAULT_CLUSTER_CIDRS],
};

const cidrs = { type: 'array', items: { type: 'string', minLength: 1 } } as const;

/** JSON Schema fragment for the settings file (config.ts). */
export const addressGuardSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    platformDestinations: { type: 'boolean' },
    deniedCIDRs: cidrs,
    allowedCIDRs: cidrs,
    clusterCIDRs: cidrs,
  },
} as const;

export type AddressGuardFile = Partial<AddressGuardSettings>;

/** Defaults applied; every range parsed, so a typo fails at start-up and names its place. */
export function resolveAddressGuard(f: AddressGuardFile | undefined): AddressGuardSettings {
  const settings: AddressGuardSettings = {
    platformDestinations: f?.platformDestinations ?? DEFAULT_ADDRESS_GUARD.platformDestinations,
    deniedCIDRs: [...(f?.deniedCIDRs ?? DEFAULT_ADDRESS_GUARD.deniedCIDRs)],
    allowedCIDRs: [...(f?.allowedCIDRs ?? DEFAULT_ADDRESS_GUARD.allowedCIDRs)],
    clusterCIDRs: [...(f?.clusterCIDRs ?? DEFAULT_ADDRESS_GUARD.clusterCIDRs)],
  };
  for (const key of ['deniedCIDRs', 'allowedCIDRs', 'clusterCIDRs'] as const)
    settings[key].forEach((text, i) => {
      try {
        parseCidr(text);
      } catch (err) {
        throw new ConfigError(`addressGuard.${key}[${i}]: ${(err as Error).message}`);
      }
    });
  return settings;
}

/** The policy of these settings, with the ingester's own addresses refused by default. */
export function addressPolicy(s: AddressGuardSettings, own: readonly string[] = ownAddresses()): AddressPolicy {
  return new AddressPolicy({ denied: s.deniedCIDRs, allowed: s.allowedCIDRs, cluster: s.clusterCIDRs, own });
}

/**
 * The ingester's own addresses (its pod's, on every interface) and those of the Services of its
 * namespace, which Kubernetes gives a pod as `<NAME>_SERVICE_HOST` (with the API server's, from
 * `KUBERNETES_SERVICE_HOST`). They are refused by default even when the cluster's ranges are set
 * narrower than they are.
 */
export function ownAddresses(env: NodeJS.ProcessEnv = process.env): string[] {
  const found = new Set<string>();
  for (const list of Object.values(networkInterfaces())) for (const i of list ?? []) found.add(i.address);
  for (const [key, value] of Object.entries(env))
    if (key.endsWith('_SERVICE_HOST') && value) {
      try {
        parseCidr(value);
        found.add(value);
      } catch {
        // Not an address (a name, or a variable of the same shape that is not Kubernetes'): nothing to refuse.
      }
    }
  return [...found];
}
