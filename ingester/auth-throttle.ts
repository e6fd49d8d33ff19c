/**
 * Brute-force guard: an address that fails authentication too often is refused (429) for a while,
 * whether or not its next attempt would succeed, so guessing cannot be told from being blocked.
 */
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';

export interface AuthThrottleOptions {
  /** Failed attempts allowed per address within the window. */
  failures: number;
  windowSeconds: number;
  /** How long an address stays blocked once over the limit. */
  blockSeconds: number;
}

export class AuthThrottle {
  private readonly limiter: RateLimiterMemory;

  constructor(private readonly options: AuthThrottleOptions) {
    for (const key of ['failures', 'windowSeconds', 'blockSeconds'] as const) {
      if (!Number.isInteger(options[key]) || options[key] <= 0) throw new RangeError(`AuthThrottle: ${key} must be a positive integer`);
    }
    this.limiter = new RateLimiterMemory({ points: options.failures, duration: options.windowSeconds, blockDuration: options.blockSeconds });
  }

  /** Seconds until the address may try again, or 0 when it may try now. */
  async blockedFor(address: string): Promise<number> {
    const res = await this.limiter.get(address);
    if (!res || res.consumedPoints <= this.options.failures) return 0;
    return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
  }

  /** Records a failure; returns seconds blocked if this failure crossed the limit, else 0. */
  async recordFailure(address: string): Promise<number> {
    try {
      await this.limiter.consume(address);
      return 0;
    } catch (res) {
      if (res instanceof RateLimiterRes) return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
      throw res;
    }
  }
}
