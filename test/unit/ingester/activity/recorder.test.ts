/** The activity record: minute buckets over the last hour, bounds whatever the senders, reasons from codes. */
import { MAX_REASONS, MAX_REFUSAL_TEXT, RECENT_REFUSALS } from '../../../../api/activity.js';
import type { Route } from '../../../../api/route.js';
import { MinuteRing } from '../../../../ingester/activity/minute-ring.js';
import { reasonOf, refusalReason } from '../../../../ingester/activity/reasons.js';
import { ActivityRecorder } from '../../../../ingester/activity/recorder.js';
import {
  AuthRefusal,
  authThrottled,
  IntakeError,
  mappingFailed,
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

  it('reports accepted counts and times, refusals by reason and the last refusals newest first', () => {
    const table = tableOf(route('WebhookIntegration', 'a'), route('ApiKey', 'k'));
    const rec = new ActivityRecorder(clock);
    rec.sync(table.entries());
    const a = table.webhook('a') as RouteEntry;
    rec.accepted(a, 3);
    nowMs += 1000;
    rec.refused(a, 'events', unauthorized(), '10.0.0.1', 'curl/8');
    nowMs += 1000;
    rec.refused(a, 'events', new AuthRefusal('signature_invalid', unauthorized()), '10.0.0.3', 'Slackbot 1.0');
    nowMs += 1000;
    rec.refused(
      a,
      'events',
      mappingFailed('no events', [{ field: 'source', message: 'is required' }], 'dl-1'),
      '10.0.0.2',
      undefined,
    );
    const r = rec.report();
    expect(r.webhookIntegrations).toHaveLength(1);
    expect(r.apiKeys).toHaveLength(0);
    const got = r.webhookIntegrations[0];
    expect(got).toMatchObject({
      name: 'a',
      namespace: 'team-a',
      eventsLastHour: 3,
      refusedLastHour: 3,
      refusalsLastHour: { unauthorized: 1, signature_invalid: 1, mapping: 1 },
      lastEventTime: '2026-11-24T10:00:00.000Z',
      lastRefusalTime: '2026-11-24T10:00:03.000Z',
    });
    expect(got?.recentRefusals).toEqual([
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
      {
        time: '2026-11-24T10:00:02.000Z',
        status: 401,
        code: 'UNAUTHORIZED',
        reason: 'signature_invalid',
        message: 'missing or invalid credentials',
        remoteAddress: '10.0.0.3',
        userAgent: 'Slackbot 1.0',
      },
      {
        time: '2026-11-24T10:00:01.000Z',
        status: 401,
        code: 'UNAUTHORIZED',
        reason: 'unauthorized',
        message: 'missing or invalid credentials',
        remoteAddress: '10.0.0.1',
        userAgent: 'curl/8',
      },
    ]);
    // An hour and a minute later the counts are gone, the times stay.
    nowMs += 61 * 60_000;
    const later = rec.report().webhookIntegrations[0];
    expect(later).toMatchObject({ eventsLastHour: 0, refusedLastHour: 0, refusalsLastHour: {} });
    expect(later?.lastEventTime).toBe('2026-11-24T10:00:00.000Z');
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

  it('is bounded whatever the senders: unknown integrations share one bucket, ten refusals, capped reasons and texts', () => {
    const table = tableOf(route('WebhookIntegration', 'a'));
    const rec = new ActivityRecorder(clock);
    rec.sync(table.entries());
    for (let i = 0; i < 5000; i++)
      rec.refused(undefined, 'events', unauthorized(), `10.1.${i >> 8}.${i & 255}`, `agent-${i}`);
    const a = table.webhook('a') as RouteEntry;
    for (let i = 0; i < 40; i++)
      rec.refused(
        a,
        'events',
        new IntakeError(`CODE_${i}`, 400, 'm'.repeat(10_000)),
        'x'.repeat(10_000),
        'u'.repeat(10_000),
      );
    const r = rec.report();
    expect(r.webhookIntegrations).toHaveLength(1);
    expect(r.unattributed.webhookIntegrations.refusedLastHour).toBe(5000);
    expect(r.unattributed.webhookIntegrations.recentRefusals).toHaveLength(RECENT_REFUSALS);
    expect(r.unattributed.webhookIntegrations.recentRefusals[0]?.userAgent).toBe('agent-4999');
    const got = r.webhookIntegrations[0];
    expect(Object.keys(got?.refusalsLastHour ?? {})).toHaveLength(MAX_REASONS);
    expect(got?.refusalsLastHour.other).toBe(40 - (MAX_REASONS - 1));
    expect(got?.refusedLastHour).toBe(40);
    for (const f of got?.recentRefusals ?? []) {
      expect(f.message.length).toBe(MAX_REFUSAL_TEXT);
      expect(f.userAgent.length).toBe(MAX_REFUSAL_TEXT);
      expect(f.remoteAddress.length).toBe(MAX_REFUSAL_TEXT);
    }
  });

  it('records an accepted request in well under a microsecond on average', () => {
    const table = tableOf(route('WebhookIntegration', 'a'));
    const rec = new ActivityRecorder();
    rec.sync(table.entries());
    const a = table.webhook('a') as RouteEntry;
    for (let i = 0; i < 10_000; i++) rec.accepted(a, 1);
    const n = 200_000;
    const started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) rec.accepted(a, 1);
    const nsPerCall = Number(process.hrtime.bigint() - started) / n;
    // Measured ~40-80 ns here; the bound leaves room for a loaded machine.
    expect(nsPerCall).toBeLessThan(2000);
    expect(rec.report().webhookIntegrations[0]?.eventsLastHour).toBe(n + 10_000);
  });
});
