/**
 * Brute-force guard: an address that fails authentication too often is refused (429) for a while,
 * whether or not its next attempt would succeed, so guessing cannot be told from being blocked.
 */
import { LRUCache } from 'lru-cache';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';

export interface AuthThrottleOptions {
  /** Failed attempts allowed per address within the window. */
  failures: number;
  windowSeconds: number;
  /** How long an address stays blocked once over the limit. */
  blockSeconds: number;
}

/** Most addresses remembered as blocked at once; beyond it the least recently seen are dropped. */
const MAX_BLOCKED = 100_000;

export class AuthThrottle {
  private readonly limiter: RateLimiterMemory;
  /**
   * Blocked addresses and when their block ends, mirrored from the limiter so the check that
   * every request makes is a synchronous map lookup rather than a promise.
   */
  private readonly blocked = new LRUCache<string, number>({ max: MAX_BLOCKED, ttlAutopurge: false });

  constructor(private readonly options: AuthThrottleOptions) {
    for (const key of ['failures', 'windowSeconds', 'blockSeconds'] as const) {
      if (!Number.isInteger(options[key]) || options[key] <= 0)
        throw new RangeError(`AuthThrottle: ${key} must be a positive integer`);
    }
    this.limiter = new RateLimiterMemory({
      points: options.failures,
      duration: options.windowSeconds,
      blockDuration: options.blockSeconds,
    });
  }

  /** Seconds until the address may try again, or 0 when it may try now. */
  blockedFor(address: string, nowMs = Date.now()): number {
    const until = this.blocked.get(address);
    if (until === undefined) return 0;
    if (until <= nowMs) {
      this.blocked.delete(address);
      return 0;
    }
    return Math.max(1, Math.ceil((until - nowMs) / 1000));
  }

  /**
   * Gives back an attempt charged before a slow check that then succeeded. Slow checks (scrypt)
   * are charged up front, so that guesses sent at once all count before any of them is hashed.
   */
  async refund(address: string): Promise<void> {
    await this.limiter.reward(address, 1);
  }

  /** Records a failure; returns seconds blocked if this failure crossed the limit, else 0. */
  async recordFailure(address: string): Promise<number> {
    try {
      await this.limiter.consume(address);
      return 0;
    } catch (res) {
      if (!(res instanceof RateLimiterRes)) throw res;
      this.blocked.set(address, Date.now() + res.msBeforeNext);
      return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
    }
  }
}
