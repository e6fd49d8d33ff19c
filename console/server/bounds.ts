/**
 * What one console user may hold of what every user shares: live streams (each two Kubernetes
 * watches), mapping evaluations (worker processes) and sign-ins. Each is reserved before the work
 * starts and refused at once when the user's share is used up (429 with Retry-After), so one user
 * cannot spend the capacity the others need (docs/console.md "Bounds").
 */
import { createHash } from 'node:crypto';
import type { LRUCache } from 'lru-cache';
import { growingLru } from '../../common/growing-lru.js';

/** A refusal: which bound, why, and when to try again. */
export interface Refusal {
  status: 429 | 503;
  code: string;
  message: string;
  retryAfterSeconds: number;
}

/**
 * A count of things held at once, per user and in all: acquire() reserves one (or says why not),
 * the release it returns gives it back (once, however often it is called).
 */
export class UserSlots {
  private readonly held = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly o: {
      /** Held by one user at most (Infinity: no per-user bound). */
      perUser: number;
      /** Held by everyone at most (Infinity: no global bound). */
      total: number;
      /** The refusals' words: what is held ("open pages followed live"), and what a refused user can do. */
      what: string;
      advice: string;
      perUserCode: string;
      perUserSetting: string;
      totalCode: string;
      totalSetting: string;
      retryAfterSeconds: number;
    },
  ) {}

  acquire(user: string): { release: () => void } | Refusal {
    const mine = this.held.get(user) ?? 0;
    if (mine >= this.o.perUser)
      return {
        status: 429,
        code: this.o.perUserCode,
        message: `${this.o.what}: you have ${mine}, the most one user may (${this.o.perUserSetting} ${this.o.perUser}); ${this.o.advice}`,
        retryAfterSeconds: this.o.retryAfterSeconds,
      };
    if (this.total >= this.o.total)
      return {
        status: 503,
        code: this.o.totalCode,
        message: `${this.o.what}: the console's users have ${this.total}, its most (${this.o.totalSetting} ${this.o.total}); try again later`,
        retryAfterSeconds: this.o.retryAfterSeconds,
      };
    this.held.set(user, mine + 1);
    this.total++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.total--;
        const left = (this.held.get(user) ?? 1) - 1;
        if (left > 0) this.held.set(user, left);
        else this.held.delete(user);
      },
    };
  }

  /** Held by `user` now (tests, diagnostics). */
  heldBy(user: string): number {
    return this.held.get(user) ?? 0;
  }
}

/** A count that refills at a steady rate up to its burst (the lazy token bucket: no timers). */
class Bucket {
  private tokens: number;

  constructor(
    private readonly burst: number,
    private readonly refillMs: number,
    private lastMs: number,
  ) {
    this.tokens = burst;
  }

  /** Milliseconds until one token is there (0: now). */
  waitMs(nowMs: number): number {
    this.tokens = Math.min(this.burst, this.tokens + (nowMs - this.lastMs) / this.refillMs);
    this.lastMs = nowMs;
    return this.tokens >= 1 ? 0 : (1 - this.tokens) * this.refillMs;
  }

  /** Takes a token (after waitMs said 0), or gives one back (-1). */
  take(count: number): void {
    this.tokens = Math.min(this.burst, this.tokens - count);
  }
}

export interface LoginThrottleOptions {
  /** Failed sign-ins one source address may make in a burst, then one per `failureRefillSeconds`. */
  failureBurst: number;
  failureRefillSeconds: number;
  /** Sign-ins one identity (and one token) may make in a burst, then one per `signInRefillSeconds`. */
  signInBurst: number;
  signInRefillSeconds: number;
}

export const DEFAULT_LOGIN_THROTTLE: LoginThrottleOptions = {
  failureBurst: 10,
  failureRefillSeconds: 10,
  signInBurst: 10,
  signInRefillSeconds: 30,
};

/** Buckets kept at most per kind (an address or identity not seen for a while is forgotten, full again). */
const MAX_KEYS = 10_000;

/**
 * Sign-ins, throttled before the API server is asked whether a token is valid (that question is
 * the work, and its answer is what a token-guessing stranger wants):
 * - failures per source address: each attempt reserves one failure before the check and gets it
 *   back when the token was good, so a hundred attempts sent at once cannot all pass the check;
 * - sign-ins per token (before the check) and per identity the API server names (after it): a
 *   user with a valid token cannot sign in thousands of times, and with Sessions' per-user cap
 *   cannot hold more than a few sessions either.
 * A throttled address or identity gets 429 with Retry-After; nobody else is refused for it.
 */
