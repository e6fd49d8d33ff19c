/**
 * OpenTelemetry traces through the real path: a sender's traceparent on the webhook, the receiving
 * ingester's receive, map and hand-off spans, the context in the JetStream message's headers
 * (a real nats-server) to the other ingester that delivers, its delivery attempt span, and that
 * span's traceparent on the delivery request; every span read back from a real OpenTelemetry
 * Collector (OTLP/HTTP receiver, file exporter). Also: the standalone outbox carries the context
 * the same way, and a sender asking for sampling on every request gets at most its namespace's
 * share of traces (the rest still carry its trace id, unsampled).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../support/waiting.js';
import { startEventReceiver, type EventReceiver, type ReceivedRequest } from './support/event-receiver.js';
import { API_KEY, basic, DEMO, post, startIngester, type RunningIngester } from './support/ingester.js';
import { tracingEnv, type ExportedSpan, type RunningCollector } from './support/otel-collector.js';
import { onlySpan, startTracedHandOff, type TracedHandOff } from './support/traced-handoff.js';

let collector: RunningCollector;
let receiver: EventReceiver;
let receiving: RunningIngester;
const others: RunningIngester[] = [];
const dirs: string[] = [];

/** Per namespace and second, the traces a sender's sampled requests may start on the receiving replica. */
const PER_NAMESPACE = 3;

let setup: TracedHandOff | undefined;

beforeAll(async () => {
  // The receiving replica hands off to the bus and delivers nothing; the delivering one only delivers.
  setup = await startTracedHandOff({
    receivingEnv: { INTAKE_TRACES_PER_SECOND_PER_NAMESPACE: String(PER_NAMESPACE) },
  });
  ({ collector, receiver, receiving } = setup);
}, 90_000);

