/**
 * A bulk replay's progress as the ingesters' admin listener answers it (GET/POST
 * /deadletter/replays): in a module that imports nothing, so the console's server and browser code
 * take the same shape as the ingester that writes it (ingester/dead-letters/bulk-replay.ts).
 */
export type BulkReplayState = 'running' | 'done' | 'cancelled' | 'failed';

export interface BulkReplayProgress {
  id: string;
  state: BulkReplayState;
  filter: Record<string, unknown>;
  /** At most this many letters a second. */
  rate: number;
  startedAt: string;
  finishedAt?: string;
  /** Letters the filter selected when the replay began. */
  matched: number;
  replayed: number;
  failed: number;
  /** Held by another replay, or gone from the store (dropped, replayed elsewhere) before their turn. */
  skipped: number;
  /** Matched letters not taken yet (those a cancelled replay left are still dead letters). */
  remaining: number;
  /** Why the replay stopped early (state failed: the store could not be read). */
  message?: string;
  /** The last few letters that failed, with why. */
  failures: Array<{ id: string; message: string }>;
}
