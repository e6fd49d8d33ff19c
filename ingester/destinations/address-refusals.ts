/**
 * What the address guard refused, per destination: counted (intake_destination_address_refused_total),
 * logged at most once per destination per interval (with what was refused and why), and the last
 * refusal kept for the destination's status. The refusal itself fails the delivery
 * (`address_refused`, dead-lettered at once: outbound/http-client.ts).
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { LogLimiter } from '../core/log-limiter.js';
import type { AddressPolicy } from '../outbound/address-policy.js';
import type { ConnectGuard, Refusal } from '../outbound/guarded-connect.js';
import { describeRefusal } from '../outbound/address-policy.js';

/** The last connection the guard refused for a destination. */
export interface LastRefusal {
  atMs: number;
  /** The host of the URL, as written. */
  host: string;
  /** The address it resolved to (or was) that was refused. */
  address: string;
  /** `denied` (the admin's list) or the default range's kind (`loopback`, `cluster`...). */
  by: Refusal['by'];
  range: string;
  message: string;
}

export class AddressRefusals {
  private readonly refused: Counter<'destination' | 'by'>;
  private readonly logs: LogLimiter;
  private readonly last = new Map<string, LastRefusal>();

  constructor(
    private readonly policy: AddressPolicy,
    registry: Registry,
    logger: Logger,
    intervalMs = 60_000,
  ) {
    this.refused = new Counter({
      name: 'intake_destination_address_refused_total',
      help: "Connections the address guard refused for a destination, by why (denied: the admin's list; else the default range: loopback, link-local, unspecified, multicast, reserved, own, cluster).",
      labelNames: ['destination', 'by'],
      registers: [registry],
    });
    this.logs = new LogLimiter(logger, intervalMs);
  }

  /** The guard of one destination's client. */
  guardOf(destination: string, namespace: string | undefined): ConnectGuard {
    return {
      policy: this.policy,
      onRefused: (r) => {
        this.refused.inc({ destination, by: r.by });
        const message = describeRefusal(r.host, r);
        this.last.set(destination, {
          atMs: Date.now(),
          host: r.host,
          address: r.address,
          by: r.by,
          range: r.range,
          message,
        });
        this.logs.error(
          destination,
          Object.assign(new Error(message), { code: 'address_refused' }),
          { destination, ...(namespace !== undefined ? { namespace } : {}), host: r.host, address: r.address },
          'the address guard refused a destination connection; its events are dead-lettered (reason address_refused)',
        );
      },
    };
  }

  /** The destination's last refusal on this replica, for its status; undefined when none. */
  lastOf(destination: string): LastRefusal | undefined {
    return this.last.get(destination);
  }
}