afterAll(async () => {
  for (const i of others) await i.stop('SIGKILL');
  await setup?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

const send = async (ing: RunningIngester, description: string, headers: Record<string, string> = {}): Promise<void> => {
  const res = await post(
    `${ing.url}/events/webhook_demo`,
    { source: 'web-01', severity: 'critical', description },
    { authorization: basic(DEMO.user, DEMO.password), ...headers },
  );
  expect(res.status).toBe(200);
};

const deliveryOf = (description: string): Promise<ReceivedRequest> =>
  waitFor(
    `the delivery of "${description}"`,
    async () => receiver.requests.find((r) => r.events.some((e) => e.description === description)),
    20_000,
    50,
  );

const spansOf = (traceId: string, names: string[]): Promise<ExportedSpan[]> =>
  waitFor(
    `spans ${names.join(', ')} of trace ${traceId} in the collector`,
    async () => {
      const spans = collector.spans().filter((s) => s.traceId === traceId);
      return names.every((n) => spans.some((s) => s.name === n)) && spans;
    },
    20_000,
    100,
  );

const one = onlySpan;

it("follows the sender's trace from its traceparent through the bus to the delivery request's traceparent", async () => {
  const traceId = hex(16);
  const senderSpan = hex(8);
  await send(receiving, 'traced through the bus', {
    traceparent: `00-${traceId}-${senderSpan}-01`,
    tracestate: 'sender=1',
  });
  const delivery = await deliveryOf('traced through the bus');
  const sent = String(delivery.headers.traceparent);
  expect(sent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  expect(delivery.headers.tracestate).toBe('sender=1');

  const spans = await spansOf(traceId, ['intake.receive', 'intake.map', 'intake.hand-off', 'intake.deliver']);
  const receive = one(spans, 'intake.receive');
  const map = one(spans, 'intake.map');
  const handOff = one(spans, 'intake.hand-off');
  const deliver = one(spans, 'intake.deliver');
  // The chain: sender -> receive -> (map, hand-off) -> deliver -> the delivery request.
  expect(receive.parentSpanId).toBe(senderSpan);
  expect(map.parentSpanId).toBe(receive.spanId);
  expect(handOff.parentSpanId).toBe(receive.spanId);
  expect(deliver.parentSpanId).toBe(handOff.spanId);
  expect(sent).toBe(`00-${traceId}-${deliver.spanId}-01`);
  // Received by one replica, delivered by the other: the context crossed in the message's headers.
  expect([receive.service, handOff.service, deliver.service]).toEqual([
    'intake-receiving',
    'intake-receiving',
    'intake-delivering',
  ]);
  expect(receive.attributes).toMatchObject({
    'http.route': '/events/webhook_:name',
    'http.response.status_code': 200,
    'intake.integration': 'demo',
    'intake.accepted': 1,
  });
  expect(deliver.attributes).toMatchObject({
    'intake.destination': 'tickets',
    'intake.attempt': 1,
    'intake.outcome': 'accepted',
  });
}, 60_000);

it('starts a trace of its own for a sender that sends no traceparent', async () => {
  await new Promise((r) => setTimeout(r, 1000)); // the namespace's share of traces refilled
  await send(receiving, 'no traceparent');
  const delivery = await deliveryOf('no traceparent');
  const [, traceId, spanId, flags] = String(delivery.headers.traceparent).split('-');
  expect(flags).toBe('01');
  const spans = await spansOf(traceId as string, ['intake.receive', 'intake.deliver']);
  expect(one(spans, 'intake.receive').parentSpanId).toBe('');
  expect(one(spans, 'intake.deliver').spanId).toBe(spanId);
}, 60_000);

it("records at most the namespace's share of a sender's sampled requests; the rest keep its trace id, unsampled", async () => {
  await new Promise((r) => setTimeout(r, 1000));
  const traceIds: string[] = [];
  const started = Date.now();
  for (let i = 0; i < 30; i++) {
    const traceId = hex(16);
    traceIds.push(traceId);
    await send(receiving, `flood ${i}`, { traceparent: `00-${traceId}-${hex(8)}-01` });
  }
  const seconds = (Date.now() - started) / 1000;
  const deliveries = await Promise.all(traceIds.map((_, i) => deliveryOf(`flood ${i}`)));
  // Every delivery request carries the sender's trace id, sampled or not.
  deliveries.forEach((d, i) => expect(String(d.headers.traceparent)).toContain(`00-${traceIds[i]}-`));
  const sampled = deliveries.filter((d) => String(d.headers.traceparent).endsWith('-01')).length;
  // A full bucket, then its rate for the time the 30 requests took (one more for rounding).
  expect(sampled).toBeGreaterThanOrEqual(1);
  expect(sampled).toBeLessThanOrEqual(PER_NAMESPACE + Math.ceil(PER_NAMESPACE * seconds) + 1);
  expect(sampled).toBeLessThan(30);
  // Unsampled requests export nothing.
  await new Promise((r) => setTimeout(r, 500));
  const exported = new Set(collector.spans().map((s) => s.traceId));
  const unsampled = traceIds.filter((_, i) => String(deliveries[i]?.headers.traceparent).endsWith('-00'));
  expect(unsampled.filter((t) => exported.has(t))).toEqual([]);
}, 60_000);

it('carries the context in the standalone outbox to the delivery request', async () => {
  const spoolDir = mkdtempSync(join(tmpdir(), 'intake-tracing-outbox-'));
  dirs.push(spoolDir);
  const standalone = await startIngester(
    (c) => {
      c.spool = { path: spoolDir };
      c.destinations = [{ name: 'tickets', default: true, http: { url: receiver.url, timeout: '2s' } }];
    },
    { env: tracingEnv(collector, 'intake-standalone') },
  );
  others.push(standalone);
  const traceId = hex(16);
  const senderSpan = hex(8);
  await send(standalone, 'traced through the outbox', { traceparent: `00-${traceId}-${senderSpan}-01` });
  const delivery = await deliveryOf('traced through the outbox');
  const spans = await spansOf(traceId, ['intake.receive', 'intake.hand-off', 'intake.deliver']);
  const handOff = one(spans, 'intake.hand-off');
  const deliver = one(spans, 'intake.deliver');
  expect(one(spans, 'intake.receive').parentSpanId).toBe(senderSpan);
  expect(deliver.parentSpanId).toBe(handOff.spanId);
  expect(delivery.headers.traceparent).toBe(`00-${traceId}-${deliver.spanId}-01`);
}, 60_000);

it('makes a span for each delivery attempt, each sending its own traceparent', async () => {
  await new Promise((r) => setTimeout(r, 1000)); // the namespace's share of traces refilled
  const traceId = hex(16);
  receiver.script.push({ status: 503 });
  await send(receiving, 'retried', { traceparent: `00-${traceId}-${hex(8)}-01` });
  await waitFor(
    'the second attempt',
    async () => receiver.requests.filter((r) => r.events.some((e) => e.description === 'retried')).length >= 2,
    20_000,
    50,
  );
  const attempts = receiver.requests.filter((r) => r.events.some((e) => e.description === 'retried'));
  const spans = await waitFor(
    'two delivery spans',
    async () => {
      const all = collector.spans().filter((s) => s.traceId === traceId);
      return all.filter((s) => s.name === 'intake.deliver').length >= 2 && all;
    },
    20_000,
    100,
  );
  const handOff = one(spans, 'intake.hand-off');
  const delivers = spans.filter((s) => s.name === 'intake.deliver');
  expect(delivers.map((d) => d.parentSpanId)).toEqual([handOff.spanId, handOff.spanId]);
  const byAttempt = new Map(delivers.map((d) => [d.attributes['intake.attempt'], d]));
  expect(byAttempt.get(1)?.attributes['intake.outcome']).toBe('retry');
  expect(byAttempt.get(1)?.status.code).toBe(2); // error
  expect(byAttempt.get(2)?.attributes['intake.outcome']).toBe('accepted');
  expect(attempts.map((a) => a.headers.traceparent)).toEqual([
    `00-${traceId}-${byAttempt.get(1)?.spanId}-01`,
    `00-${traceId}-${byAttempt.get(2)?.spanId}-01`,
  ]);
}, 60_000);

it("continues a sender's trace on the metrics route", async () => {
  await new Promise((r) => setTimeout(r, 1000));
  const traceId = hex(16);
  const senderSpan = hex(8);
  const res = await post(
    `${receiving.url}/v1/integrations/metrics`,
    [{ metric: 'traced.temp', data: 21.5, source: 'host-1' }],
    {
      apikey: API_KEY,
      traceparent: `00-${traceId}-${senderSpan}-01`,
    },
  );
  expect(res.status).toBe(200);
  const receive = one(await spansOf(traceId, ['intake.receive']), 'intake.receive');
  expect(receive.parentSpanId).toBe(senderSpan);
  expect(receive.attributes).toMatchObject({ 'http.route': '/v1/integrations/metrics', 'intake.accepted': 1 });
}, 60_000);

it('sends traceparent to Alertmanager with the alerts (an Alertmanager destination, standalone)', async () => {
  const spoolDir = mkdtempSync(join(tmpdir(), 'intake-tracing-am-'));
  dirs.push(spoolDir);
  const alertmanager = await startEventReceiver();
  try {
    const standalone = await startIngester(
      (c) => {
        c.spool = { path: spoolDir };
        c.destinations = [{ name: 'alertmanager', default: true, alertmanager: { urls: [alertmanager.url] } }];
      },
      { env: tracingEnv(collector, 'intake-alertmanager') },
    );
    others.push(standalone);
    const traceId = hex(16);
    await send(standalone, 'an alert', { traceparent: `00-${traceId}-${hex(8)}-01` });
    const posted = await waitFor('the alert posted', async () => alertmanager.requests[0], 20_000, 50);
    const deliver = one(await spansOf(traceId, ['intake.deliver']), 'intake.deliver');
    expect(deliver.attributes['intake.destination.kind']).toBe('alertmanager');
    expect(posted.headers.traceparent).toBe(`00-${traceId}-${deliver.spanId}-01`);
  } finally {
    await alertmanager.close();
  }
}, 60_000);
