/**
 * Source addresses that recently proved themselves for a signed integration (a signature that
 * held over a body sent from that address). Before authentication nothing says who sends a body,
 * but an address that sent correctly signed requests to this integration within the day is
 * very likely its real sender (a SaaS tool's egress): its next bodies are reserved from a lane of
 * their own (http/body-admission.ts), so strangers holding the shared unauthenticated budgets
 * open do not stop that integration's real requests.
 */
import { LRUCache } from 'lru-cache';

/** How long a proof counts. */
const REMEMBERED_MS = 24 * 60 * 60 * 1000;
/** Pairs remembered at most; past it the least recently proven are forgotten. */
const MAX_PAIRS = 100_000;

export class KnownSenders {
  private readonly pairs = new LRUCache<string, true>({ max: MAX_PAIRS, ttl: REMEMBERED_MS });

  remember(address: string, integration: string): void {
    this.pairs.set(`${address} ${integration}`, true);
  }

  knows(address: string, integration: string): boolean {
    return this.pairs.has(`${address} ${integration}`);
  }
}
