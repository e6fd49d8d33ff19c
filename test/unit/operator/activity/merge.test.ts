/** Merging replicas' reports into status.activity, and the cap on status writes. */
import {
  UNAUTHENTICATED_SENDERS,
  type Activity,
  type RecentRefusal,
  type ReportedActivity,
  type UnauthenticatedSender,
} from '../../../../api/activity.js';
import { isInert } from '../../../../common/sender-text.js';
import { activityFingerprint, mergeActivity } from '../../../../operator/activity/merge.js';
import { replicasOf } from '../../../../operator/activity/replicas.js';
import { WriteQueue } from '../../../../operator/activity/write-queue.js';

const refusal = (time: string, remoteAddress: string): RecentRefusal => ({
  time,
  status: 400,
  code: 'INVALID_BODY',
  reason: 'invalid',
  message: '1 problem in the request; none of the 1 event(s) was accepted (source: is required)',
  remoteAddress,
  userAgent: 'curl/8',
});

const sender = (remoteAddress: string, count: number, firstTime: string, lastTime: string): UnauthenticatedSender => ({
  remoteAddress,
  reason: 'unauthorized',
  status: 401,
  code: 'UNAUTHORIZED',
  count,
  firstTime,
  lastTime,
});

const reported = (over: Partial<ReportedActivity>): ReportedActivity => ({
  name: 'a',
  namespace: 'team-a',
  eventsLastHour: 0,
  refusedLastHour: 0,
  refusalsLastHour: {},
  recentRefusals: [],
  ...over,
});

