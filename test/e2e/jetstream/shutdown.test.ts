/** SIGTERM under load with the bus up: every event of every request answered 200 is in the stream. */
import { rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, readStream, startNats, tally, type RunningNats } from '../support/nats-server.js';
import { acknowledgedTraces, sendLoad } from '../support/senders.js';

let nats: RunningNats | undefined;
let ingester: RunningIngester | undefined;
const spoolDir = mkdtempSync(join(tmpdir(), 'intake-spool-'));

afterAll(async () => {
  await ingester?.stop('SIGKILL');
  await nats?.stop();
  rmSync(spoolDir, { recursive: true, force: true });
});

it('loses no acknowledged event when stopped with SIGTERM during load', async () => {
  nats = await startNats();
  ingester = await startIngester((c) => {
    handoffConfig(nats as RunningNats, { spoolDir })(c);
    c.shutdown = { drainDelay: '500ms', timeout: '10s' };
  });
  let stop = false;
  const load = sendLoad({
    url: `${ingester.url}/events/webhook_demo`,
    senders: 8,
    batch: 5,
    retries: 0,
    retryDelayMs: 0,
    done: () => stop,
  });
  await new Promise((r) => setTimeout(r, 800));
  ingester.child.kill('SIGTERM');
  const code = await ingester.exited;
  stop = true;
  const outcomes = await load;

  expect(code).toBe(0);
  const acknowledged = acknowledgedTraces(outcomes);
  expect(acknowledged.length).toBeGreaterThan(50);
  const byTrace = tally(
    (await readStream(nats.url, 'INTAKE_EVENTS')).map((s) => (s.event.custom_info as { trace: string }).trace),
  );
  expect(acknowledged.filter((t) => byTrace.get(t) !== 1)).toEqual([]);
  for (const o of outcomes.filter((x) => x.status !== 200 && x.status !== 'error')) expect(o.status).toBe(503);
}, 60_000);
