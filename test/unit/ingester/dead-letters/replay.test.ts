/** replayLetters: claim, hand on, remove, then `removed` (what recorded the hand-off goes); a failure keeps the letter. */
import { Registry } from 'prom-client';
import type { NormalisedEvent } from '../../../../ingester/core/event.js';
import { replayLetters } from '../../../../ingester/dead-letters/dead-letter-replay.js';
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
