/**
 * A lane's memory: a queued batch is its compressed request in memory of its own, and that memory
 * goes back the moment the batch is settled, with no garbage collection (an idle process may not
 * run one for a long time); the receiver's client gets a copy on each attempt, never the queued
 * memory itself (a socket may hold what it was given after the answer). The process-level bound is
 * test/e2e/remote-write-memory.test.ts's.
 */
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { SendOutcome } from '../../../../../ingester/series/remote-write/client.js';
import { Lane, type SeriesState } from '../../../../../ingester/series/remote-write/lane.js';
import { RemoteWriteMetrics } from '../../../../../ingester/series/remote-write/metrics.js';
import { encodeLabels } from '../../../../../ingester/series/remote-write/wire.js';

interface Sent {
  body: Buffer;
  /** The bytes as they were when the attempt was made. */
  copy: Buffer;
}

function lane(answers: Array<SendOutcome['kind']>) {
  const sent: Sent[] = [];
  const settled: Array<{ samples: number; bytes: number }> = [];
  const abort = new AbortController();
  const l = new Lane({
    tenant: 'team-a',
    batchSize: 3,
    flushIntervalMs: 60_000,
    minBackoffMs: 1,
    maxBackoffMs: 1,
    send: async (body) => {
      sent.push({ body, copy: Buffer.from(body) });
      const kind = answers.shift() ?? 'accepted';
      return kind === 'accepted'
        ? { kind, status: 204 }
        : { kind: 'retry', reason: 'http_500', status: 500, error: 'HTTP 500' };
    },
    protocol: { current: '1.0' },
    settled: (samples, bytes) => void settled.push({ samples, bytes }),
    resized: () => {},
    metrics: new RemoteWriteMetrics(
      new Registry(),
      { maxQueuedSamples: 100, maxQueuedBytes: 1 << 20, maxQueuedBytesPerTenant: 1 << 20 },
      { shares: () => new Map(), bytes: () => 0 },
    ),
    logger: pino({ level: 'silent' }),
    signal: abort.signal,
    receiver: 'test',
  });
  return { lane: l, sent, settled, abort };
}

function series(name: string, l: Lane): SeriesState {
  const labels: Array<[string, string]> = [
    ['__name__', 'cpu'],
    ['host', name],
  ];
  return {
    labelBytes: encodeLabels(labels),
    labels,
    help: '',
    unit: '',
    lane: l,
    lastTs: 0,
    pending: undefined,
    lastSeenMs: 0,
  };
}

/** The batch the lane holds first (its queued request), read through the lane's private state. */
const queuedBodies = (l: Lane): Uint8Array[] =>
  (l as unknown as { ready: Array<{ body: Uint8Array }> }).ready.map((b) => b.body);

it('gives the receiver a copy on each attempt and frees the queued request the moment the batch is settled', async () => {
  const { lane: l, sent, settled } = lane(['retry', 'retry', 'accepted']);
  const s = series('a', l);
  for (let i = 1; i <= 3; i++) l.add(s, i, i * 1000);
  const [queued] = queuedBodies(l);
  expect(queued?.byteLength).toBeGreaterThan(0);
  const queuedMemory = (queued as Uint8Array).buffer;
  await l.idle();

  expect(sent).toHaveLength(3);
  for (const attempt of sent) {
    // Never the queued memory itself: a socket could hold it past the batch.
    expect(attempt.body.buffer).not.toBe(queuedMemory);
    expect(attempt.copy.length).toBeGreaterThan(0);
  }
  expect(sent[1]?.copy).toEqual(sent[0]?.copy);
  // Settled: its memory is given back at once (the ArrayBuffer is detached), no collection needed.
  expect(settled).toEqual([{ samples: 3, bytes: expect.any(Number) as number }]);
  expect(queuedMemory.byteLength).toBe(0);
  expect(queuedBodies(l)).toHaveLength(0);
});

it('frees the requests of batches never sent when the lane is abandoned', async () => {
  const { lane: l, abort } = lane(['retry', 'retry', 'retry', 'retry', 'retry', 'retry']);
  const s = series('b', l);
  for (let i = 1; i <= 6; i++) l.add(s, i, i * 1000);
  const memories = queuedBodies(l).map((b) => b.buffer);
  expect(memories).toHaveLength(2);
  abort.abort();
  await l.idle();
  expect(l.abandon()).toBe(6);
  for (const m of memories) expect(m.byteLength).toBe(0);
});
