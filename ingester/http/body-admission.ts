/**
 * Which budgets a request body is reserved from before any byte of it is read (docs/design.md §4b,
 * rules 1 and 2). Two pools that never lend to each other:
 *
 * - a body whose sender is not known yet (a signed-only integration's: its signature can be checked
 *   only over the body; and anything without a route) is reserved per source address, per
 *   integration name and in a small total of its own, so a stranger holding uploads open spends
 *   only its own address's share and that integration's, never an authenticated tenant's. An
 *   address that proved itself for the integration recently (auth/known-senders.ts) has a lane of
 *   its own, of the same sizes per integration and in all, which strangers elsewhere cannot fill;
 * - a body whose sender has authenticated (Basic, API key) is reserved from its namespace's share
 *   and from the replica's total, so one tenant with slow bodies cannot take the others' share.
 *
 * A body that cannot reserve is refused at once with Retry-After and the limit it met.
 */
import { BodyBytesLimitError, type BodyBytesLimit } from '../core/errors.js';
import { BodyBudget, KeyedBodyBudget, type Release } from './body-budget.js';

export interface BodyAdmissionLimits {
  /** The most one body reserves when its length is not announced (limits.bodyBytes). */
  bodyBytes: number;
  /** Authenticated bodies, all tenants. */
  maxInFlightBodyBytes: number;
  /** Authenticated bodies, one namespace. */
  maxInFlightBodyBytesPerNamespace: number;
  /** Bodies read before their sender is known, in all. */
  maxUnauthenticatedBodyBytes: number;
  maxUnauthenticatedBodyBytesPerAddress: number;
  maxUnauthenticatedBodyBytesPerIntegration: number;
}

export const DEFAULT_BODY_ADMISSION: Omit<BodyAdmissionLimits, 'bodyBytes'> = {
  maxInFlightBodyBytes: 64 * 1024 * 1024,
  maxInFlightBodyBytesPerNamespace: 16 * 1024 * 1024,
  maxUnauthenticatedBodyBytes: 8 * 1024 * 1024,
  maxUnauthenticatedBodyBytesPerAddress: 2 * 1024 * 1024,
  maxUnauthenticatedBodyBytesPerIntegration: 4 * 1024 * 1024,
};

/** Bodies are short-lived: a second is long enough for one of them to finish. */
const RETRY_AFTER_SECONDS = 1;
/** The key of bodies with no integration (a path no route serves). */
const NO_INTEGRATION = '';

export class BodyAdmission {
  private readonly replica: BodyBudget;
  private readonly namespaces: KeyedBodyBudget;
  private readonly unauthenticated: BodyBudget;
  private readonly addresses: KeyedBodyBudget;
  private readonly integrations: KeyedBodyBudget;
  /** The lane of addresses known to send for the integration: per integration, and in all. */
  private readonly knownTotal: BodyBudget;
  private readonly knownIntegrations: KeyedBodyBudget;
  /** The refusals that name no tenant are the same every time: built once. */
  private readonly refusals: Record<'replica' | 'unauthenticated' | 'address' | 'integration', BodyBytesLimitError>;

