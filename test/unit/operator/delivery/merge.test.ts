import type { ReportedDelivery } from '../../../../api/delivery-status.js';
import { sumDeliveryMinutes, toDeliveryMinutes } from '../../../../api/delivery-status.js';
import type { DestinationDelivery } from '../../../../api/v1alpha1/types.js';
import {
  circuitCondition,
  deliveryFingerprint,
  mergeDelivery,
  mergedCircuit,
  roundedAge,
  runtimePauseCondition,
} from '../../../../operator/delivery/merge.js';

const T0 = '2026-11-27T10:00:00.000Z';
const T1 = '2026-11-27T10:01:00.000Z';
const T2 = '2026-11-27T10:02:00.000Z';

const replica = (over: Partial<ReportedDelivery> = {}): ReportedDelivery => ({
  name: 'team-a/tickets',
  namespace: 'team-a',
  kind: 'http',
  deliveredLastHour: 0,
  failedLastHour: 0,
  deadLetteredLastHour: 0,
  backlogShared: false,
  circuit: 'closed',
  paused: false,
  ...over,
});

describe('mergeDelivery', () => {
  it('sums the counts and the minutes, minute by minute', () => {
    const m = mergeDelivery([
      replica({
        deliveredLastHour: 5,
        failedLastHour: 2,
        deadLetteredLastHour: 1,
        minutes: { start: T0, delivered: [3, 2], failed: [2, 0] },
      }),
      replica({ deliveredLastHour: 4, minutes: { start: T1, delivered: [4], failed: [0] } }),
    ]);
    expect(m.delivery).toMatchObject({ deliveredLastHour: 9, failedLastHour: 2, deadLetteredLastHour: 1 });
    expect(m.delivery.minutes).toEqual({ start: T0, delivered: [3, 6], failed: [2, 0] });
    expect(m.replicas).toBe(2);
  });

  it('keeps the latest success and failure of every replica and of the status, which never go back', () => {
    const previous: DestinationDelivery = {
      lastSuccess: { time: T2, statusCode: 202 },
      lastFailure: { time: T0, statusCode: 500, excerpt: 'old' },
    };
    const m = mergeDelivery(
      [
        replica({
          lastSuccess: { time: T1, statusCode: 200 },
          lastFailure: { time: T1, statusCode: 503, excerpt: 'a' },
        }),
        replica({ lastFailure: { time: T0, statusCode: 502, excerpt: 'b' } }),
      ],
      previous,
    );
    expect(m.delivery.lastSuccess).toEqual({ time: T2, statusCode: 202 });
    expect(m.delivery.lastFailure).toEqual({ time: T1, statusCode: 503, excerpt: 'a' });
    // Every replica restarted: the counts start again, the answers stay.
    const restarted = mergeDelivery([replica()], previous);
    expect(restarted.delivery.lastSuccess).toEqual(previous.lastSuccess);
    expect(restarted.delivery.deliveredLastHour).toBe(0);
  });

  it('takes the largest backlog of the bus (the replicas measure the same consumers) and sums the outboxes', () => {
    const bus = mergeDelivery([
      replica({ backlog: 40, backlogShared: true, oldestPendingSeconds: 75 }),
      replica({ backlog: 38, backlogShared: true, oldestPendingSeconds: 80 }),
    ]);
    expect(bus.delivery.backlog).toBe(40);
    expect(bus.delivery.oldestPendingAge).toBe('1m20s');
    const outbox = mergeDelivery([
      replica({ backlog: 3, oldestPendingSeconds: 12 }),
      replica({ backlog: 4, oldestPendingSeconds: 9 }),
    ]);
    expect(outbox.delivery.backlog).toBe(7);
    expect(outbox.delivery.oldestPendingAge).toBe('10s');
    // Nothing waits: 0s; not measured yet: neither.
    expect(mergeDelivery([replica({ backlog: 0, oldestPendingSeconds: 30 })]).delivery).toMatchObject({
      backlog: 0,
      oldestPendingAge: '0s',
    });
    const unmeasured = mergeDelivery([replica()]).delivery;
    expect('backlog' in unmeasured || 'oldestPendingAge' in unmeasured).toBe(false);
  });

  it('says the circuit is open when any replica has it open, half-open when one is, else closed', () => {
    const open = mergeDelivery([replica({ circuit: 'open' }), replica({ circuit: 'half-open' }), replica()]);
    expect(mergedCircuit(open)).toBe('open');
    expect(circuitCondition(open)).toMatchObject({ status: 'True', reason: 'Open' });
    expect(circuitCondition(open).message).toContain('open on 1 of 3 ingester replica(s)');
    const half = mergeDelivery([replica({ circuit: 'half-open' }), replica()]);
    expect(circuitCondition(half)).toMatchObject({ status: 'True', reason: 'HalfOpen' });
    expect(circuitCondition(mergeDelivery([replica(), replica()]))).toMatchObject({
      status: 'False',
      reason: 'Closed',
    });
  });

  it('names an auto-pause before a pause through the admin API, and leaves suspend to the spec', () => {
    const auto = mergeDelivery([
      replica({ paused: true, pausedBy: 'admin', pausedSince: T0 }),
      replica({ paused: true, pausedBy: 'auto', pausedSince: T1 }),
    ]);
    expect(runtimePauseCondition(auto)).toMatchObject({ status: 'True', reason: 'AutoPaused' });
    expect(runtimePauseCondition(auto)?.message).toContain(T1);
    const admin = mergeDelivery([replica({ paused: true, pausedBy: 'admin' }), replica()]);
    expect(runtimePauseCondition(admin)).toMatchObject({ status: 'True', reason: 'PausedByAdmin' });
    expect(runtimePauseCondition(mergeDelivery([replica({ paused: true, pausedBy: 'settings' })]))).toBeUndefined();
    expect(runtimePauseCondition(mergeDelivery([replica()]))).toBeUndefined();
  });

  it('keeps the latest refused address', () => {
    const refusal = (time: string, address: string) => ({
      time,
      host: 'svc.example',
      address,
      message: `refused ${address}`,
    });
    const m = mergeDelivery(
      [replica({ addressRefused: refusal(T1, '10.0.0.1') }), replica({ addressRefused: refusal(T2, '10.0.0.2') })],
      { addressRefused: refusal(T0, '10.0.0.9') },
    );
    expect(m.delivery.addressRefused?.address).toBe('10.0.0.2');
  });

  it('makes every text inert and bounded, and counts what is not a count as 0, whatever a replica sent', () => {
    const m = mergeDelivery([
      replica({
        deliveredLastHour: -3,
        failedLastHour: Number.NaN,
        deadLetteredLastHour: 'many' as unknown as number,
        backlog: 'x' as unknown as number,
        lastFailure: { time: T0, statusCode: 99_999, excerpt: `\u001b]52;c;AAAA\u0007${'y'.repeat(1000)}` },
        lastSuccess: { time: 'not a time', statusCode: 200 },
        minutes: { start: 'yesterday', delivered: [1], failed: [1] },
        addressRefused: { time: T0, host: 'h\u202eost', address: 'a', message: 'm'.repeat(1000) },
      }),
    ]);
    expect(m.delivery).toMatchObject({ deliveredLastHour: 0, failedLastHour: 0, deadLetteredLastHour: 0 });
    expect(m.delivery.backlog).toBeUndefined();
    expect(m.delivery.lastSuccess).toBeUndefined();
    expect(m.delivery.minutes).toBeUndefined();
    const failure = m.delivery.lastFailure;
    expect(failure?.statusCode).toBeUndefined();
    expect(failure?.excerpt?.startsWith('\\x1b]52;c;AAAA\\x07')).toBe(true);
    expect(failure?.excerpt?.length).toBeLessThanOrEqual(256);
    expect(m.delivery.addressRefused?.host).toBe('h\\u202eost');
    expect(m.delivery.addressRefused?.message.length).toBeLessThanOrEqual(256);
  });

  it('is the same whatever the order of the replicas, and an unchanged merge has the status fingerprint', () => {
    const a = replica({ deliveredLastHour: 1, lastSuccess: { time: T1, statusCode: 200 }, backlog: 2 });
    const b = replica({ failedLastHour: 1, lastFailure: { time: T1, statusCode: 500 }, backlog: 1 });
    const ab = mergeDelivery([a, b]);
    const ba = mergeDelivery([b, a]);
    expect(deliveryFingerprint(ab.delivery)).toBe(deliveryFingerprint(ba.delivery));
    const written: DestinationDelivery = { ...ab.delivery, updatedTime: T2 };
    expect(deliveryFingerprint(mergeDelivery([a, b], written).delivery)).toBe(deliveryFingerprint(written));
  });
});

