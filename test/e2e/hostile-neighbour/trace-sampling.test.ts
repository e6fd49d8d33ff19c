/**
 * Hostile-neighbour matrix, row "sampled traces" (docs/design.md §4b, docs/tracing.md): the traces
 * a replica records are a shared resource (CPU, the export queue, the collector). Tenant A asks for
 * a trace on every request (a sampled W3C traceparent) at ten times B's rate; tenant B sends a
 * sampled traceparent at a steady rate beside it. B is unharmed (no refusal, p99 bounded, the
 * replica ready) and still gets its namespace's share of recorded traces, which A's flood cannot
 * take: A gets its own share, no more. With the replica's bound alone, A's requests would take
 * most of it.
 */
import { randomBytes } from 'node:crypto';
import { jest } from '@jest/globals';
import { performance } from 'node:perf_hooks';
import { waitFor } from '../../support/waiting.js';
import { startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { startCollector, tracingEnv, type RunningCollector } from '../support/otel-collector.js';
import { expectUnharmed, steadyTenant } from './support.js';

jest.setTimeout(90_000);

const PER_NAMESPACE = 4;
const PER_REPLICA = 10;
const ATTACK_MS = 5_000;
const A_PER_SECOND = 100;
const B_PER_SECOND = 10;

let collector: RunningCollector;
let ing: RunningIngester;

beforeAll(async () => {
  collector = await startCollector();
  ing = await startIngester(
    (c) => {
      (c.routes as unknown[]).push(tenantRoute('hn-traces-a', 'team-a'), tenantRoute('hn-traces-b', 'team-b'));
    },
    {
      env: tracingEnv(collector, 'intake-hn-traces', {
        INTAKE_TRACES_PER_SECOND: String(PER_REPLICA),
        INTAKE_TRACES_PER_SECOND_PER_NAMESPACE: String(PER_NAMESPACE),
      }),
    },
  );
}, 60_000);

afterAll(async () => {
  await ing?.stop('SIGKILL');
  await collector?.stop();
});

const traceparent = (): { traceId: string; header: string } => {
  const traceId = randomBytes(16).toString('hex');
  return { traceId, header: `00-${traceId}-${randomBytes(8).toString('hex')}-01` };
};
const event = JSON.stringify({ source: 'host', severity: 'warning', description: 'traced' });

it("keeps B's share of recorded traces while A asks for a trace on every request", async () => {
  const aTraces: string[] = [];
  const bTraces: string[] = [];
  let flooding = true;
  const started = performance.now();
  const flood = (async () => {
    const pending: Array<Promise<unknown>> = [];
    for (let i = 0; flooding; i++) {
      const t = traceparent();
      aTraces.push(t.traceId);
      pending.push(
        fetch(`${ing.url}/events/webhook_hn-traces-a`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', traceparent: t.header, ...tenantAuth('hn-traces-a') },
          body: event,
        }).then(
          (r) => r.text(),
          () => undefined,
        ),
      );
      await new Promise((r) => setTimeout(r, 1000 / A_PER_SECOND));
    }
    await Promise.all(pending);
  })();
  const b = await steadyTenant({
    url: `${ing.url}/events/webhook_hn-traces-b`,
    headers: { 'content-type': 'application/json', ...tenantAuth('hn-traces-b') },
    body: () => {
      const t = traceparent();
      bTraces.push(t.traceId);
      return { body: event, headers: { traceparent: t.header } };
    },
    perSecond: B_PER_SECOND,
    durationMs: ATTACK_MS,
    adminUrl: ing.adminUrl,
  });
  flooding = false;
  await flood;
  const seconds = (performance.now() - started) / 1000;
  expectUnharmed(b, { p99BoundMs: 1_000 });

  const recorded = (ids: string[]): number => {
    const wanted = new Set(ids);
    return collector.spans().filter((s) => s.name === 'intake.receive' && wanted.has(s.traceId)).length;
  };
  // Every sampled span exported (the batch delay is 100 ms): wait until B's count stops moving.
  let last = -1;
  await waitFor(
    'the exports to settle',
    async () => {
      const now = recorded(bTraces) + recorded(aTraces);
      const settled = now === last;
      last = now;
      return settled;
    },
    20_000,
    300,
  );
  const ofB = recorded(bTraces);
  const ofA = recorded(aTraces);
  const share = PER_NAMESPACE * seconds + PER_NAMESPACE;
  const summary = `A sent ${aTraces.length}, ${ofA} recorded; B sent ${bTraces.length}, ${ofB} recorded; a namespace's share over ${seconds.toFixed(1)} s: ${share.toFixed(0)}`;
  // B got most of its share (it asks for more than its share: 10/s against 4/s) ...
  expect({ summary, ok: ofB >= 0.7 * PER_NAMESPACE * (ATTACK_MS / 1000) }).toEqual({ summary, ok: true });
  // ... and A no more than its own.
  expect({ summary, ok: ofA <= share + 1 }).toEqual({ summary, ok: true });
});
