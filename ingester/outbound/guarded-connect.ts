/**
 * The connector of a guarded outgoing client (undici's `connect` option): every new connection
 * resolves the host once, checks each address against the address policy, and connects only to
 * an address that passed. The name is never resolved a second time between the check and the
 * connection (a DNS rebinding answer, public for the check and private for the connection, has
 * nothing to race), and the socket's peer address is checked again once connected, whatever path
 * the connection took. Checked on every connection, not once per URL: a name may resolve elsewhere
 * tomorrow, and a kept-alive socket only carries on with an address that was checked.
 *
 * A refusal fails the connection with an AddressRefusedError; OutboundClient makes it the
 * outcome `reject` / `address_refused` (a setting decides it, not the receiver: sending again gives
 * the same answer).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { buildConnector } from 'undici';
import { describeRefusal, type AddressPolicy, type Verdict } from './address-policy.js';

export const ADDRESS_REFUSED = 'INTAKE_ADDRESS_REFUSED';

export type Refusal = Extract<Verdict, { allowed: false }> & { host: string };

export class AddressRefusedError extends Error {
  readonly code = ADDRESS_REFUSED;
  constructor(readonly refusal: Refusal) {
    super(describeRefusal(refusal.host, refusal));
  }
}

export interface ConnectGuard {
  policy: AddressPolicy;
  /** Told of each refused connection (metrics, the log, the destination's last refusal). */
  onRefused(refusal: Refusal): void;
}

/** How a resolver is called: node's dns.lookup, or a test's. */
export type Resolve = (host: string, callback: (err: Error | null, addresses: LookupAddress[]) => void) => void;

const systemResolve: Resolve = (host, callback) => dnsLookup(host, { all: true, order: 'verbatim' }, callback);

/**
 * undici's connector with the guard in front. `options` are the connector's own (TLS material);
 * `resolve` is the system resolver unless a test gives one.
 */
export function guardedConnector(
  guard: ConnectGuard,
  options: buildConnector.BuildOptions,
  resolve: Resolve = systemResolve,
): buildConnector.connector {
  const refuse = (refusal: Refusal): AddressRefusedError => {
    guard.onRefused(refusal);
    return new AddressRefusedError(refusal);
  };
  /**
   * net.connect's lookup: the addresses that pass, in the resolver's order (net tries them in
   * turn with autoSelectFamily); an error when none does.
   */
  const lookup: LookupFunction = (host, lookupOptions, callback) => {
    resolve(host, (err, found) => {
      if (err) return callback(err, '', 0);
      let first: Refusal | undefined;
      const passed = found.filter((a) => {
        if (lookupOptions.family && lookupOptions.family !== a.family) return false;
        const v = guard.policy.check(a.address);
        if (!v.allowed) first ??= { ...v, host };
        return v.allowed;
      });
      if (passed.length === 0) {
        const e = first
          ? refuse(first)
          : Object.assign(new Error(`${host}: no address of the asked family`), { code: 'ENOTFOUND' });
        return callback(e, '', 0);
      }
      if (lookupOptions.all) (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, passed);
      else callback(null, (passed[0] as LookupAddress).address, (passed[0] as LookupAddress).family);
    });
  };
  const connect = buildConnector({ ...options, lookup } as buildConnector.BuildOptions);
  return (opts, callback) => {
    const host = opts.hostname.startsWith('[') ? opts.hostname.slice(1, -1) : opts.hostname;
    // An address in the URL itself: net.connect does not look it up, so it is checked here.
    if (isIP(host)) {
      const v = guard.policy.check(host);
      if (!v.allowed) {
        const err = refuse({ ...v, host });
        queueMicrotask(() => callback(err, null));
        return;
      }
    }
    connect(opts, (err, socket) => {
      if (err || !socket) return callback(err, null);
      // The address actually connected to: checked again, whatever resolved it.
      const peer = (socket as Socket).remoteAddress;
      const v = peer === undefined ? undefined : guard.policy.check(peer);
      if (v && !v.allowed) {
        socket.destroy();
        return callback(refuse({ ...v, host }), null);
      }
      callback(null, socket);
    });
  };
}
