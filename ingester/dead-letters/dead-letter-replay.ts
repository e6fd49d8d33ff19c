/**
 * Replay of dead letters, both kinds, one at a time and exclusively: each letter is claimed first
 * (model.ts: in this process or any replica; the claim is durable), read again, handed on, then
 * removed; a failed one is released and stays. Two replays running at once therefore never hand
 * the same letter on twice.
 *
 * A replay that dies after handing a letter on but before removing it: standalone, a delivery
 * letter's hand-off (its outbox row) is written together with a record of the letter, so the
 * ingester removes that letter when it starts again, and a replay of it hands nothing on again
 * (destinations/outbox/outbox-dead-letters.ts); `removed` then drops the record. With the bus, its
 * claim outlives the process: finishInterruptedReplays (run every few seconds by every replica)
 * takes over a claim whose replay never ended, hands the letter on again and removes it. Handing
 * on again gives the same message id (a delivery) or the same event ids (a mapping), which the
 * bus stores once within its duplicate window: a letter that reached the events stream before the
 * cut is stored once and leaves the list; one that had not is handed on now, so none is lost.
 */
import type { DeadLetter, DeadLetterQuery, DeadLetterStore, DeliveryDeadLetter, MappingDeadLetter } from './model.js';
import type { DeadLetterMetrics } from './metrics.js';

/** How each kind is handed on again; each throws with the reason when it cannot be. */
export interface DeadLetterReplayers {
  /** Runs the payload through its integration's current mapping and hands the events off; resolves with their count. */
  mapping(letter: MappingDeadLetter): Promise<number>;
  /** Hands the event back to its destination (attempts start again); undefined without destinations. */
  delivery?(letter: DeliveryDeadLetter): Promise<void>;
  /** After a letter handed on left the store: what recorded its hand-off can go. */
  removed?(letter: DeadLetter): Promise<void>;
}

export interface DeadLetterReplayResult {
  id: string;
  kind: DeadLetter['kind'];
  namespace: string;
  integration: string;
  destination?: string;
  /** replayed: handed on (a mapping's events handed off, a delivery back in its destination's queue). */
  result: 'replayed' | 'failed' | 'skipped';
  events?: number;
  message?: string;
}

export interface DeadLetterReplayReport {
  replayed: number;
  failed: number;
  skipped: number;
  results: DeadLetterReplayResult[];
}

/**
 * The letter is claimed: hands it on, removes it, then ends the claim (so the claims kept are
 * the replays under way); a failure only ends the claim and keeps the letter.
 */
export async function handOnAndRemove(
  store: DeadLetterStore,
  letter: DeadLetter,
  base: Omit<DeadLetterReplayResult, 'result'>,
  replayers: DeadLetterReplayers,
): Promise<DeadLetterReplayResult> {
  let result: DeadLetterReplayResult;
  try {
    if (letter.kind === 'mapping') {
      result = { ...base, result: 'replayed', events: await replayers.mapping(letter) };
    } else {
      if (!replayers.delivery) throw new Error('no destinations are configured');
      await replayers.delivery(letter);
      result = { ...base, result: 'replayed', events: 1 };
    }
    await store.remove(letter);
  } catch (err) {
    await store.release(letter);
    return { ...base, result: 'failed', message: (err as Error).message };
  }
  // Removed: a claim left behind would only wait for its lease (or the sweep) to go.
  await store.release(letter).catch(() => undefined);
  // Not done, the record stays: the next start finds the letter gone and drops it then.
  await replayers.removed?.(letter).catch(() => undefined);
  return result;
}

export const baseOf = (l: DeadLetter): Omit<DeadLetterReplayResult, 'result'> => ({
  id: l.id,
  kind: l.kind,
  namespace: l.namespace,
  integration: l.integration,
  ...(l.kind === 'delivery' ? { destination: l.destination } : {}),
});

/**
 * Finishes the replays that were cut (the store's interruptedReplays: claimed long ago, letter
 * still kept): each letter is handed on again and removed, or released when that fails. Counted
 * in the replay metric like any replay. Resolves with each one's result.
 */
export async function finishInterruptedReplays(
  store: DeadLetterStore,
  replayers: DeadLetterReplayers,
  metrics: DeadLetterMetrics,
): Promise<DeadLetterReplayResult[]> {
  const results: DeadLetterReplayResult[] = [];
  if (!store.interruptedReplays) return results;
  for await (const letter of store.interruptedReplays()) {
    const result = await handOnAndRemove(store, letter, baseOf(letter), replayers);
    metrics.replayed.inc({
      kind: letter.kind,
      namespace: letter.namespace,
      integration: letter.integration,
      result: result.result,
    });
    results.push(result);
  }
  return results;
}

export async function replayLetters(
  store: DeadLetterStore,
  q: DeadLetterQuery,
  replayers: DeadLetterReplayers,
  leaseMs: number,
  metrics: DeadLetterMetrics,
): Promise<DeadLetterReplayReport> {
  const results: DeadLetterReplayResult[] = [];
  for (const listed of await store.list(q)) {
    const base = baseOf(listed);
    const letter = await store.claim(listed, leaseMs);
    const result: DeadLetterReplayResult = letter
      ? await handOnAndRemove(store, letter, base, replayers)
      : { ...base, result: 'skipped', message: 'another replay holds it, or it was replayed meanwhile' };
    metrics.replayed.inc({
      kind: base.kind,
      namespace: base.namespace,
      integration: base.integration,
      result: result.result,
    });
    results.push(result);
  }
  const count = (r: DeadLetterReplayResult['result']): number => results.filter((x) => x.result === r).length;
  return { replayed: count('replayed'), failed: count('failed'), skipped: count('skipped'), results };
}
