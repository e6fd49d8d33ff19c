/**
 * A sender's trace survives the spool: while the bus is down (a real nats-server killed with
 * kill -9) the receiving ingester spools the event; once the server is back, the spool's replay
 * publishes it with the hand-off's `traceparent`/`tracestate` in the message's headers, so the
 * other ingester's delivery span is still the hand-off span's child and the delivery request's
 * traceparent still carries the sender's trace id. Spans are read back from a real OpenTelemetry
 * Collector.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../support/waiting.js';
import type { EventReceiver, ReceivedRequest } from './support/event-receiver.js';
import { basic, DEMO, post, type RunningIngester } from './support/ingester.js';
import { metricValue, type RunningNats } from './support/nats-server.js';
import type { RunningCollector } from './support/otel-collector.js';
import { onlySpan, startTracedHandOff, type TracedHandOff } from './support/traced-handoff.js';

let nats: RunningNats;
let collector: RunningCollector;
let receiver: EventReceiver;
let receiving: RunningIngester;
const spoolDir = mkdtempSync(join(tmpdir(), 'intake-tracing-spool-'));

let setup: TracedHandOff | undefined;

beforeAll(async () => {
  setup = await startTracedHandOff({ receivingSpoolDir: spoolDir });
  ({ nats, collector, receiver, receiving } = setup);
}, 90_000);

afterAll(async () => {
  await setup?.stop();
  rmSync(spoolDir, { recursive: true, force: true });
});

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

const one = onlySpan;

it("keeps the sender's trace for an event that waited in the spool while the bus was down", async () => {
  await nats.kill9();
  const traceId = hex(16);
  const senderSpan = hex(8);
  const res = await post(
    `${receiving.url}/events/webhook_demo`,
    { source: 'web-01', severity: 'critical', description: 'spooled and traced' },
    {
      authorization: basic(DEMO.user, DEMO.password),
      traceparent: `00-${traceId}-${senderSpan}-01`,
      tracestate: 'sender=spooled',
    },
  );
  expect(res.status).toBe(200);
  // It waited in the spool, not on the bus.
  expect(await metricValue(receiving.adminUrl, 'intake_spool_events')).toBe(1);
  await nats.restart();

  const delivery: ReceivedRequest = await waitFor(
    'the delivery of the spooled event',
    async () => receiver.requests.find((r) => r.events.some((e) => e.description === 'spooled and traced')),
    30_000,
    50,
  );
  const sent = String(delivery.headers.traceparent);
  expect(sent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  expect(delivery.headers.tracestate).toBe('sender=spooled');

  const spans = await waitFor(
    `the spans of trace ${traceId}`,
    async () => {
      const mine = collector.spans().filter((s) => s.traceId === traceId);
      return (
        ['intake.receive', 'intake.hand-off', 'intake.deliver'].every((n) => mine.some((s) => s.name === n)) && mine
      );
    },
    20_000,
    100,
  );
  const receive = one(spans, 'intake.receive');
  const handOff = one(spans, 'intake.hand-off');
  const deliver = one(spans, 'intake.deliver');
  expect(receive.parentSpanId).toBe(senderSpan);
  expect(handOff.parentSpanId).toBe(receive.spanId);
  expect(deliver.parentSpanId).toBe(handOff.spanId);
  expect(deliver.service).toBe('intake-delivering');
  expect(sent).toBe(`00-${traceId}-${deliver.spanId}-01`);
}, 90_000);
