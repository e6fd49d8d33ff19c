/**
 * The activity record: minute buckets over the last hour, bounds whatever the senders, reasons from
 * codes, authenticated refusals apart from the senders refused before authentication, and no
 * control character stored.
 */
import { MAX_REASONS, MAX_REFUSAL_TEXT, RECENT_REFUSALS, UNAUTHENTICATED_SENDERS } from '../../../../api/activity.js';
import { isInert } from '../../../../common/sender-text.js';
import type { Route } from '../../../../api/route.js';
import { MinuteRing } from '../../../../ingester/activity/minute-ring.js';
import { reasonOf, refusalReason } from '../../../../ingester/activity/reasons.js';
import { ActivityRecorder } from '../../../../ingester/activity/recorder.js';
import {
  AuthRefusal,
  authThrottled,
  IntakeError,
  invalidBatch,
  mappingFailed,
  suspended,
  unauthorized,
} from '../../../../ingester/core/errors.js';
import { RouteTable, type RouteEntry } from '../../../../ingester/routing/route-table.js';

const route = (kind: Route['kind'], name: string, namespace = 'team-a'): Route => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind,
  name,
  namespace,
  credentials: [{ username: name, secret: { plain: `${name}-password-0123456789abcdef` } }],
});

const tableOf = (...routes: Route[]): RouteTable =>
  RouteTable.build(
    routes.map((r) => ({ source: r.name, route: r })),
    { allowPlaintext: true },
  ).table;

describe('MinuteRing', () => {
  it('sums the current minute and the 59 before it, and forgets older minutes', () => {
    const ring = new MinuteRing();
    ring.add(1000, 2);
    ring.add(1000, 3);
    ring.add(1030, 1);
    expect(ring.sum(1030)).toBe(6);
    expect(ring.sum(1059)).toBe(6);
    expect(ring.sum(1060)).toBe(1);
    // The slot of minute 1000 is reused by minute 1060: reset, not added to.
    ring.add(1060, 4);
    expect(ring.sum(1060)).toBe(5);
    expect(ring.sum(1200)).toBe(0);
  });
});

describe('reasonOf', () => {
  it('names the known codes and lower-cases any other (an open set)', () => {
    expect(reasonOf('UNAUTHORIZED')).toBe('unauthorized');
    expect(reasonOf('INVALID_JSON')).toBe('invalid');
    expect(reasonOf('MAPPING_FAILED')).toBe('mapping');
    expect(reasonOf('RATE_LIMITED')).toBe('rate_limited');
    expect(reasonOf('SINK_FAILED')).toBe('sink_unavailable');
    expect(reasonOf('PAYLOAD_TOO_LARGE')).toBe('too_large');
    expect(reasonOf('NOT_FOUND')).toBe('not_found');
  });
});

describe('refusalReason', () => {
  it("records a signed sender's 401 under the authenticator's reason, Basic's under unauthorized", () => {
    for (const reason of ['signature_missing', 'signature_invalid', 'timestamp_out_of_range'] as const)
      expect(refusalReason(new AuthRefusal(reason, unauthorized()))).toBe(reason);
    expect(refusalReason(new AuthRefusal('missing', unauthorized()))).toBe('unauthorized');
    expect(refusalReason(new AuthRefusal('invalid', unauthorized()))).toBe('unauthorized');
    expect(refusalReason(unauthorized())).toBe('unauthorized');
    // Blocked meanwhile: the answer was the 429, and that is what it is recorded as.
    expect(refusalReason(new AuthRefusal('signature_invalid', authThrottled(60)))).toBe('auth_throttled');
    expect(refusalReason(mappingFailed('no events', []))).toBe('mapping');
  });
});

