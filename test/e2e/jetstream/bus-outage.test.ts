/**
 * kill -9 the nats-server under load from senders that retry on 503, then restart it: during the
 * outage events are cached (spooled), afterwards the spool drains, and the stream holds every
 * acknowledged event exactly once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../support/waiting.js';
import { startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, readStream, startNats, tally, type RunningNats } from '../support/nats-server.js';
import { acknowledgedTraces, sendLoad } from '../support/senders.js';

let nats: RunningNats | undefined;
let ingester: RunningIngester | undefined;
const spoolDir = mkdtempSync(join(tmpdir(), 'intake-spool-'));

afterAll(async () => {
  await ingester?.stop('SIGKILL');
  await nats?.stop();
  rmSync(spoolDir, { recursive: true, force: true });
});

it('stores every acknowledged event exactly once across a kill -9 and restart of the bus', async () => {
  nats = await startNats();
  ingester = await startIngester(handoffConfig(nats, { spoolDir }));
  const url = `${ingester.url}/events/webhook_demo`;
  let cachedAnswers = 0;
  let stop = false;
  const load = sendLoad({
    url,
    senders: 6,
    batch: 10,
    retries: 20,
    retryDelayMs: 100,
    done: () => stop,
    onAnswer: (status, body) => {
      if (status === 200 && (body?.response?.cached ?? 0) > 0) cachedAnswers++;
    },
  });
  await new Promise((r) => setTimeout(r, 1000));
  await nats.kill9();
  await new Promise((r) => setTimeout(r, 1500));
  await nats.restart();
  await new Promise((r) => setTimeout(r, 1500));
  stop = true;
  const outcomes = await load;

  await waitFor(
    'spool drained',
    async () => (await metricValue(ingester!.adminUrl, 'intake_spool_events')) === 0,
    20_000,
    100,
  );
  const stored = await readStream(nats.url, 'INTAKE_EVENTS');

  expect(cachedAnswers).toBeGreaterThan(0);
  for (const o of outcomes.filter((x) => x.status === 200)) {
    const r = o.body?.response ?? { processed: -1, cached: -1, received: 0 };
    expect(r.processed + r.cached).toBe(r.received);
  }
  const acknowledged = acknowledgedTraces(outcomes);
  expect(acknowledged.length).toBeGreaterThan(100);
  const byTrace = tally(stored.map((s) => (s.event.custom_info as { trace: string }).trace));
  const missing = acknowledged.filter((t) => !byTrace.has(t));
  const twice = [...byTrace].filter(([, n]) => n > 1);
  expect(missing).toEqual([]);
  expect(twice).toEqual([]);
  // No message stored twice: each Nats-Msg-Id at one stream position (a message holds a request's events).
  const messages = new Map(stored.map((s) => [s.seq, s.msgId]));
  expect([...tally(messages.values())].filter(([, n]) => n > 1)).toEqual([]);
  for (const s of stored) expect(s.msgId.startsWith('m-') || s.msgId === s.event.id).toBe(true);
}, 60_000);