describe('the minutes of a delivery', () => {
  it('are cut to the minutes that had anything, and absent when none had', () => {
    expect(toDeliveryMinutes(29_000_000, [0, 1, 0, 2, 0], [0, 0, 1, 0, 0])).toEqual({
      start: new Date(29_000_001 * 60_000).toISOString(),
      delivered: [1, 0, 2],
      failed: [0, 1, 0],
    });
    expect(toDeliveryMinutes(29_000_000, [0, 0], [0, 0])).toBeUndefined();
  });

  it('are summed over the hour that ends with the latest minute reported', () => {
    const late = new Date(29_000_100 * 60_000).toISOString();
    const early = new Date(29_000_000 * 60_000).toISOString();
    const sum = sumDeliveryMinutes([
      { start: early, delivered: [5], failed: [0] },
      { start: late, delivered: [1], failed: [2] },
    ]);
    // The early minute is more than an hour before the late one: out of the hour.
    expect(sum).toEqual({ start: late, delivered: [1], failed: [2] });
  });
});

describe('roundedAge', () => {
  it('is coarse enough not to change every round', () => {
    expect(roundedAge(0)).toBe('0s');
    expect(roundedAge(59)).toBe('50s');
    expect(roundedAge(601)).toBe('10m');
    expect(roundedAge(3599)).toBe('59m');
    expect(roundedAge(3 * 3600 + 1234)).toBe('3h20m');
  });
});
