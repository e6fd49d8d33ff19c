/**
 * `GET /status/delivery` through the built ingester, standalone (the outbox) and with the bus: a
 * receiver that fails then recovers shows in the report as the operator reads it for a
 * Destination's status: the last failure with the receiver's status code and a bounded, inert
 * excerpt of its answer, the circuit open then closed, what waits (and whether the replicas share
 * it), then the last success, the hour's and each minute's counts; a destination whose address
 * the guard refuses shows the refusal and its dead letters. Every address used is loopback.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeliveryReport, ReportedDelivery } from '../../../api/delivery-status.js';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, startNats, untilDeadLettersOpen, type RunningNats } from '../support/nats-server.js';

const OPEN_FOR_MS = 1500;
const dirs: string[] = [];
let nats: RunningNats | undefined;

afterAll(async () => {
  await nats?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Mode = 'outbox' | 'bus';

const reportOf = async (ing: RunningIngester): Promise<DeliveryReport> => {
  const res = await fetch(`${ing.adminUrl}/status/delivery`);
  expect(res.status).toBe(200);
  return (await res.json()) as DeliveryReport;
};
const destinationOf = async (ing: RunningIngester, name: string): Promise<ReportedDelivery | undefined> =>
  (await reportOf(ing)).destinations.find((d) => d.name === name);
const sum = (a: readonly number[] | undefined): number => (a ?? []).reduce((x, y) => x + y, 0);

describe.each<Mode>(['outbox', 'bus'])('the delivery report, delivered from the %s', (mode) => {
  let receiver: EventReceiver;
  let ing: RunningIngester;

  beforeAll(async () => {
    receiver = await startEventReceiver();
    const dir = mkdtempSync(join(tmpdir(), 'intake-delivery-status-'));
    dirs.push(dir);
    if (mode === 'bus') nats ??= await startNats();
    ing = await startIngester((c) => {
      if (mode === 'bus') handoffConfig(nats as RunningNats)(c);
      else c.spool = { path: dir };
      c.addressGuard = { platformDestinations: true, allowedCIDRs: ['127.0.0.1/32'], deniedCIDRs: ['127.0.0.2/32'] };
      c.destinations = [
        {
          name: 'tickets',
          default: true,
          http: { url: receiver.url, timeout: '2s' },
          delivery: { maxAttempts: 100, backoffMin: '50ms', backoffMax: '100ms' },
          circuitBreaker: { consecutiveFailures: 3, openFor: `${OPEN_FOR_MS}ms` },
        },
        // Refused by the guard (denied), never connected to.
        { name: 'refused', default: true, http: { url: 'http://127.0.0.2:9/hook' } },
      ];
    });
    await untilDeadLettersOpen(ing.adminUrl);
  }, 60_000);

  afterAll(async () => {
    await ing?.stop();
    await receiver?.close();
  });

  it('shows the failure, the open circuit and the backlog, then the success, the closed circuit and the counts', async () => {
    // An answer longer than the excerpt, with an escape sequence that must not reach a terminal.
    receiver.failWith = { status: 503, body: `maintenance \u001b[2J window ${'x'.repeat(600)}` };
    const events = Array.from({ length: 10 }, (_, i) => ({ source: `${mode}-${i}`, severity: 'critical' }));
    const res = await post(`${ing.url}/events/webhook_demo`, events, {
      authorization: basic(DEMO.user, DEMO.password),
    });
    expect(res.status).toBe(200);

    const failing = await waitFor(
      'the open circuit and the backlog reported',
      async () => {
        const d = await destinationOf(ing, 'tickets');
        return d?.circuit === 'open' && (d.backlog ?? 0) > 0 ? d : undefined;
      },
      20_000,
      100,
    );
    expect(failing.kind).toBe('http');
    expect(failing.namespace).toBeUndefined();
    expect(failing.backlogShared).toBe(mode === 'bus');
    expect(failing.lastSuccess).toBeUndefined();
    expect(failing.lastFailure?.statusCode).toBe(503);
    const excerpt = failing.lastFailure?.excerpt ?? '';
    expect(excerpt.startsWith('HTTP 503: maintenance \\x1b[2J window')).toBe(true);
    expect(excerpt.length).toBeLessThanOrEqual(256);
    expect(excerpt).not.toContain('\u001b');
    expect(failing.failedLastHour).toBeGreaterThanOrEqual(3);
    expect(failing.deliveredLastHour).toBe(0);
    expect(failing.deadLetteredLastHour).toBe(0);
    expect(failing.oldestPendingSeconds).toBeGreaterThanOrEqual(0);
    expect(failing.paused).toBe(false);

    receiver.failWith = undefined;
    const recovered = await waitFor(
      'every event delivered and the circuit closed',
      async () => {
        const d = await destinationOf(ing, 'tickets');
        return receiver.accepted.size === 10 && d?.circuit === 'closed' && d.deliveredLastHour === 10 ? d : undefined;
      },
      30_000,
      100,
    );
    expect(recovered.lastSuccess?.statusCode).toBe(200);
    expect(Date.parse(recovered.lastSuccess?.time ?? '')).toBeGreaterThan(Date.parse(failing.lastFailure?.time ?? ''));
    expect(recovered.lastFailure?.statusCode).toBe(503);
    expect(sum(recovered.minutes?.delivered)).toBe(10);
    expect(sum(recovered.minutes?.failed)).toBe(recovered.failedLastHour);
    expect(Date.parse(recovered.minutes?.start ?? '') % 60_000).toBe(0);
    // What waits is measured every 5 s: it drains.
    await waitFor('the backlog drained', async () => (await destinationOf(ing, 'tickets'))?.backlog === 0, 20_000, 200);
  }, 90_000);

  it('shows the address the guard refused and the dead letters it made', async () => {
    const refused = await waitFor(
      'the refusal reported',
      async () => {
        const d = await destinationOf(ing, 'refused');
        return d?.addressRefused && d.deadLetteredLastHour >= 10 ? d : undefined;
      },
      20_000,
      100,
    );
    expect(refused.addressRefused).toMatchObject({ host: '127.0.0.2', address: '127.0.0.2' });
    expect(refused.addressRefused?.message).toContain('127.0.0.2');
    expect(refused.circuit).toBe('closed');
    expect(refused.deliveredLastHour).toBe(0);
  });
});
