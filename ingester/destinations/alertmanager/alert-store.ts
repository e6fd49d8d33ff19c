/**
 * Where alert states live: the durable store, so any replica can re-send and a restart forgets
 * nothing. A JetStream key-value bucket with the bus (kv-alert-store.ts), the outbox's SQLite
 * database standalone (sqlite-alert-store.ts).
 */
import type { AlertState } from './alerts.js';

export interface Versioned {
  state: AlertState;
  /** Compare-and-set token: a write based on an older version fails (another replica won). */
  version: number;
}

/** One state to write when the stored version is still `version` (0: absent). */
export interface StateWrite {
  state: AlertState;
  version: number;
}

/** Alert states per namespace, as the re-send last counted them. */
export type AlertCounts = Record<string, number>;

export interface AlertStore {
  get(key: string): Promise<Versioned | undefined>;
  /** Writes when the stored version is still `version` (0: absent): the new version, or false when it changed meanwhile. */
  put(state: AlertState, version: number): Promise<number | false>;
  /**
   * Several puts at once, each answered as put() would be (an Error: that one was not written).
   * A store that writes them together (SQLite: one statement list in the turn's transaction)
   * saves a batch a promise and a callback per alert; without it, writeAll() calls put() for each.
   */
  putAll?(writes: readonly StateWrite[]): Promise<Array<number | false | Error>>;
  delete(key: string): Promise<void>;
  /**
   * Every state's key, read from the store a page at a time. Only keys: the re-send reads the
   * states a page at a time, so neither its memory nor its time on the event loop grows with the
   * number of alerts.
   */
  keys(): AsyncIterable<string>;
  /** The counts the last re-send stored (every replica enforces the caps with them); undefined before the first. */
  loadCounts(): Promise<AlertCounts | undefined>;
  saveCounts(counts: AlertCounts): Promise<void>;
  /**
   * Whether this process is the one re-sending firing alerts for the next `ttlMs` (a lease in the
   * store): one replica re-sends, and another takes over when it stops renewing.
   */
  holdResendLease(holder: string, ttlMs: number): Promise<boolean>;
}

/** Writes every state (putAll when the store has it), each answered on its own. */
export async function writeAll(
  store: AlertStore,
  writes: readonly StateWrite[],
): Promise<Array<number | false | Error>> {
  if (store.putAll) return store.putAll(writes);
  const settled = await Promise.allSettled(writes.map((w) => store.put(w.state, w.version)));
  return settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error)));
}
