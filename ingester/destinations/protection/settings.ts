/**
 * A destination's protection settings (`circuitBreaker:` and `rateLimit:` under each destination):
 * schema, defaults and checks, apart from the destination kinds so that every kind of destination
 * takes the same block.
 */
import { ConfigError } from '../../../common/config-files.js';
import { parseDuration } from '../../../common/duration.js';
import type { CircuitBreakerSettings } from './circuit-breaker.js';

export interface ProtectionSettings {
  /** Undefined: no breaker (`circuitBreaker.enabled: false`). */
  circuitBreaker?: CircuitBreakerSettings;
  /** Undefined: no rate limit (the default). */
  rateLimit?: { eventsPerSecond: number; burst: number };
  /** Continuous failure before the destination pauses itself (pause.ts); undefined: never. */
  autoPause?: { afterMs: number };
}

export interface ProtectionFile {
  circuitBreaker?: {
    enabled?: boolean;
    consecutiveFailures?: number;
    failureRatio?: number;
    window?: string;
    minRequests?: number;
    openFor?: string;
  };
  rateLimit?: { eventsPerSecond: number; burst?: number };
  autoPause?: { enabled?: boolean; after?: string };
}

export const DEFAULT_CIRCUIT_BREAKER = {
  consecutiveFailures: 5,
  failureRatio: 0.5,
  window: '1m',
  minRequests: 20,
  openFor: '30s',
} as const;

export const DEFAULT_AUTO_PAUSE_AFTER = '24h';

/** Defaults applied and checked; `where` names the destination in errors. */
export function resolveProtection(f: ProtectionFile, where: string): ProtectionSettings {
  const out: ProtectionSettings = {};
  const b = f.circuitBreaker ?? {};
  if (b.enabled !== false) {
    const ms = (value: string, field: string): number => {
      const n = parseDuration(value);
      if (n <= 0) throw new ConfigError(`${where}: circuitBreaker.${field} must be longer than 0`);
      return n;
    };
    const consecutiveFailures = b.consecutiveFailures ?? DEFAULT_CIRCUIT_BREAKER.consecutiveFailures;
    const failureRatio = b.failureRatio ?? DEFAULT_CIRCUIT_BREAKER.failureRatio;
    if (consecutiveFailures === 0 && failureRatio >= 1)
      throw new ConfigError(
        `${where}: circuitBreaker never opens with consecutiveFailures 0 and failureRatio 1; set enabled: false to turn it off`,
      );
    out.circuitBreaker = {
      consecutiveFailures,
      failureRatio,
      windowMs: ms(b.window ?? DEFAULT_CIRCUIT_BREAKER.window, 'window'),
      minRequests: b.minRequests ?? DEFAULT_CIRCUIT_BREAKER.minRequests,
      openForMs: ms(b.openFor ?? DEFAULT_CIRCUIT_BREAKER.openFor, 'openFor'),
    };
  }
  if (f.rateLimit) {
    const { eventsPerSecond } = f.rateLimit;
    // A burst below one event would never let one through.
    const burst = f.rateLimit.burst ?? Math.max(1, Math.ceil(eventsPerSecond));
    out.rateLimit = { eventsPerSecond, burst };
  }
  if (f.autoPause?.enabled !== false) {
    const afterMs = parseDuration(f.autoPause?.after ?? DEFAULT_AUTO_PAUSE_AFTER);
    if (afterMs <= 0) throw new ConfigError(`${where}: autoPause.after must be longer than 0`);
    out.autoPause = { afterMs };
  }
  return out;
}