describe('mergeActivity', () => {
  it("sums the replicas' minutes minute by minute, and leaves them out when no replica has any", () => {
    const merged = mergeActivity([
      reported({ eventsLastHour: 3, minutes: { start: '2026-11-27T08:00:00Z', events: [1, 2], refused: [0, 1] } }),
      reported({ eventsLastHour: 4, minutes: { start: '2026-11-27T08:01:00Z', events: [4], refused: [0] } }),
    ]);
    expect(merged.minutes).toEqual({ start: '2026-11-27T08:00:00.000Z', events: [1, 6], refused: [0, 1] });
    // What the status held is not the replicas' count: after they all restarted, the minutes start again.
    expect(mergeActivity([reported({})], { ...merged, updatedTime: '2026-11-27T08:02:00Z' }).minutes).toBeUndefined();
  });

  it('sums the events routing rules dropped, and leaves the field out when none were', () => {
    const merged = mergeActivity([
      reported({ eventsLastHour: 5, droppedByRuleLastHour: 2 }),
      reported({ eventsLastHour: 3, droppedByRuleLastHour: 1 }),
      reported({ eventsLastHour: 1 }),
    ]);
    expect(merged).toMatchObject({ eventsLastHour: 9, droppedByRuleLastHour: 3 });
    expect(mergeActivity([reported({ eventsLastHour: 1 })])).not.toHaveProperty('droppedByRuleLastHour');
  });

  it('sums counts, takes the latest times, and keeps the newest ten refusals of all replicas', () => {
    const one = reported({
      eventsLastHour: 5,
      lastEventTime: '2026-11-24T10:00:05.000Z',
      refusalsLastHour: { unauthorized: 2 },
      refusedLastHour: 2,
      lastRefusalTime: '2026-11-24T10:00:03.000Z',
      recentRefusals: Array.from({ length: 8 }, (_, i) => refusal(`2026-11-24T10:00:0${i}.000Z`, 'r1')).reverse(),
    });
    const two = reported({
      eventsLastHour: 7,
      lastEventTime: '2026-11-24T10:00:01.000Z',
      refusalsLastHour: { unauthorized: 1, mapping: 4 },
      refusedLastHour: 5,
      lastRefusalTime: '2026-11-24T10:00:09.000Z',
      recentRefusals: [refusal('2026-11-24T10:00:09.000Z', 'r2'), refusal('2026-11-24T10:00:04.500Z', 'r2')],
    });
    const merged = mergeActivity([one, two]);
    expect(merged).toMatchObject({
      eventsLastHour: 12,
      refusedLastHour: 7,
      refusalsLastHour: { mapping: 4, unauthorized: 3 },
      lastEventTime: '2026-11-24T10:00:05.000Z',
      lastRefusalTime: '2026-11-24T10:00:09.000Z',
    });
    expect(merged.recentRefusals).toHaveLength(10);
    expect(merged.recentRefusals.map((r) => r.time.slice(17, 23))).toEqual([
      '09.000',
      '07.000',
      '06.000',
      '05.000',
      '04.500',
      '04.000',
      '03.000',
      '02.000',
      '01.000',
      '00.000',
    ]);
    // The order of replicas does not matter.
    expect(activityFingerprint(mergeActivity([two, one]))).toBe(activityFingerprint(merged));
  });

  it('keeps what the status holds when replicas restarted: times never go back, refusals stay, counts are the replicas', () => {
    const previous: Activity = {
      lastEventTime: '2026-11-24T10:00:00Z',
      lastRefusalTime: '2026-11-24T09:00:00Z',
      eventsLastHour: 50,
      refusedLastHour: 1,
      refusalsLastHour: { invalid: 1 },
      recentRefusals: [refusal('2026-11-24T09:00:00.000Z', 'old')],
      updatedTime: '2026-11-24T10:00:30Z',
    };
    const again = reported({ eventsLastHour: 1, lastEventTime: '2026-11-24T09:59:00.000Z' });
    const merged = mergeActivity([again], previous);
    expect(merged).toMatchObject({ eventsLastHour: 1, refusedLastHour: 0, refusalsLastHour: {} });
    expect(merged.lastEventTime).toBe('2026-11-24T10:00:00Z');
    expect(merged.lastRefusalTime).toBe('2026-11-24T09:00:00Z');
    expect(merged.recentRefusals).toEqual(previous.recentRefusals);
    // Merging again what the status now holds changes nothing (no write).
    expect(activityFingerprint(mergeActivity([again], { ...merged, updatedTime: 'x' }))).toBe(
      activityFingerprint(merged),
    );
  });

  it('sums the unauthenticated senders of all replicas per address and reason, keeping the ones seen last', () => {
    const one = reported({
      unauthenticatedSenders: [
        sender('203.0.113.9', 30, '2026-11-24T10:00:01.000Z', '2026-11-24T10:00:08.000Z'),
        sender('198.51.100.1', 1, '2026-11-24T10:00:02.000Z', '2026-11-24T10:00:02.000Z'),
      ],
    });
    const two = reported({
      unauthenticatedSenders: [
        sender('203.0.113.9', 12, '2026-11-24T10:00:00.000Z', '2026-11-24T10:00:09.000Z'),
        ...Array.from({ length: 4 }, (_, i) =>
          sender(`192.0.2.${i}`, 1, '2026-11-24T10:00:0' + (3 + i) + '.000Z', '2026-11-24T10:00:0' + (3 + i) + '.000Z'),
        ),
      ],
    });
    const merged = mergeActivity([one, two]);
    expect(merged.unauthenticatedSenders).toHaveLength(UNAUTHENTICATED_SENDERS);
    expect(merged.unauthenticatedSenders?.[0]).toEqual(
      sender('203.0.113.9', 42, '2026-11-24T10:00:00.000Z', '2026-11-24T10:00:09.000Z'),
    );
    expect(merged.unauthenticatedSenders?.map((s) => s.remoteAddress)).toEqual([
      '203.0.113.9',
      '192.0.2.3',
      '192.0.2.2',
      '192.0.2.1',
      '192.0.2.0',
    ]);
    // They never take the place of refusals, and the order of replicas does not matter.
    expect(merged.recentRefusals).toEqual([]);
    expect(activityFingerprint(mergeActivity([two, one]))).toBe(activityFingerprint(merged));
    // Nothing to report: the field is left out.
    expect(mergeActivity([reported({})])).not.toHaveProperty('unauthenticatedSenders');
  });

  it('keeps the senders the status holds that no replica remembers; a replica that does replaces its count', () => {
    const previous: Activity = {
      eventsLastHour: 0,
      refusedLastHour: 0,
      refusalsLastHour: {},
      recentRefusals: [],
      unauthenticatedSenders: [
        sender('203.0.113.9', 40, '2026-11-24T09:00:00.000Z', '2026-11-24T09:30:00.000Z'),
        sender('198.51.100.1', 3, '2026-11-24T09:00:00.000Z', '2026-11-24T09:10:00.000Z'),
      ],
    };
    const now = reported({
      unauthenticatedSenders: [sender('203.0.113.9', 2, '2026-11-24T09:59:00.000Z', '2026-11-24T10:00:00.000Z')],
    });
    expect(mergeActivity([now], previous).unauthenticatedSenders).toEqual([
      sender('203.0.113.9', 2, '2026-11-24T09:59:00.000Z', '2026-11-24T10:00:00.000Z'),
      sender('198.51.100.1', 3, '2026-11-24T09:00:00.000Z', '2026-11-24T09:10:00.000Z'),
    ]);
  });

  it('writes no control character, whatever a replica reported or the status held', () => {
    const hostile = '\x1b]0;pwned\x07\x1b[2J\u009b31m\u202eURGENT\nrotate now';
    const previous: Activity = {
      eventsLastHour: 0,
      refusedLastHour: 1,
      refusalsLastHour: { [`x${hostile}`]: 1 },
      recentRefusals: [{ ...refusal('2026-11-24T09:00:00.000Z', hostile), userAgent: hostile, message: hostile }],
    };
    const replica = reported({
      refusalsLastHour: { [hostile]: 2 },
      recentRefusals: [{ ...refusal('2026-11-24T10:00:00.000Z', 'r1'), userAgent: hostile.repeat(100) }],
      unauthenticatedSenders: [sender(hostile, 1, '2026-11-24T10:00:00.000Z', '2026-11-24T10:00:00.000Z')],
    });
    const merged = mergeActivity([replica], previous);
    const strings: string[] = [];
    JSON.stringify(merged, (k, v: unknown) => {
      strings.push(k);
      if (typeof v === 'string') strings.push(v);
      return v;
    });
    expect(strings.filter((s) => !isInert(s))).toEqual([]);
    expect(merged.recentRefusals[0]?.userAgent.length).toBe(256);
    expect(merged.recentRefusals[1]?.userAgent).toBe('\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eURGENT\\x0arotate now');
    // Merged again, the clean status is stable: no write.
    expect(activityFingerprint(mergeActivity([replica], { ...merged }))).toBe(activityFingerprint(merged));
  });

  it('fingerprints ignore updatedTime and key order', () => {
    const a: Activity = { eventsLastHour: 1, refusedLastHour: 0, refusalsLastHour: {}, recentRefusals: [] };
    expect(activityFingerprint({ ...a, updatedTime: '2026-11-24T10:00:00Z' })).toBe(
      activityFingerprint({ recentRefusals: [], refusalsLastHour: {}, refusedLastHour: 0, eventsLastHour: 1 }),
    );
  });
});