describe('ActivityRecorder', () => {
  let nowMs = Date.parse('2026-11-24T10:00:00Z');
  const clock = () => nowMs;

  it('reports events and refusals per minute, from the first minute of the hour with anything to the last, older minutes left out', () => {
    const start = nowMs;
    const table = tableOf(route('WebhookIntegration', 'm'));
    const rec = new ActivityRecorder(clock);
    rec.sync(table.entries());
    const m = table.webhook('m') as RouteEntry;
    expect(rec.report().webhookIntegrations).toEqual([]);
    rec.accepted(m, 5); // 10:00, then more than an hour later: gone
    nowMs = start + 61 * 60_000; // 11:01
    rec.accepted(m, 2);
    rec.refused(m, 'events', suspended('WebhookIntegration', 'm'), '10.0.0.4', undefined);
    nowMs += 2 * 60_000 + 5_000; // 11:03:05
    rec.accepted(m, 7);
    nowMs += 10 * 60_000; // 11:13: nothing new, the minutes stay as they were
    const got = rec.report().webhookIntegrations[0];
    expect(got?.minutes).toEqual({ start: '2026-11-24T11:01:00.000Z', events: [2, 0, 7], refused: [1, 0, 0] });
    expect(got?.eventsLastHour).toBe(9);
    nowMs = start;
  });

  it('reports accepted counts and times, refusals by reason, the last refusals newest first and the unauthenticated senders', () => {
    const table = tableOf(route('WebhookIntegration', 'a'), route('ApiKey', 'k'));
    const rec = new ActivityRecorder(clock);
    rec.sync(table.entries());
    const a = table.webhook('a') as RouteEntry;
    rec.accepted(a, 3);
    nowMs += 1000;
    rec.refusedUnauthenticated(a, 'events', unauthorized(), '10.0.0.1');
    nowMs += 1000;
    rec.refusedUnauthenticated(a, 'events', new AuthRefusal('signature_invalid', unauthorized()), '10.0.0.3');
    nowMs += 1000;
    rec.refused(
      a,
      'events',
      mappingFailed('no events', [{ field: 'source', message: 'is required' }], 'dl-1'),
      '10.0.0.2',
      undefined,
    );
    nowMs += 1000;
    rec.refused(a, 'events', suspended('WebhookIntegration', 'a'), '10.0.0.4', 'Slackbot 1.0');
    const r = rec.report();
    expect(r.webhookIntegrations).toHaveLength(1);
    expect(r.apiKeys).toHaveLength(0);
    const got = r.webhookIntegrations[0];
    expect(got).toMatchObject({
      name: 'a',
      namespace: 'team-a',
      eventsLastHour: 3,
      refusedLastHour: 4,
      refusalsLastHour: { unauthorized: 1, signature_invalid: 1, mapping: 1, suspended: 1 },
      lastEventTime: '2026-11-24T10:00:00.000Z',
      lastRefusalTime: '2026-11-24T10:00:04.000Z',
    });
    expect(got?.recentRefusals).toEqual([
      {
        time: '2026-11-24T10:00:04.000Z',
        status: 403,
        code: 'SUSPENDED',
        reason: 'suspended',
        message: 'WebhookIntegration a is suspended',
        remoteAddress: '10.0.0.4',
        userAgent: 'Slackbot 1.0',
      },
      {
        time: '2026-11-24T10:00:03.000Z',
        status: 422,
        code: 'MAPPING_FAILED',
        reason: 'mapping',
        message: 'no events (source: is required)',
        remoteAddress: '10.0.0.2',
        userAgent: '',
        deadLetterId: 'dl-1',
      },
    ]);
    // Before authentication: the address, the reason and a count; no User-Agent, no message.
    expect(got?.unauthenticatedSenders).toEqual([
      {
        remoteAddress: '10.0.0.3',
        reason: 'signature_invalid',
        status: 401,
        code: 'UNAUTHORIZED',
        count: 1,
        firstTime: '2026-11-24T10:00:02.000Z',
        lastTime: '2026-11-24T10:00:02.000Z',
      },
      {
        remoteAddress: '10.0.0.1',
        reason: 'unauthorized',
        status: 401,
        code: 'UNAUTHORIZED',
        count: 1,
        firstTime: '2026-11-24T10:00:01.000Z',
        lastTime: '2026-11-24T10:00:01.000Z',
      },
    ]);
    // An hour and a minute later the counts are gone, the times stay.
    nowMs += 61 * 60_000;
    const later = rec.report().webhookIntegrations[0];
    expect(later).toMatchObject({ eventsLastHour: 0, refusedLastHour: 0, refusalsLastHour: {} });
    expect(later?.lastEventTime).toBe('2026-11-24T10:00:00.000Z');
  });

  it('counts an address and reason in one slot; a new one takes a free slot, else the one seen longest ago', () => {
    const table = tableOf(route('WebhookIntegration', 'a'));
    const rec = new ActivityRecorder(clock);
    rec.sync(table.entries());
    const a = table.webhook('a') as RouteEntry;
    const start = nowMs;
    for (let i = 0; i < 3; i++) {
      nowMs += 1000;
      rec.refusedUnauthenticated(a, 'events', unauthorized(), '203.0.113.9');
    }
    nowMs += 1000;
    rec.refusedUnauthenticated(a, 'events', authThrottled(300), '203.0.113.9');
    let senders = rec.report().webhookIntegrations[0]?.unauthenticatedSenders ?? [];
    expect(senders.map((s) => [s.remoteAddress, s.reason, s.count, s.status])).toEqual([
      ['203.0.113.9', 'auth_throttled', 1, 429],
      ['203.0.113.9', 'unauthorized', 3, 401],
    ]);
    expect(senders[1]?.firstTime).toBe(new Date(start + 1000).toISOString());
    expect(senders[1]?.lastTime).toBe(new Date(start + 3000).toISOString());
    // Strangers from many addresses: the slots hold the latest ones, never more.
    for (let i = 0; i < 100; i++) {
      nowMs += 1000;
      rec.refusedUnauthenticated(a, 'events', unauthorized(), `198.51.100.${i}`);
    }
    senders = rec.report().webhookIntegrations[0]?.unauthenticatedSenders ?? [];
    expect(senders.map((s) => s.remoteAddress)).toEqual(
      Array.from({ length: UNAUTHENTICATED_SENDERS }, (_, i) => `198.51.100.${99 - i}`),
    );
    expect(senders.every((s) => s.count === 1)).toBe(true);
  });

  it("keeps a tenant's authenticated refusals whatever strangers send, and no text of theirs", () => {
    const table = tableOf(route('WebhookIntegration', 'a'));
    const rec = new ActivityRecorder(clock);
    rec.sync(table.entries());
    const a = table.webhook('a') as RouteEntry;
    for (let i = 0; i < RECENT_REFUSALS; i++) {
      nowMs += 1000;
      rec.refused(a, 'events', mappingFailed(`real ${i}`, []), '10.0.0.7', 'Alertmanager/0.28.1');
    }
    for (let i = 0; i < 10_000; i++) {
      nowMs += 10;
      rec.refusedUnauthenticated(a, 'events', unauthorized(), `2001:db8::${i.toString(16)}`);
    }
    const got = rec.report().webhookIntegrations[0];
    expect(got?.recentRefusals.map((f) => f.message)).toEqual(
      Array.from({ length: RECENT_REFUSALS }, (_, i) => `real ${RECENT_REFUSALS - 1 - i}`),
    );
    expect(got?.refusalsLastHour).toEqual({ mapping: RECENT_REFUSALS, unauthorized: 10_000 });
    expect(got?.unauthenticatedSenders).toHaveLength(UNAUTHENTICATED_SENDERS);
    expect(JSON.stringify(got)).not.toMatch(/URGENT|rotate/);
  });

  it('stores no control character: a JSON key with escapes, a User-Agent with C1 and bidi, a forwarded address', () => {
    const table = tableOf(route('ApiKey', 'k'));
    const rec = new ActivityRecorder(clock);
    rec.sync(table.entries());
    const k = [...table.entries()].find((e) => e.kind === 'ApiKey') as RouteEntry;
    const key = 'tags.\x1b[2J\x1b]0;pwned\x07\x1b]52;c;ZWNobyBoaQ==\x07';
    const answer = invalidBatch('data point', [{ index: 0, field: key, message: 'is not a known field' }], 1);
    rec.refused(k, 'metrics', answer, '10.0.0.1\x1b[8m', 'curl\u009b2J \u202eURGENT');
    rec.refusedUnauthenticated(k, 'metrics', unauthorized(), '10.0.0.2\u2066\x07');
    const got = rec.report().apiKeys[0];
    const refusal = got?.recentRefusals[0];
    expect(refusal?.message).toContain('tags.\\x1b[2J\\x1b]0;pwned\\x07');
    expect(refusal?.userAgent).toBe('curl\\x9b2J \\u202eURGENT');
    expect(refusal?.remoteAddress).toBe('10.0.0.1\\x1b[8m');
    expect(got?.unauthenticatedSenders?.[0]?.remoteAddress).toBe('10.0.0.2\\u2066\\x07');
    const strings: string[] = [];
    JSON.stringify(got, (_k, v: unknown) => (typeof v === 'string' && strings.push(v), v));
    expect(strings.filter((s) => !isInert(s))).toEqual([]);
  });

  it('keeps a record across reloads while its route is published, and drops it once it is not', () => {
    const rec = new ActivityRecorder(clock);
    const first = tableOf(route('WebhookIntegration', 'a'), route('WebhookIntegration', 'b'));
    rec.sync(first.entries());
    rec.accepted(first.webhook('a') as RouteEntry, 1);
    rec.accepted(first.webhook('b') as RouteEntry, 1);
    const second = tableOf(route('WebhookIntegration', 'a'));
    rec.sync(second.entries());
    // An entry of the previous table (a request that began before the reload) still counts.
    rec.accepted(first.webhook('a') as RouteEntry, 1);
    rec.accepted(second.webhook('a') as RouteEntry, 1);
    expect(rec.report().webhookIntegrations.map((w) => [w.name, w.eventsLastHour])).toEqual([['a', 3]]);
  });

  it("creates a record at a route's first request, also for a route updated in place or reached through the table before", () => {
    const rec = new ActivityRecorder(clock);
    const first = tableOf(route('WebhookIntegration', 'a'), route('WebhookIntegration', 'b'), route('ApiKey', 'k'));
    rec.sync(first.entries());
    expect(rec.report()).toMatchObject({ webhookIntegrations: [], apiKeys: [] });
    // 'a' replaced in place before any request (a rotated password): its first request counts.
    const updated = tableOf(route('WebhookIntegration', 'a'));
    rec.update([first.webhook('a') as RouteEntry], [updated.webhook('a') as RouteEntry]);
    rec.accepted(updated.webhook('a') as RouteEntry, 2);
    // 'b' through an entry of the table a reload replaced, before any request of the new one.
    const second = tableOf(route('WebhookIntegration', 'b'), route('ApiKey', 'k'));
    rec.sync(second.entries());
    rec.accepted(first.webhook('b') as RouteEntry, 1);
    const key = second.authenticateApiKey('k-password-0123456789abcdef', undefined);
    expect(key?.name).toBe('k');
    rec.refused(key, 'metrics', suspended('ApiKey', 'k'), '127.0.0.1', 'ua');
    const report = rec.report();
    expect(report.webhookIntegrations.map((w) => [w.name, w.eventsLastHour])).toEqual([['b', 1]]);
    expect(report.apiKeys.map((k) => k.name)).toEqual(['k']);
  });

  it('is bounded whatever the senders: unknown integrations share one bucket, ten refusals, five senders, capped reasons and texts', () => {
    const table = tableOf(route('WebhookIntegration', 'a'));
    const rec = new ActivityRecorder(clock);
    rec.sync(table.entries());
    for (let i = 0; i < 5000; i++)
      rec.refusedUnauthenticated(undefined, 'events', unauthorized(), `10.1.${i >> 8}.${i & 255}`);
    const a = table.webhook('a') as RouteEntry;
    for (let i = 0; i < 40; i++)
      rec.refused(
        a,
        'events',
        new IntakeError(`CODE_${i}`, 400, 'm'.repeat(10_000)),
        'x'.repeat(10_000),
        'u'.repeat(10_000),
      );
    for (let i = 0; i < 40; i++) rec.refusedUnauthenticated(a, 'events', unauthorized(), `${i}`.repeat(10_000));
    const r = rec.report();
    expect(r.webhookIntegrations).toHaveLength(1);
    expect(r.unattributed.webhookIntegrations.refusedLastHour).toBe(5000);
    expect(r.unattributed.webhookIntegrations.recentRefusals).toHaveLength(0);
    expect(r.unattributed.webhookIntegrations.unauthenticatedSenders).toHaveLength(UNAUTHENTICATED_SENDERS);
    const got = r.webhookIntegrations[0];
    expect(Object.keys(got?.refusalsLastHour ?? {})).toHaveLength(MAX_REASONS);
    expect(got?.refusalsLastHour.other).toBe(40 - (MAX_REASONS - 1) + 40);
    expect(got?.refusedLastHour).toBe(80);
    expect(got?.recentRefusals).toHaveLength(RECENT_REFUSALS);
    for (const f of got?.recentRefusals ?? []) {
      expect(f.message.length).toBe(MAX_REFUSAL_TEXT);
      expect(f.userAgent.length).toBe(MAX_REFUSAL_TEXT);
      expect(f.remoteAddress.length).toBe(MAX_REFUSAL_TEXT);
    }
    for (const s of got?.unauthenticatedSenders ?? []) expect(s.remoteAddress.length).toBe(MAX_REFUSAL_TEXT);
  });

  // What recording costs per request is measured by `make bench` (the single-event path), not
  // by a timed test: these count what many calls leave behind.
  it('counts every accepted request of a long run', () => {
    const table = tableOf(route('WebhookIntegration', 'a'));
    const rec = new ActivityRecorder();
    rec.sync(table.entries());
    const a = table.webhook('a') as RouteEntry;
    const n = 200_000;
    for (let i = 0; i < n; i++) rec.accepted(a, 1);
    expect(rec.report().webhookIntegrations[0]?.eventsLastHour).toBe(n);
  });

  it('counts every refusal of a long run, keeping only the recent few, their texts made inert', () => {
    const table = tableOf(route('WebhookIntegration', 'a'));
    const rec = new ActivityRecorder();
    rec.sync(table.entries());
    const a = table.webhook('a') as RouteEntry;
    const err = mappingFailed('the mapping (expression) produced no event from this payload', []);
    const ua =
      'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36\u0007';
    const n = 100_000;
    for (let i = 0; i < n; i++) rec.refused(a, 'events', err, '10.0.0.1', ua);
    for (let i = 0; i < n; i++) rec.refusedUnauthenticated(a, 'events', err, '10.0.0.1');
    const got = rec.report().webhookIntegrations[0];
    expect(got?.refusedLastHour).toBe(2 * n);
    expect(got?.recentRefusals).toHaveLength(RECENT_REFUSALS);
    for (const f of got?.recentRefusals ?? []) expect(f.userAgent.includes('\u0007')).toBe(false);
  });
});