export class LoginThrottle {
  private readonly failures: LRUCache<string, Bucket>;
  private readonly signIns: LRUCache<string, Bucket>;

  constructor(
    private readonly o: LoginThrottleOptions = DEFAULT_LOGIN_THROTTLE,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.failures = growingLru(MAX_KEYS);
    this.signIns = growingLru(MAX_KEYS);
  }

  /**
   * Before a sign-in is checked: reserves a failure of `address` and a sign-in of `token`. Returns
   * the attempt, whose outcome settles the reservation, or the refusal.
   */
  begin(address: string, token: string): LoginAttempt | Refusal {
    const now = this.now();
    const failures = this.bucket(this.failures, address, this.o.failureBurst, this.o.failureRefillSeconds, now);
    const tokenKey = `token:${createHash('sha256').update(token).digest('hex')}`;
    const byToken = this.bucket(this.signIns, tokenKey, this.o.signInBurst, this.o.signInRefillSeconds, now);
    const failureWait = failures.waitMs(now);
    if (failureWait > 0) return throttled(failureWait, this.failureMessage(address));
    const tokenWait = byToken.waitMs(now);
    if (tokenWait > 0) return throttled(tokenWait, this.signInLimitMessage('this token'));
    failures.take(1);
    byToken.take(1);
    let settled = false;
    return {
      failed: () => {
        settled = true;
      },
      abandoned: () => {
        if (settled) return;
        settled = true;
        failures.take(-1);
      },
      succeeded: (user: string) => {
        if (settled) return undefined;
        settled = true;
        // A good token is no failure: the address gets its reservation back.
        failures.take(-1);
        const t = this.now();
        const byUser = this.bucket(this.signIns, `user:${user}`, this.o.signInBurst, this.o.signInRefillSeconds, t);
        const userWait = byUser.waitMs(t);
        if (userWait > 0) return throttled(userWait, this.signInLimitMessage(`${user}`));
        byUser.take(1);
        return undefined;
      },
    };
  }

  /**
   * Before a bearer token the console has not seen is checked (an authenticating proxy's, or
   * anyone's: sending `Authorization: Bearer` asks the API server about a token as a sign-in
   * does): reserves a failure of `address` only; a proxy sends the token with every request, so
   * sign-ins are not counted.
   */
  beginCheck(address: string): LoginAttempt | Refusal {
    const now = this.now();
    const failures = this.bucket(this.failures, address, this.o.failureBurst, this.o.failureRefillSeconds, now);
    const failureWait = failures.waitMs(now);
    if (failureWait > 0) return throttled(failureWait, this.failureMessage(address));
    failures.take(1);
    let settled = false;
    const giveBack = () => {
      if (settled) return undefined;
      settled = true;
      failures.take(-1);
      return undefined;
    };
    return {
      failed: () => {
        settled = true;
      },
      abandoned: giveBack,
      succeeded: giveBack,
    };
  }

  private failureMessage(address: string): string {
    return `too many failed sign-ins from ${address}: wait before trying again (at most ${this.o.failureBurst}, then one per ${this.o.failureRefillSeconds} s)`;
  }

  private signInLimitMessage(who: string): string {
    return `too many sign-ins as ${who}: wait before signing in again (at most ${this.o.signInBurst}, then one per ${this.o.signInRefillSeconds} s); a signed-in tab shares its session with the console's other tabs`;
  }

  private bucket(
    cache: LRUCache<string, Bucket>,
    key: string,
    burst: number,
    refillSeconds: number,
    now: number,
  ): Bucket {
    let bucket = cache.get(key);
    if (!bucket) {
      bucket = new Bucket(burst, refillSeconds * 1000, now);
      cache.set(key, bucket);
    }
    return bucket;
  }
}

export interface LoginAttempt {
  /** The API server refused the token: the address keeps the failure. */
  failed(): void;
  /** The check could not be made (the API server unreachable): no failure of the address. */
  abandoned(): void;
  /** The token is `user`'s: undefined, or a refusal when that identity signed in too often. */
  succeeded(user: string): Refusal | undefined;
}

export const isRefusal = (x: object): x is Refusal => 'retryAfterSeconds' in x;

const throttled = (waitMs: number, message: string): Refusal => ({
  status: 429,
  code: 'login_throttled',
  message,
  retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
});
