/**
 * Source addresses that recently proved themselves for a signed integration (a signature that
 * held over a body sent from that address). Before authentication nothing says who sends a body,
 * but an address that sent correctly signed requests to this integration within the day is
 * very likely its real sender (a SaaS tool's egress): its next bodies are reserved from a lane of
 * their own (http/body-admission.ts), so strangers holding the shared unauthenticated budgets
 * open do not stop that integration's real requests.
 *
 * Remembered per integration, each in a memory of its own: a tenant that signs from many
 * addresses (or rotates them) forgets its own least recently proven senders, never another
 * integration's. Past the total, the integration that holds the most gives one up.
 */
import type { LRUCache } from 'lru-cache';
import { growingLru } from '../../common/growing-lru.js';

/** How long a proof counts. */
const REMEMBERED_MS = 24 * 60 * 60 * 1000;
/** Addresses remembered per integration at most (a SaaS sender's egress is a few dozen). */
export const MAX_ADDRESSES_PER_INTEGRATION = 1_000;
/** Pairs remembered at most, all integrations together. */
export const MAX_PAIRS = 100_000;

export interface KnownSendersLimits {
  perIntegration: number;
  total: number;
  rememberedMs?: number;
  /** Monotonic milliseconds (tests). */
  now?: () => number;
}

export class KnownSenders {
  private readonly byIntegration = new Map<string, LRUCache<string, true>>();
  private pairs = 0;

  constructor(
    private readonly limits: KnownSendersLimits = {
      perIntegration: MAX_ADDRESSES_PER_INTEGRATION,
      total: MAX_PAIRS,
    },
  ) {}

  remember(address: string, integration: string): void {
    const addresses = this.byIntegration.get(integration) ?? this.memory(integration);
    if (!addresses.has(address) && this.pairs >= this.limits.total) this.forgetFromLargest();
    addresses.set(address, true);
    // (Again: giving one up may have emptied, and so dropped, this very memory.)
    this.byIntegration.set(integration, addresses);
  }

  knows(address: string, integration: string): boolean {
    return this.byIntegration.get(integration)?.has(address) ?? false;
  }

  /** Pairs remembered now (for tests). */
  get size(): number {
    return this.pairs;
  }

  private memory(integration: string): LRUCache<string, true> {
    return growingLru<string, true>(this.limits.perIntegration, {
      ttl: this.limits.rememberedMs ?? REMEMBERED_MS,
      ...(this.limits.now ? { perf: { now: this.limits.now }, ttlResolution: 0 } : {}),
      // Counted here whichever way a pair leaves: evicted, expired, or given up.
      disposeAfter: (_value, _key, reason) => {
        if (reason === 'set') return;
        this.pairs--;
        if (this.byIntegration.get(integration)?.size === 0) this.byIntegration.delete(integration);
      },
      onInsert: (_value, _key, reason) => {
        if (reason === 'add') this.pairs++;
      },
    });
  }

  /** The total is reached: the integration with the most addresses forgets its least recently proven. */
  private forgetFromLargest(): void {
    let largest: LRUCache<string, true> | undefined;
    for (const addresses of this.byIntegration.values())
      if (!largest || addresses.size > largest.size) largest = addresses;
    largest?.pop();
  }
}
