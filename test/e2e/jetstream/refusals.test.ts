/**
 * When the hand-off can hold nothing, the answer is 503 with Retry-After and nothing of the request
 * is acknowledged: spool full, spool unusable, bus down without a spool. A retry after recovery
 * is stored once. A stream that breaks intake's guarantees is named with what is wrong with it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiscardPolicy, jetstreamManager } from '@nats-io/jetstream';
import { connect, nanos } from '@nats-io/transport-node';
import { waitFor } from '../../support/waiting.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, readStream, startNats, type RunningNats } from '../support/nats-server.js';

const running: Array<RunningIngester | RunningNats> = [];
const tmp = mkdtempSync(join(tmpdir(), 'intake-refusals-'));

afterAll(async () => {
  for (const r of running.reverse()) await ('child' in r ? r.stop('SIGKILL') : r.stop());
  rmSync(tmp, { recursive: true, force: true });
});

async function setUp(
  o: Parameters<typeof handoffConfig>[1] = {},
): Promise<{ nats: RunningNats; ing: RunningIngester }> {
  const nats = await startNats();
  running.push(nats);
  const ing = await startIngester(handoffConfig(nats, o));
  running.push(ing);
  return { nats, ing };
}

const send = (ing: RunningIngester, body: unknown, key?: string) =>
  post(`${ing.url}/events/webhook_demo`, body, {
    authorization: basic(DEMO.user, DEMO.password),
    ...(key ? { 'idempotency-key': key } : {}),
  });

const busUp = (ing: RunningIngester) =>
  waitFor(
    'bus connected',
    async () => (await metricValue(ing.adminUrl, 'intake_jetstream_connected')) === 1,
    15_000,
    50,
  );

it('answers 503 with Retry-After and spools nothing of a request that does not fit the spool', async () => {
  const { nats, ing } = await setUp({
    spoolDir: join(tmp, 'full'),
    spoolMaxBytes: 65536,
    spoolMaxBytesPerNamespace: 65536,
  });
  await nats.kill9();
  const big = (n: number) =>
    Array.from({ length: 3 }, (_, i) => ({ source: 'full', severity: 2, description: 'x'.repeat(10_000), n, i }));
  expect((await send(ing, big(1))).status).toBe(200);
  expect((await send(ing, big(2))).status).toBe(200);
  const refused = await send(ing, big(3));
  expect(refused.status).toBe(503);
  expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(refused.json()).toMatchObject({ success: false });
  expect(await metricValue(ing.adminUrl, 'intake_spool_events')).toBe(6);

  await nats.restart();
  await waitFor(
    'spool drained',
    async () => (await metricValue(ing.adminUrl, 'intake_spool_events')) === 0,
    15_000,
    100,
  );
  const stored = await readStream(nats.url, 'INTAKE_EVENTS');
  expect(stored.map((s) => (s.event.custom_info as { n: number }).n).sort()).toEqual([1, 1, 1, 2, 2, 2]);
}, 60_000);

it('answers 503 with Retry-After and turns unready when the spool cannot be written and the bus is down', async () => {
  const notADir = join(tmp, 'a-file');
  writeFileSync(notADir, 'not a directory');
  const { nats, ing } = await setUp({ spoolDir: join(notADir, 'spool') });
  await nats.kill9();
  const refused = await send(ing, { source: 'disk', severity: 4 });
  expect(refused.status).toBe(503);
  expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
  expect((await fetch(`${ing.adminUrl}/readyz`)).status).toBe(503);
  expect(ing.stderr()).toContain('spool unavailable');

  await nats.restart();
  await busUp(ing);
  expect((await send(ing, { source: 'disk', severity: 4 })).json()).toMatchObject({
    response: { processed: 1, cached: 0, received: 1 },
  });
  expect(await readStream(nats.url, 'INTAKE_EVENTS')).toHaveLength(1);
}, 60_000);

it('answers 503 while the bus is down without a spool, and stores the retry after recovery once', async () => {
  const { nats, ing } = await setUp();
  expect((await send(ing, { source: 'a', severity: 1 })).json()).toMatchObject({
    response: { processed: 1, cached: 0, received: 1 },
  });
  await nats.kill9();
  const refused = await send(
    ing,
    [
      { source: 'b', severity: 2 },
      { source: 'c', severity: 3 },
    ],
    'retry-key-1',
  );
  expect(refused.status).toBe(503);
  expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);

  await nats.restart();
  await busUp(ing);
  for (let i = 0; i < 2; i++) {
    expect(
      (
        await send(
          ing,
          [
            { source: 'b', severity: 2 },
            { source: 'c', severity: 3 },
          ],
          'retry-key-1',
        )
      ).json(),
    ).toMatchObject({ response: { processed: 2, received: 2 } });
  }
  expect((await send(ing, { source: 'a', severity: 1 })).status).toBe(200);
  const stored = await readStream(nats.url, 'INTAKE_EVENTS');
  expect(stored.map((s) => s.event.source).sort()).toEqual(['a', 'b', 'c']);
}, 60_000);

it('names every problem of an existing stream it may not change, and spools meanwhile', async () => {
  const nats = await startNats();
  running.push(nats);
  const nc = await connect({ servers: nats.url });
  await (
    await jetstreamManager(nc)
  ).streams.add({ name: 'OTHER', subjects: ['other.>'], discard: DiscardPolicy.Old, duplicate_window: nanos(120_000) });
  await nc.close();
  const ing = await startIngester(
    handoffConfig(nats, { spoolDir: join(tmp, 'bad-stream'), jetstream: { stream: 'OTHER', createStream: false } }),
  );
  running.push(ing);
  await waitFor('stream problems logged', async () => ing.stderr().includes('misconfigured'), 10_000);
  const log = ing.stderr();
  expect(log).toContain('do not cover intake.events.>');
  expect(log).toContain('discard policy is \\"old\\"');
  expect(log).toContain('duplicate_window is 120s');
  expect((await send(ing, { source: 'a', severity: 1 })).json()).toMatchObject({
    response: { processed: 0, cached: 1, received: 1 },
  });
}, 60_000);

it('spools what a full stream (discard new) refuses instead of dropping it', async () => {
  const { ing } = await setUp({
    spoolDir: join(tmp, 'stream-full'),
    jetstream: { stream: 'SMALL', streamConfig: { maxMsgs: 3 } },
  });
  // maxMsgs counts messages: a request's events are one message, so three requests fill the stream.
  const answers = [];
  for (let i = 0; i < 3; i++)
    answers.push(
      (
        await send(ing, [
          { source: 'full-stream', severity: 2, i },
          { source: 'full-stream', severity: 3, i },
        ])
      ).json(),
    );
  for (let i = 3; i < 5; i++) answers.push((await send(ing, { source: 'full-stream', severity: 2, i })).json());
  expect(answers.map((a) => (a as { response: unknown }).response)).toEqual([
    { processed: 2, cached: 0, received: 2 },
    { processed: 2, cached: 0, received: 2 },
    { processed: 2, cached: 0, received: 2 },
    { processed: 0, cached: 1, received: 1 },
    { processed: 0, cached: 1, received: 1 },
  ]);
  expect(await metricValue(ing.adminUrl, 'intake_spool_events')).toBe(2);
  await waitFor('refusal logged', async () => ing.stderr().includes('maximum messages exceeded'), 5000);
}, 60_000);
