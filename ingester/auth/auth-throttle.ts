/**
 * Brute-force guard, keyed by source address *and* what it tried (a published integration, or the
 * metrics endpoint for one API key identity). Two budgets:
 *
 * - per pair (address, target): `failures` in the window block that pair for `blockSeconds`,
 *   whatever it sends next, so guessing one integration's secret cannot be told from being
 *   blocked. Other integrations from the same address are not affected: the address is often a
 *   SaaS sender's shared egress, or an ingress, carrying many tenants' requests, and a stranger's
 *   wrong secrets for one integration must not stop another tenant's correctly signed ones.
 * - per address, across every target (unknown integration names included, which have no pair of
 *   their own: nothing can be guessed there, and a stranger enumerating names must not make a key
 *   per name): `failuresPerAddress` in the window make the address *suspect* for `blockSeconds`.
 *   A suspect address still gets through with valid credentials; its failures are answered 429
 *   instead of 401 (the same for an unknown name as for a wrong password, so the answer still
 *   says nothing of which names exist), and for an integration it already tried within the
 *   window it may start no slow (scrypt) check: only a credential verified recently (cached) is
 *   accepted there. An integration it has not tried gets its check as usual, so valid credentials
 *   for another integration than the one attacked are never refused, and the scrypt work a
 *   stranger can cause from one address stays near `failuresPerAddress` plus one per
 *   integration per window, rather than `failures` per integration.
 */
import type { LRUCache } from 'lru-cache';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { growingLru } from '../../common/growing-lru.js';

export interface AuthThrottleOptions {
  /** Failed attempts allowed per address and integration within the window. */
  failures: number;
  windowSeconds: number;
  /** How long a pair (or a suspect address) stays blocked once over its budget. */
  blockSeconds: number;
  /** Failed attempts allowed per address across every integration within the window (default 5 x failures). */
  failuresPerAddress?: number;
}

/** Most pairs and addresses remembered as blocked at once; beyond it the least recently seen are dropped. */
const MAX_BLOCKED = 100_000;

/** What a failure is charged to besides the address: a published integration or an endpoint; undefined for an unknown name. */
export type GuardTarget = string | undefined;

export const webhookTarget = (name: string): string => `webhook_${name}`;
/**
 * The metrics endpoint, per API key identity (RouteTable.apiKeyIdentity: the namespace a key
 * names): a stranger's wrong keys for one tenant never block another tenant's valid key from
 * the same address.
 */
export const metricsTarget = (identity: string): string => `metrics_${identity}`;

const pairKey = (address: string, target: string): string => `${address} ${target}`;

export class AuthThrottle {
  private readonly pairs: RateLimiterMemory;
  private readonly addresses: RateLimiterMemory;
  /**
   * Blocked pairs and suspect addresses and when that ends, mirrored from the limiters so the
   * check every request makes is a synchronous map lookup rather than a promise.
   */
  private readonly blockedPairs = growingLru<string, number>(MAX_BLOCKED);
  private readonly suspects = growingLru<string, number>(MAX_BLOCKED);
  /** Pairs that started a slow check within the window and have not succeeded since. */
  private readonly slowTried: LRUCache<string, true>;

  constructor(private readonly options: AuthThrottleOptions) {
    const perAddress = options.failuresPerAddress ?? 5 * options.failures;
    const checked = { ...options, failuresPerAddress: perAddress };
    for (const key of ['failures', 'windowSeconds', 'blockSeconds', 'failuresPerAddress'] as const) {
      if (!Number.isInteger(checked[key]) || checked[key] <= 0)
        throw new RangeError(`AuthThrottle: ${key} must be a positive integer`);
    }
    const common = { duration: options.windowSeconds, blockDuration: options.blockSeconds };
    this.pairs = new RateLimiterMemory({ points: options.failures, ...common });
    this.addresses = new RateLimiterMemory({ points: perAddress, ...common });
    this.slowTried = growingLru<string, true>(MAX_BLOCKED, { ttl: options.windowSeconds * 1000 });
  }

  /**
   * Whether a slow (scrypt) check from `address` for `target` may run now: always, unless the
   * address is suspect and already started one for this target within the window that did not
   * succeed (then only a cached success may pass). Marks the pair as tried, synchronously, so
   * that guesses sent at once see each other.
   */
  maySlowCheck(address: string, target: string, nowMs = Date.now()): boolean {
    const key = pairKey(address, target);
    const tried = this.slowTried.has(key);
    this.slowTried.set(key, true);
    return !tried || this.suspectFor(address, nowMs) === 0;
  }

  /** Seconds until `address` may try `target` again (0: now). An unknown name has no pair: 0. */
  blockedFor(address: string, target: GuardTarget, nowMs = Date.now()): number {
    // Asked twice for every request: with nothing blocked (the usual case) no key is built.
    if (target === undefined || this.blockedPairs.size === 0) return 0;
    return remaining(this.blockedPairs, pairKey(address, target), nowMs);
  }

  /** Seconds the address stays suspect (0: it is not): its failures get 429, it may start no slow check. */
  suspectFor(address: string, nowMs = Date.now()): number {
    return remaining(this.suspects, address, nowMs);
  }

  /** Seconds a failure from `address` to `target` answers 429 for (0: 401). */
  answerBlockedFor(address: string, target: GuardTarget, nowMs = Date.now()): number {
    return Math.max(this.blockedFor(address, target, nowMs), this.suspectFor(address, nowMs));
  }

  /**
   * Gives back an attempt charged before a slow check that then succeeded. Slow checks (scrypt)
   * are charged up front, so that guesses sent at once all count before any of them is hashed.
   */
  async refund(address: string, target: GuardTarget): Promise<void> {
    if (target !== undefined) {
      this.slowTried.delete(pairKey(address, target));
      await this.pairs.reward(pairKey(address, target), 1);
    }
    await this.addresses.reward(address, 1);
  }

  /** Records a failure; returns the seconds its answer is a 429 for (the pair blocked or the address suspect), else 0. */
  async recordFailure(address: string, target: GuardTarget): Promise<number> {
    if (target !== undefined) await charge(this.pairs, pairKey(address, target), this.blockedPairs);
    await charge(this.addresses, address, this.suspects);
    return this.answerBlockedFor(address, target);
  }
}

/** One point from `key`; over the budget, the block's end is mirrored into `blocked`. */
async function charge(limiter: RateLimiterMemory, key: string, blocked: LRUCache<string, number>): Promise<void> {
  try {
    await limiter.consume(key);
  } catch (res) {
    if (!(res instanceof RateLimiterRes)) throw res;
    blocked.set(key, Date.now() + res.msBeforeNext);
  }
}

function remaining(blocked: LRUCache<string, number>, key: string, nowMs: number): number {
  const until = blocked.get(key);
  if (until === undefined) return 0;
  if (until <= nowMs) {
    blocked.delete(key);
    return 0;
  }
  return Math.max(1, Math.ceil((until - nowMs) / 1000));
}
