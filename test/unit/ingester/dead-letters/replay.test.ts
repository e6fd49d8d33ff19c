/** replayLetters: claim, hand on, remove, then `removed` (what recorded the hand-off goes); a failure keeps the letter. */
import { Registry } from 'prom-client';
import type { NormalisedEvent } from '../../../../ingester/core/event.js';
import { finishInterruptedReplays, replayLetters } from '../../../../ingester/dead-letters/dead-letter-replay.js';
import { DeadLetterMetrics } from '../../../../ingester/dead-letters/metrics.js';
import type { DeadLetter, DeliveryDeadLetter } from '../../../../ingester/dead-letters/model.js';
import { SqliteDeadLetters } from '../../../../ingester/dead-letters/sqlite-store.js';

const letter = (id: string) => ({
  kind: 'delivery' as const,
  id,
  namespace: 'default',
  integration: 'demo',
  destination: 'a',
  reason: 'http_400',
  error: 'no',
  attempts: 1,
  event: { id: `event-${id}` } as NormalisedEvent,
});

it('removes a letter handed on, then tells `removed`; a failed hand-off keeps the letter and tells nothing', async () => {
  const store = new SqliteDeadLetters(':memory:', { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });
  await store.put(letter('ok'));
  await store.put(letter('bad'));
  const order: string[] = [];
  const report = await replayLetters(
    store,
    { limit: 10 },
    {
      mapping: async () => 0,
      delivery: async (l: DeliveryDeadLetter) => {
        if (l.id === 'bad') throw new Error('destination gone');
        order.push(`delivery ${l.id}`);
      },
      removed: async (l: DeadLetter) => {
        order.push(`removed ${l.id} (listed: ${(await store.list({ ids: [l.id], limit: 1 })).length})`);
      },
    },
    60_000,
    new DeadLetterMetrics(new Registry(), () => store),
  );
  expect(report).toMatchObject({ replayed: 1, failed: 1 });
  expect(order).toEqual(['delivery ok', 'removed ok (listed: 0)']);
  expect((await store.list({ limit: 10 })).map((l) => l.id)).toEqual(['bad']);
  await store.close();
});

describe('finishInterruptedReplays', () => {
  /** A store whose interruptedReplays yields the letters of replays that were cut (as the bus store finds them). */
  const storeWithCut = async (ids: string[]) => {
    const store = new SqliteDeadLetters(':memory:', { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });
    for (const id of ids) await store.put(letter(id));
    const cut = await store.list({ limit: 10 });
    return Object.assign(store, {
      async *interruptedReplays(): AsyncIterable<DeadLetter> {
        for (const l of cut) yield l;
      },
    });
  };

  it('hands each cut letter on again and removes it; a failure releases it and keeps it listed', async () => {
    const store = await storeWithCut(['cut-ok', 'cut-bad']);
    const handed: string[] = [];
    const results = await finishInterruptedReplays(
      store,
      {
        mapping: async () => 0,
        delivery: async (l: DeliveryDeadLetter) => {
          if (l.id === 'cut-bad') throw new Error('bus gone');
          handed.push(l.id);
        },
      },
      new DeadLetterMetrics(new Registry(), () => store),
    );
    expect(results.map((r) => [r.id, r.result])).toEqual([
      ['cut-ok', 'replayed'],
      ['cut-bad', 'failed'],
    ]);
    expect(handed).toEqual(['cut-ok']);
    expect((await store.list({ limit: 10 })).map((l) => l.id)).toEqual(['cut-bad']);
    await store.close();
  });

  it('does nothing for a store whose claims end with its process (no interruptedReplays)', async () => {
    const store = new SqliteDeadLetters(':memory:', { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 });
    await store.put(letter('kept'));
    const results = await finishInterruptedReplays(
      store,
      { mapping: async () => 0, delivery: async () => undefined },
      new DeadLetterMetrics(new Registry(), () => store),
    );
    expect(results).toEqual([]);
    expect((await store.list({ limit: 10 })).map((l) => l.id)).toEqual(['kept']);
    await store.close();
  });
});