describe('replicasOf', () => {
  it('lists serving endpoints with the admin port, one slice per port, IPv6 in brackets', () => {
    const replicas = replicasOf([
      {
        addressType: 'IPv4',
        ports: [{ name: 'admin', port: 8081 }],
        endpoints: [
          { addresses: ['10.0.0.1'], conditions: { ready: true } },
          { addresses: ['10.0.0.2'], conditions: { ready: false, serving: true, terminating: true } },
          { addresses: ['10.0.0.3'], conditions: { ready: false, serving: false } },
          { addresses: ['10.0.0.4'], conditions: { ready: false } },
        ],
      },
      { addressType: 'IPv6', ports: [{ name: 'admin', port: 9000 }], endpoints: [{ addresses: ['fd00::1'] }] },
    ]);
    expect(replicas.map((r) => r.url)).toEqual([
      'http://10.0.0.1:8081',
      'http://10.0.0.2:8081',
      'http://[fd00::1]:9000',
    ]);
  });
});

describe('WriteQueue', () => {
  it('writes at most the cap per second, evenly spaced, the latest value of each key once', async () => {
    const written: Array<[string, number, number]> = [];
    const started = performance.now();
    const queue = new WriteQueue<number>(10, async (key, value) => {
      written.push([key, value, performance.now() - started]);
    });
    const running = queue.run();
    for (let i = 0; i < 40; i++) queue.set(`k${i}`, 1);
    // A newer value for a waiting key replaces it in place: still one write for k39.
    queue.set('k39', 2);
    await new Promise((r) => setTimeout(r, 1500));
    queue.stop();
    await running;
    const elapsedS = (performance.now() - started) / 1000;
    expect(written.length).toBeGreaterThanOrEqual(8);
    expect(written.length).toBeLessThanOrEqual(Math.ceil(10 * elapsedS) + 1);
    // No second holds more than the cap plus one.
    for (const [, , at] of written)
      expect(written.filter(([, , t]) => t >= at && t < at + 1000).length).toBeLessThanOrEqual(11);
    expect(new Set(written.map(([k]) => k)).size).toBe(written.length);
    expect(queue.size).toBe(40 - written.length);
  });
});
