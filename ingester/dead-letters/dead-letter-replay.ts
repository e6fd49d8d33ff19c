/**
 * Replay of dead letters, both kinds, one at a time and exclusively: each letter is claimed first
 * (model.ts: in this process or any replica), read again, replayed, then removed; a failed one is
 * released and stays. Two replays running at once therefore never hand the same letter on twice.
 * A replay that dies after handing a letter on but before removing it leaves it claimed until the
 * lease ends; replaying it again then gives the same event ids (content ids for a mapping, the
 * event itself for a delivery), which the bus stores once.
 */
import type { DeadLetter, DeadLetterQuery, DeadLetterStore, DeliveryDeadLetter, MappingDeadLetter } from './model.js';
import type { DeadLetterMetrics } from './metrics.js';

/** How each kind is handed on again; each throws with the reason when it cannot be. */
export interface DeadLetterReplayers {
  /** Runs the payload through its integration's current mapping and hands the events off; resolves with their count. */
  mapping(letter: MappingDeadLetter): Promise<number>;
  /** Hands the event back to its destination (attempts start again); undefined without destinations. */
  delivery?(letter: DeliveryDeadLetter): Promise<void>;
}

export interface DeadLetterReplayResult {
  id: string;
  kind: DeadLetter['kind'];
  namespace: string;
  integration: string;
  destination?: string;
  result: 'delivered' | 'failed' | 'skipped';
  events?: number;
  message?: string;
}

export interface DeadLetterReplayReport {
  replayed: number;
  failed: number;
  skipped: number;
  results: DeadLetterReplayResult[];
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
    const base = {
      id: listed.id,
      kind: listed.kind,
      namespace: listed.namespace,
      integration: listed.integration,
      ...(listed.kind === 'delivery' ? { destination: listed.destination } : {}),
    };
    const letter = await store.claim(listed, leaseMs);
    let result: DeadLetterReplayResult;
    if (!letter) {
      result = { ...base, result: 'skipped', message: 'another replay holds it, or it was replayed meanwhile' };
    } else {
      try {
        if (letter.kind === 'mapping') {
          result = { ...base, result: 'delivered', events: await replayers.mapping(letter) };
        } else {
          if (!replayers.delivery) throw new Error('no destinations are configured');
          await replayers.delivery(letter);
          result = { ...base, result: 'delivered', events: 1 };
        }
        await store.remove(letter);
      } catch (err) {
        await store.release(letter);
        result = { ...base, result: 'failed', message: (err as Error).message };
      }
    }
    metrics.replayed.inc({
      kind: base.kind,
      namespace: base.namespace,
      integration: base.integration,
      result: result.result,
    });
    results.push(result);
  }
  const count = (r: DeadLetterReplayResult['result']): number => results.filter((x) => x.result === r).length;
  return { replayed: count('delivered'), failed: count('failed'), skipped: count('skipped'), results };
}