  constructor(private readonly limits: BodyAdmissionLimits) {
    this.replica = new BodyBudget(limits.maxInFlightBodyBytes);
    this.namespaces = new KeyedBodyBudget(limits.maxInFlightBodyBytesPerNamespace);
    this.unauthenticated = new BodyBudget(limits.maxUnauthenticatedBodyBytes);
    this.addresses = new KeyedBodyBudget(limits.maxUnauthenticatedBodyBytesPerAddress);
    this.integrations = new KeyedBodyBudget(limits.maxUnauthenticatedBodyBytesPerIntegration);
    this.knownTotal = new BodyBudget(limits.maxUnauthenticatedBodyBytes);
    this.knownIntegrations = new KeyedBodyBudget(limits.maxUnauthenticatedBodyBytesPerIntegration);
    this.refusals = {
      replica: refusal(503, 'replica', 'limits.maxInFlightBodyBytes', limits.maxInFlightBodyBytes, 'of all tenants'),
      unauthenticated: refusal(
        503,
        'unauthenticated',
        'limits.maxUnauthenticatedBodyBytes',
        limits.maxUnauthenticatedBodyBytes,
        'from senders not yet authenticated',
      ),
      // The sender's own address holds too much: its doing, so 429.
      address: refusal(
        429,
        'address',
        'limits.maxUnauthenticatedBodyBytesPerAddress',
        limits.maxUnauthenticatedBodyBytesPerAddress,
        'from this address before authentication',
      ),
      // Someone else may be holding this integration's share: 503, which every sender retries.
      integration: refusal(
        503,
        'integration',
        'limits.maxUnauthenticatedBodyBytesPerIntegration',
        limits.maxUnauthenticatedBodyBytesPerIntegration,
        'for this integration before authentication',
      ),
    };
  }

  /**
   * The bytes a body reserves: what it announces, at most the body limit (which fastify enforces);
   * a chunked body the limit; none for a request with neither header, which has no body (HTTP/1.1).
   */
  bytesFor(contentLength: string | undefined, transferEncoding?: string): number {
    if (contentLength === undefined && transferEncoding === undefined) return 0;
    const announced = Number(contentLength);
    return Number.isFinite(announced) && announced >= 0
      ? Math.min(announced, this.limits.bodyBytes)
      : this.limits.bodyBytes;
  }

  /** An authenticated sender's body: its namespace's share, then the replica's total. */
  reserveAuthenticated(namespace: string, bytes: number, overLimitStatus: number): Release | BodyBytesLimitError {
    const own = this.namespaces.reserve(namespace, bytes);
    if (!own)
      return refusal(
        overLimitStatus,
        'namespace',
        'limits.maxInFlightBodyBytesPerNamespace',
        this.limits.maxInFlightBodyBytesPerNamespace,
        `of namespace ${namespace}`,
      );
    const shared = this.replica.reserve(bytes);
    if (!shared) return (own(), this.refusals.replica);
    return both(own, shared);
  }

  /**
   * A body read before its sender is known: the address's share, the integration's, then their
   * total; from an address known to send for the integration, the integration's and the total of
   * the known senders' lane instead.
   */
  reserveUnauthenticated(
    address: string,
    integration: string | undefined,
    bytes: number,
    knownSender = false,
  ): Release | BodyBytesLimitError {
    if (knownSender && integration !== undefined) {
      const byIntegration = this.knownIntegrations.reserve(integration, bytes);
      if (!byIntegration) return this.refusals.integration;
      const total = this.knownTotal.reserve(bytes);
      if (!total) return (byIntegration(), this.refusals.unauthenticated);
      return both(byIntegration, total);
    }
    const byAddress = this.addresses.reserve(address, bytes);
    if (!byAddress) return this.refusals.address;
    const byIntegration = this.integrations.reserve(integration ?? NO_INTEGRATION, bytes);
    if (!byIntegration) return (byAddress(), this.refusals.integration);
    const total = this.unauthenticated.reserve(bytes);
    if (!total) return (byAddress(), byIntegration(), this.refusals.unauthenticated);
    return both(byAddress, byIntegration, total);
  }
}

function both(...releases: Release[]): Release {
  return () => {
    for (const release of releases) release();
  };
}

function refusal(
  status: number,
  scope: BodyBytesLimit['scope'],
  setting: string,
  maxBytes: number,
  whose: string,
): BodyBytesLimitError {
  return new BodyBytesLimitError(
    status,
    `request bodies being received at once ${whose} reached ${setting} (${maxBytes} bytes); ` +
      `nothing of this request was read, retry after ${RETRY_AFTER_SECONDS}s`,
    { scope, setting, maxBytes, retryAfterSeconds: RETRY_AFTER_SECONDS },
  );
}
