/**
 * kill -9 the ingester while its spool holds events and the bus is down; restart both: the new
 * ingester replays the spool it finds, and every acknowledged event is in the stream exactly once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../support/waiting.js';
import { startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, readStream, startNats, tally, type RunningNats } from '../support/nats-server.js';
import { acknowledgedTraces, sendLoad, type RequestOutcome } from '../support/senders.js';

let nats: RunningNats | undefined;
const ingesters: RunningIngester[] = [];
const spoolDir = mkdtempSync(join(tmpdir(), 'intake-spool-'));

afterAll(async () => {
  for (const i of ingesters) await i.stop('SIGKILL');
  await nats?.stop();
  rmSync(spoolDir, { recursive: true, force: true });
});

const burst = async (url: string, ms: number): Promise<RequestOutcome[]> => {
  const until = Date.now() + ms;
  return sendLoad({
    url: `${url}/events/webhook_demo`,
    senders: 4,
    batch: 5,
    retries: 0,
    retryDelayMs: 0,
    done: () => Date.now() > until,
  });
};

it('replays a spool left by a killed ingester so every acknowledged event arrives exactly once', async () => {
  nats = await startNats();
  const first = await startIngester(handoffConfig(nats, { spoolDir }));
  ingesters.push(first);
  const before = await burst(first.url, 400);
  await nats.kill9();
  const during = await burst(first.url, 600);
  const spooled = await metricValue(first.adminUrl, 'intake_spool_events');
  first.child.kill('SIGKILL');
  await first.exited;

  await nats.restart();
  const second = await startIngester(handoffConfig(nats, { spoolDir }));
  ingesters.push(second);
  await waitFor(
    'spool replayed',
    async () => (await metricValue(second.adminUrl, 'intake_spool_events')) === 0,
    20_000,
    100,
  );
  const stored = await readStream(nats.url, 'INTAKE_EVENTS');

  expect(during.filter((o) => o.status === 200).every((o) => o.body?.response?.cached === 5)).toBe(true);
  expect(spooled).toBeGreaterThan(0);
  const acknowledged = acknowledgedTraces([...before, ...during]);
  const byTrace = tally(stored.map((s) => (s.event.custom_info as { trace: string }).trace));
  expect(acknowledged.filter((t) => byTrace.get(t) !== 1)).toEqual([]);
  expect(stored.length).toBe(byTrace.size);
}, 60_000);
