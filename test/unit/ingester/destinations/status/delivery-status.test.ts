import { Gauge, Registry } from 'prom-client';
import type { LastRefusal } from '../../../../../ingester/destinations/address-refusals.js';
import { DeliveryRecord, DeliveryRecords } from '../../../../../ingester/destinations/status/delivery-record.js';
import { deliveryReport } from '../../../../../ingester/destinations/status/delivery-report.js';

const MINUTE = 60_000;
const T = 29_000_000 * MINUTE;

describe('DeliveryRecord', () => {
  it('counts per minute over the last hour, and keeps the last answer of each kind', () => {
    let now = T;
    const r = new DeliveryRecord(() => now);
    expect(r.active).toBe(false);
    r.delivered(3, { kind: 'accepted', status: 202 });
    now += MINUTE;
    r.failed(2, { kind: 'retry', reason: 'http_503', status: 503, error: 'HTTP 503: maintenance' });
    r.failed(1, { kind: 'reject', reason: 'http_400', status: 400, error: 'HTTP 400: bad' });
    r.deadLettered(1);
    const s = r.snapshot(now);
    expect(s).toMatchObject({ deliveredLastHour: 3, failedLastHour: 3, deadLetteredLastHour: 1 });
    expect(s.minutes).toEqual({ start: new Date(T).toISOString(), delivered: [3, 0], failed: [0, 3] });
    expect(s.lastSuccess).toEqual({ time: new Date(T).toISOString(), statusCode: 202 });
    expect(s.lastFailure).toEqual({ time: new Date(now).toISOString(), statusCode: 400, excerpt: 'HTTP 400: bad' });
    // An hour on, the counts are gone; the answers stay.
    const later = r.snapshot(now + 60 * MINUTE);
    expect(later).toMatchObject({ deliveredLastHour: 0, failedLastHour: 0, deadLetteredLastHour: 0 });
    expect(later.minutes).toBeUndefined();
    expect(later.lastSuccess?.statusCode).toBe(202);
  });

  it("keeps the receiver's text inert and at most 256 characters; no status code without an answer", () => {
    const r = new DeliveryRecord(() => T);
    r.failed(1, {
      kind: 'retry',
      reason: 'http_500',
      status: 500,
      error: `HTTP 500: \u001b[31mred\u001b[0m ${'z'.repeat(900)}`,
    });
    const excerpt = r.snapshot().lastFailure?.excerpt ?? '';
    expect(excerpt.startsWith('HTTP 500: \\x1b[31mred\\x1b[0m')).toBe(true);
    expect(excerpt.length).toBeLessThanOrEqual(256);
    r.failed(1, { kind: 'retry', reason: 'timeout', error: 'no answer within 2000 ms' });
    expect(r.snapshot().lastFailure).toEqual({ time: new Date(T).toISOString(), excerpt: 'no answer within 2000 ms' });
  });
});

describe('the delivery report', () => {
  it('holds every destination with what waits, its circuit, its pause and the refused address', async () => {
    const registry = new Registry();
    const lag = new Gauge({ name: 'lag', help: 'h', labelNames: ['destination'], registers: [registry] });
    const oldest = new Gauge({ name: 'oldest', help: 'h', labelNames: ['destination'], registers: [registry] });
    lag.set({ destination: 'team-a/tickets' }, 4);
    oldest.set({ destination: 'team-a/tickets' }, 12.6);
    const records = new DeliveryRecords(() => T);
    records.of('team-a/tickets').delivered(2, { kind: 'accepted', status: 200 });
    const refusal: LastRefusal = {
      atMs: T,
      host: 'x\u001b.example',
      address: '127.0.0.1',
      by: 'loopback',
      range: '127.0.0.0/8',
      message: 'the address guard refused 127.0.0.1',
    };
    const report = await deliveryReport(
      {
        names: () => ['alertmanager', 'team-a/tickets', 'gone'],
        describe: (n) =>
          n === 'gone'
            ? undefined
            : {
                kind: n === 'alertmanager' ? 'alertmanager' : 'http',
                circuit: n === 'alertmanager' ? 'open' : 'closed',
              },
        pauseOf: (n) =>
          n === 'alertmanager'
            ? { paused: true, reason: 'auto', by: 'auto', since: new Date(T).toISOString() }
            : { paused: false },
        lastAddressRefusal: (n) => (n === 'team-a/tickets' ? refusal : undefined),
        records,
        lag,
        oldestPending: oldest,
        backlogShared: true,
      },
      T,
    );
    expect(report.destinations.map((d) => d.name)).toEqual(['alertmanager', 'team-a/tickets']);
    const [am, tickets] = report.destinations;
    expect(am).toEqual({
      name: 'alertmanager',
      kind: 'alertmanager',
      deliveredLastHour: 0,
      failedLastHour: 0,
      deadLetteredLastHour: 0,
      backlogShared: true,
      circuit: 'open',
      paused: true,
      pausedBy: 'auto',
      pausedSince: new Date(T).toISOString(),
    });
    expect(tickets).toMatchObject({
      namespace: 'team-a',
      deliveredLastHour: 2,
      backlog: 4,
      oldestPendingSeconds: 13,
      paused: false,
      addressRefused: { host: 'x\\x1b.example', address: '127.0.0.1', time: new Date(T).toISOString() },
    });
  });
});
