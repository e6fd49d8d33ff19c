/**
 * The bus as docs/hand-off.md recommends it for events that must survive the loss of a NATS node:
 * three nats-servers clustered on loopback, the events stream with `replicas: 3`. During a bounded
 * burst with delivery running, `kill -9` of the stream's leader, then of a follower (which leaves
 * one server: no quorum), then both are started again. Every acknowledged event is in the stream
 * exactly once and delivered at least once, with no operator action: the ingester's server list,
 * its reconnects and the spool carry it through. The test prints what senders saw (the longest
 * time without a fully handed-off answer, how many answers were spooled or 503); docs/hand-off.md
 * quotes it.
 */
import { jest } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { startIngester, type RunningIngester } from '../support/ingester.js';
import { startNatsCluster, type RunningNatsCluster } from '../support/nats-cluster.js';
import { metricValue, readStream, tally } from '../support/nats-server.js';
import { acknowledgedTraces, sendWithRetries, type RequestOutcome } from '../support/senders.js';

jest.setTimeout(150_000);

const STREAM = 'INTAKE_EVENTS';
let cluster: RunningNatsCluster | undefined;
let ingester: RunningIngester | undefined;
let receiver: EventReceiver | undefined;
const spoolDir = mkdtempSync(join(tmpdir(), 'intake-cluster-spool-'));

