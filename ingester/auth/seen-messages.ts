/**
 * Message ids (Standard Webhooks `webhook-id`) this replica answered 200 recently, with the answer
 * it gave: a sender's retry, or an attacker resending a signed request its timestamp still lets in, gets
 * the same 200 without being processed again.
 *
 * This is the fast path. What makes "stored once" hold across replicas and restarts is that the
 * events' ids derive from the message id, so the bus's duplicate window (JetStream `Nats-Msg-Id`,
 * the spool's primary key) drops a second copy wherever it arrives. The log sink has no such
 * check: docs/signatures.md (Repeated messages) says when a repeated message is written twice.
 *
 * Each id is kept while a repeat of it would still be accepted (signature-check.ts
 * `repeatableForMs`: until its signed timestamp leaves the tolerance, which for a timestamp ahead
 * of the clock is up to twice the tolerance from the first 200).
 *
 * Bounded per integration, in bytes: each integration (one tenant's: names are unique) has its own
 * cache, so one sender with many ids evicts only its own, never another integration's. Only a
 * request whose signature holds adds an id, so only the holder of the integration's secret fills
 * it. Full, it forgets its least recently used id rather than refuse the new message: a repeat of a
 * forgotten id is handed off again with the same event ids (they derive from the message id),
 * which the bus and the spool store once; only the log sink writes it again (docs/signatures.md,
 * Repeated messages). Refusing would instead turn a busy sender's genuine new messages into 429s.
 */
import { LRUCache } from 'lru-cache';
import type { RouteTable } from '../routing/route-table.js';

export interface RememberedAnswer {
  processed: number;
  cached: number;
  received: number;
}

/** Bytes of ids one integration keeps (about 2000 ids of Standard Webhooks' usual length). */
export const SEEN_BYTES_PER_INTEGRATION = 256 * 1024;
/** What an entry costs besides its id's characters: the LRU's slots and the answer object. */
const ENTRY_OVERHEAD_BYTES = 96;

export class SeenMessages {
  private readonly byIntegration = new Map<string, LRUCache<string, RememberedAnswer>>();
  /** The table the caches were last checked against. */
  private table?: RouteTable;

  constructor(
    private readonly routes: () => RouteTable,
    private readonly bytesPerIntegration = SEEN_BYTES_PER_INTEGRATION,
  ) {}

  /** The answer given to this message id within the tolerance, if any. */
  answerFor(integration: string, id: string): RememberedAnswer | undefined {
    return this.byIntegration.get(integration)?.get(id);
  }

  remember(integration: string, id: string, ttlMs: number, answer: RememberedAnswer): void {
    this.forgetUnpublished();
    let cache = this.byIntegration.get(integration);
    if (!cache) {
      cache = new LRUCache<string, RememberedAnswer>({
        maxSize: this.bytesPerIntegration,
        sizeCalculation: (_v, key) => key.length * 2 + ENTRY_OVERHEAD_BYTES,
        ttl: ttlMs,
      });
      this.byIntegration.set(integration, cache);
    }
    cache.set(id, answer, { ttl: ttlMs });
  }

  /** After a reload: forgets integrations no longer published, or no longer signed with message ids. */
  private forgetUnpublished(): void {
    const table = this.routes();
    if (table === this.table) return;
    this.table = table;
    for (const name of this.byIntegration.keys())
      if (table.webhook(name)?.signature?.rule.idHeader === undefined) this.byIntegration.delete(name);
  }

  /** Integrations with a cache, and the bytes each holds (for tests and the benchmark). */
  sizes(): Map<string, number> {
    return new Map([...this.byIntegration].map(([name, cache]) => [name, cache.calculatedSize]));
  }
}
