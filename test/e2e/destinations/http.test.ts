/**
 * The HTTP destination against a receiver that fails on purpose (500, 429 with Retry-After,
 * connection resets, a refusal), delivered from the bus: every event arrives at least once, the
 * refused one is dead-lettered with the receiver's reason, visible in metrics and the CLI, and
 * replayed to that destination only. A batching destination sends the events as the stream holds
 * them, keyed by a digest of the body.
 */
import { hash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { resolveJetStream, type JetStreamSettings } from '../../../ingester/sinks/handoff-config.js';
import { wantedStream } from '../../../ingester/sinks/jetstream-stream.js';
import { ROOT } from '../../support/paths.js';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import {
  handoffConfig,
  metricValue,
  startNats,
  untilDeadLettersOpen,
  type RunningNats,
} from '../support/nats-server.js';

const run = promisify(execFile);
let nats: RunningNats;
let receiver: EventReceiver;
/** Every event, in batches of up to 10: the second destination. */
let audit: EventReceiver;
let ing: RunningIngester;

beforeAll(async () => {
  // The receivers (port 0) first: beside nats-server one could be given the port just picked for it.
  [receiver, audit] = await Promise.all([startEventReceiver(), startEventReceiver()]);
  nats = await startNats();
  // History: an event already in the stream before the destination existed.
  const nc = await connect({ servers: nats.url });
  await (
    await jetstreamManager(nc)
  ).streams.add(wantedStream(resolveJetStream({ url: nats.url }) as JetStreamSettings));
  await jetstream(nc).publish(
    'intake.events.default.demo',
    JSON.stringify({
      id: 'history-1',
      integration: 'demo',
      namespace: 'default',
      received_at: new Date().toISOString(),
      source: 'history',
      severity: 3,
      custom_info: {},
    }),
  );
  await nc.close();
  ing = await startIngester((c) => {
    handoffConfig(nats)(c);
    c.destinations = [
      {
        name: 'tickets',
        default: true,
        http: { url: receiver.url, headers: { 'X-Team': 'sre' }, timeout: '1s' },
        delivery: { maxAttempts: 20, backoffMin: '50ms', backoffMax: '400ms' },
        // This file is about retries: six failures in a row would open the circuit for 30 s
        // (destinations/protection.test.ts tests the breaker).
        circuitBreaker: { enabled: false },
      },
      { name: 'audit', default: true, http: { url: audit.url, batchSize: 10, timeout: '1s' } },
    ];
  });
  // A refused event is kept at its first attempt only once the dead letters are open; before, it
  // comes back and is sent (and refused) again, and its letter counts those attempts.
  await untilDeadLettersOpen(ing.adminUrl);
}, 60_000);

afterAll(async () => {
  await ing?.stop();
  await Promise.all([receiver?.close(), audit?.close(), nats?.stop()]);
});

const send = async (events: unknown[]): Promise<void> => {
  const res = await post(`${ing.url}/events/webhook_demo`, events, { authorization: basic(DEMO.user, DEMO.password) });
  expect(res.status).toBe(200);
};
const metric = (series: string): Promise<number | undefined> => metricValue(ing.adminUrl, series);

it('delivers every event through 500s, 429 with Retry-After and connection resets', async () => {
  receiver.script.push(
    { status: 500 },
    { status: 503, body: 'busy' },
    { status: 429, headers: { 'retry-after': '1' } },
    'reset',
    'reset',
    { status: 502 },
  );
  const events = Array.from({ length: 30 }, (_, i) => ({
    source: `host-${i}`,
    severity: 3,
    description: `event ${i}`,
  }));
  await send(events);
  await waitFor('all 30 events accepted', async () => receiver.accepted.size === 30, 20_000, 50);
  const first = receiver.requests[0];
  expect(first?.headers['idempotency-key']).toBe(first?.events[0]?.id);
  expect(first?.headers['x-team']).toBe('sre');
  expect(first?.headers['content-type']).toBe('application/json');
  // Every request carried one event whose id is its Idempotency-Key; repeats carry the same id.
  expect(
    receiver.requests.every((r) => r.events.length === 1 && r.headers['idempotency-key'] === r.events[0]?.id),
  ).toBe(true);
  // After the 429 the next attempt of that event waited for Retry-After (1 s).
  const limited = receiver.requests.find(
    (r) => r.answer !== 'reset' && r.answer.status === 429,
  ) as (typeof receiver.requests)[number];
  const retry = receiver.requests.find(
    (r) => r.atMs >= limited.atMs && r !== limited && r.events[0]?.id === limited.events[0]?.id,
  );
  expect(retry).toBeDefined();
  expect((retry?.atMs ?? 0) - limited.atMs).toBeGreaterThanOrEqual(900);
  // The 30 events were one bus message: the retries re-sent only the six that failed, never one
  // the receiver had taken already.
  expect([...receiver.accepted.values()].every((n) => n === 1)).toBe(true);
  expect(receiver.requests).toHaveLength(36);
  expect(await metric('intake_destination_delivered_total{destination="tickets"}')).toBe(30);
  expect(await metric('intake_destination_retries_total{destination="tickets",reason="http_500"}')).toBe(1);
  expect(await metric('intake_destination_retries_total{destination="tickets",reason="http_429"}')).toBe(1);
  expect(await metric('intake_destination_retries_total{destination="tickets",reason="network"}')).toBe(2);
  // A new destination starts with the events accepted from its ingester's start, not the stream's history.
  expect(receiver.requests.filter((r) => r.events.some((e) => e.source === 'history'))).toEqual([]);
  // The batching destination got the same 30, as arrays of at most 10 keyed by the body's digest.
  await waitFor('all 30 events in batches', async () => audit.accepted.size === 30, 20_000, 50);
  expect(audit.requests.every((r) => r.events.length <= 10)).toBe(true);
  expect(audit.requests.some((r) => r.events.length > 1)).toBe(true);
  for (const r of audit.requests) {
    expect(r.headers['idempotency-key']).toBe(`batch-${hash('sha256', r.body, 'hex')}`);
    expect(r.headers['intake-event-count']).toBe(String(r.events.length));
    expect(r.events.every((e) => e.integration === 'demo' && typeof e.id === 'string')).toBe(true);
  }
}, 30_000);

it('dead-letters an event the receiver refuses with 400, with the reason, and replays it', async () => {
  receiver.refuse = (e) => e.source === 'poison';
  await send([{ source: 'poison', severity: 5, description: 'refused downstream' }]);
  await waitFor(
    'dead-lettered',
    async () => (await metric('intake_destination_dead_lettered_total{destination="tickets",reason="http_400"}')) === 1,
    15_000,
    50,
  );
  // Refused once, not retried.
  expect(receiver.requests.filter((r) => r.events[0]?.source === 'poison')).toHaveLength(1);

  const cli = join(ROOT, 'dist/cmd/intake.js');
  // Counted when given up on; kept a moment later (the dead-letter stream's PubAck).
  type Listed = {
    entries: Array<{
      kind: string;
      destination: string;
      reason: string;
      error: string;
      attempts: number;
      event: { source: string };
    }>;
  };
  const body = await waitFor(
    'kept in the dead letter',
    async () => {
      const listed = await run(process.execPath, [
        cli,
        'deadletter',
        'list',
        '--kind',
        'delivery',
        '--admin-url',
        ing.adminUrl,
        '-o',
        'json',
      ]);
      const parsed = JSON.parse(listed.stdout) as Listed;
      return parsed.entries.length > 0 ? parsed : undefined;
    },
    15_000,
    200,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${ing.stdout().slice(-3000)}`);
  });
  expect(body.entries).toHaveLength(1);
  expect(body.entries[0]).toMatchObject({
    kind: 'delivery',
    destination: 'tickets',
    reason: 'http_400',
    attempts: 1,
    event: { source: 'poison' },
  });
  expect(body.entries[0]?.error).toContain('field source is not accepted here');
  receiver.refuse = () => false;
  const replayed = await run(process.execPath, [
    cli,
    'deadletter',
    'replay',
    '--kind',
    'delivery',
    '--admin-url',
    ing.adminUrl,
    '--destination',
    'tickets',
  ]);
  expect(replayed.stdout).toContain('handed back to tickets');
  expect(replayed.stdout).toContain('1 replayed, 0 failed');
  await waitFor(
    'replayed event accepted',
    async () =>
      [...receiver.requests].some(
        (r) => r.events[0]?.source === 'poison' && r.answer !== 'reset' && r.answer.status === 200,
      ),
    15_000,
    50,
  );
  expect(
    (await run(process.execPath, [cli, 'deadletter', 'list', '--kind', 'delivery', '--admin-url', ing.adminUrl]))
      .stdout,
  ).toContain('0 dead letter(s) listed');
  // The replay went to the destination that refused it, not again to the other one, which took it the first time.
  await new Promise((r) => setTimeout(r, 500));
  expect(audit.accepted.size).toBe(31);
  const poisonToAudit = audit.requests.flatMap((r) => r.events).filter((e) => e.source === 'poison');
  expect(poisonToAudit).toHaveLength(1);
}, 30_000);

it('answers 400 naming the field for a bad dead-letter query', async () => {
  const res = await fetch(`${ing.adminUrl}/deadletter?kind=delivery&limit=0`);
  expect(res.status).toBe(400);
  expect(await res.json()).toMatchObject({ field: 'limit' });
});