afterAll(async () => {
  await ingester?.stop('SIGKILL');
  await Promise.all([cluster?.stop(), receiver?.close()]);
  rmSync(spoolDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const traceOf = (e: Record<string, unknown>): string => (e.custom_info as { trace: string }).trace;

it('keeps every acknowledged event exactly once through the loss of the leader, then of quorum', async () => {
  [cluster, receiver] = await Promise.all([startNatsCluster(3), startEventReceiver()]);
  ingester = await startIngester((c) => {
    c.sinks = {
      jetstream: { url: cluster!.urls, timeout: '500ms', reconnectWait: '100ms', streamConfig: { replicas: 3 } },
    };
    c.spool = { path: spoolDir, replayBackoffMin: '50ms', replayBackoffMax: '500ms' };
    c.destinations = [
      {
        name: 'tickets',
        default: true,
        http: { url: receiver!.url, timeout: '1s' },
        delivery: { backoffMin: '50ms', backoffMax: '500ms' },
      },
    ];
  });
  await cluster.waitStreamHealthy(STREAM, 30_000);

  // What senders saw, answer by answer: fully handed off (processed), spooled (cached) or 503.
  const t0 = performance.now();
  const answers: Array<{ atMs: number; kind: 'processed' | 'cached' | 'refused' }> = [];
  let stop = false;
  // Bounded: four senders, each a 5-event request every 50 ms (about 400 events/s), retried on 503.
  const onAnswer = (status: number | 'error', body: RequestOutcome['body']): void => {
    answers.push({
      atMs: performance.now() - t0,
      kind: status !== 200 ? 'refused' : (body?.response?.cached ?? 0) > 0 ? 'cached' : 'processed',
    });
  };
  const load = (async (): Promise<RequestOutcome[]> => {
    const outcomes: RequestOutcome[] = [];
    let seq = 0;
    await Promise.all(
      [0, 1, 2, 3].map(async (sender) => {
        while (!stop) {
          const traces = Array.from({ length: 5 }, () => `s${sender}-${seq++}`);
          const url = `${ingester!.url}/events/webhook_demo`;
          outcomes.push(await sendWithRetries({ url, retries: 30, retryDelayMs: 100, onAnswer }, traces));
          await sleep(50);
        }
      }),
    );
    return outcomes;
  })();

  await sleep(1500);
  const leader = await cluster.streamLeader(STREAM);
  await cluster.servers.find((s) => s.name === leader)!.kill9();
  const leaderKilledAt = performance.now() - t0;
  let newLeader: string | undefined;
  await waitFor(
    'a new stream leader',
    async () =>
      (newLeader = await cluster!.streamLeader(STREAM).catch(() => undefined)) !== undefined && newLeader !== leader,
    30_000,
    100,
  );
  const electedAt = performance.now() - t0;
  await sleep(2000);
  // The follower of the new leader: one server is left, the stream has no quorum.
  const follower = cluster.servers.find((s) => s.running() && s.name !== newLeader)!;
  await follower.kill9();
  const quorumLostAt = performance.now() - t0;
  await sleep(2500);
  await Promise.all(cluster.servers.filter((s) => !s.running()).map((s) => s.restart()));
  const restartedAt = performance.now() - t0;
  await sleep(3000);
  stop = true;
  const outcomes = await load;

  await cluster.waitStreamHealthy(STREAM, 60_000);
  await waitFor(
    'spool drained',
    async () => (await metricValue(ingester!.adminUrl, 'intake_spool_events')) === 0,
    60_000,
    200,
  );
  const acknowledged = acknowledgedTraces(outcomes);
  expect(acknowledged.length).toBeGreaterThan(100);
  // Nothing a sender was told was accepted may be missing; none refused after its retries.
  expect(outcomes.filter((o) => o.status !== 200).map((o) => o.status)).toEqual([]);

  const stored = await readStream(cluster.urls[0]!, STREAM);
  const inStream = tally(stored.map((s) => traceOf(s.event)));
  expect(acknowledged.filter((t) => !inStream.has(t))).toEqual([]);
  expect([...inStream].filter(([, n]) => n > 1)).toEqual([]);

  const delivered = (): Map<string, number> => {
    const seen = new Map<string, number>();
    for (const r of receiver!.requests)
      if (r.answer !== 'reset' && r.answer.status === 200)
        for (const e of r.events) seen.set(traceOf(e), (seen.get(traceOf(e)) ?? 0) + 1);
    return seen;
  };
  await waitFor(
    'every acknowledged event delivered',
    async () => {
      const seen = delivered();
      return acknowledged.every((t) => seen.has(t));
    },
    60_000,
    200,
  ).catch((err: unknown) => {
    const seen = delivered();
    const missing = acknowledged.filter((t) => !seen.has(t));
    throw new Error(
      `${String(err)}: ${missing.length} of ${acknowledged.length} not delivered (first ${missing.slice(0, 3).join(', ')}); ` +
        `ingester log: ${ingester!.stderr().slice(-3000)}`,
    );
  });

  // The longest time senders went without a fully handed-off answer (spooled or 503 meanwhile).
  let longestGapMs = 0;
  let lastProcessed = 0;
  for (const a of answers.sort((x, y) => x.atMs - y.atMs)) {
    if (a.kind !== 'processed') continue;
    longestGapMs = Math.max(longestGapMs, a.atMs - lastProcessed);
    lastProcessed = a.atMs;
  }
  const duplicatesDelivered = [...delivered().values()].filter((n) => n > 1).length;
  console.log(
    [
      `nats cluster: ${acknowledged.length} events acknowledged in ${outcomes.length} requests`,
      `leader ${leader} killed at ${(leaderKilledAt / 1000).toFixed(1)} s, ${newLeader} elected by ${(electedAt / 1000).toFixed(1)} s, follower ${follower.name} at ${(quorumLostAt / 1000).toFixed(1)} s, both restarted at ${(restartedAt / 1000).toFixed(1)} s`,
      `answers: ${answers.filter((a) => a.kind === 'processed').length} handed off, ${answers.filter((a) => a.kind === 'cached').length} spooled, ${answers.filter((a) => a.kind === 'refused').length} refused (retried)`,
      `longest time without a handed-off answer: ${(longestGapMs / 1000).toFixed(2)} s`,
      `in the stream once each: ${inStream.size}; delivered: ${delivered().size}, ${duplicatesDelivered} of them more than once`,
    ].join('\n'),
  );
});
