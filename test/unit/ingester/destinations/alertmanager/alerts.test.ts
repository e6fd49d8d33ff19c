import {
  alertKey,
  alertsOf,
  applyEvent,
  ENDS_AT_INTERVALS,
  expire,
  isSpent,
  labelsOf,
  type AlertState,
} from '../../../../../ingester/destinations/alertmanager/alerts.js';
import type { NormalisedEvent } from '../../../../../ingester/core/event.js';

const T0 = Date.parse('2026-11-23T10:00:00.000Z');
const timing = { resendIntervalMs: 60_000, resolvedRetentionMs: 15 * 60_000 };

let n = 0;
function event(over: Partial<NormalisedEvent> = {}, atMs = T0): NormalisedEvent {
  n++;
  return {
    id: `id-${n}`,
    integration: 'demo',
    namespace: 'team-a',
    received_at: new Date(atMs).toISOString(),
    signature: 'web-1:cpu',
    source: 'web-1',
    severity: 5,
    severity_name: 'critical',
    agent_time: new Date(atMs).toISOString(),
    type: 'HighCPU',
    class: 'cpu',
    description: 'CPU at 99%',
    custom_info: { rack: 7 },
    ...over,
  };
}

describe('events as Alertmanager alerts', () => {
  it('labels carry the identity, annotations the rest', () => {
    const { next } = applyEvent(
      undefined,
      event({ manager: 'nagios', agent_location: 'dc1', external_id: 'X-1', source_id: 's1' }),
      T0,
    );
    expect(next?.labels).toEqual({
      alertname: 'HighCPU',
      signature: 'web-1:cpu',
      source: 'web-1',
      severity: 'critical',
      integration: 'demo',
      namespace: 'team-a',
    });
    expect(next?.annotations).toMatchObject({
      description: 'CPU at 99%',
      manager: 'nagios',
      agent_location: 'dc1',
      external_id: 'X-1',
      source_id: 's1',
      class: 'cpu',
      custom_info: '{"rack":7}',
    });
    expect(next?.annotations.event_id).toMatch(/^id-/);
  });

  it('leaves out an empty label, in the same order as a full set, and custom_info when empty', () => {
    const labels = labelsOf(event({ source: '', integration: '' }));
    expect(labels).toEqual({ alertname: 'HighCPU', signature: 'web-1:cpu', severity: 'critical', namespace: 'team-a' });
    expect(JSON.stringify(labels)).toBe(
      '{"alertname":"HighCPU","signature":"web-1:cpu","severity":"critical","namespace":"team-a"}',
    );
    expect(JSON.stringify(labelsOf(event()))).toBe(
      '{"alertname":"HighCPU","signature":"web-1:cpu","source":"web-1","severity":"critical","integration":"demo","namespace":"team-a"}',
    );
    const { next } = applyEvent(undefined, event({ custom_info: {} }), T0);
    expect(next?.annotations).not.toHaveProperty('custom_info');
  });

  it('stamps each alert with its own times, also within one millisecond and across calls', () => {
    const a = applyEvent(undefined, event({}, T0 - 1000), T0).next as AlertState;
    const b = applyEvent(undefined, event({ signature: 'other' }, T0 - 2000), T0).next as AlertState;
    expect([a.startsAt, b.startsAt]).toEqual([new Date(T0 - 1000).toISOString(), new Date(T0 - 2000).toISOString()]);
    expect(alertsOf(a, T0, timing)[0]?.endsAt).toBe(new Date(T0 + ENDS_AT_INTERVALS * 60_000).toISOString());
    expect(alertsOf(b, T0 + 1, timing)[0]?.endsAt).toBe(new Date(T0 + 1 + ENDS_AT_INTERVALS * 60_000).toISOString());
    expect(a.key).toBe(alertKey(event()));
  });

  it('takes alertname from class without a type, and a fixed name without either', () => {
    expect(labelsOf(event({ type: undefined })).alertname).toBe('cpu');
    expect(labelsOf(event({ type: undefined, class: undefined })).alertname).toBe('IntakeEvent');
  });

  it('fires with endsAt four resend intervals ahead, startsAt at the event time', () => {
    const { next } = applyEvent(undefined, event({}, T0 - 5000), T0);
    const [alert] = alertsOf(next as AlertState, T0, timing);
    expect(alert?.startsAt).toBe(new Date(T0 - 5000).toISOString());
    expect(alert?.endsAt).toBe(new Date(T0 + ENDS_AT_INTERVALS * 60_000).toISOString());
  });

  it('keeps startsAt while the same alert keeps firing', () => {
    const first = applyEvent(undefined, event({}, T0), T0).next as AlertState;
    const again = applyEvent(first, event({ description: 'still hot' }, T0 + 30_000), T0 + 30_000).next as AlertState;
    expect(again.startsAt).toBe(first.startsAt);
    expect(again.annotations.description).toBe('still hot');
  });

  it('severity 0 resolves the alert with the same signature (endsAt = now)', () => {
    const firing = applyEvent(undefined, event({}, T0), T0).next as AlertState;
    const { next, changed } = applyEvent(firing, event({ severity: 0, severity_name: 'clear' }, T0 + 1000), T0 + 2000);
    expect(changed).toBe(true);
    const [alert] = alertsOf(next as AlertState, T0 + 3000, timing);
    expect(alert?.labels.severity).toBe('critical');
    expect(alert?.endsAt).toBe(new Date(T0 + 2000).toISOString());
  });

  it('a clear for a signature with no alert changes nothing', () => {
    expect(applyEvent(undefined, event({ severity: 0, severity_name: 'clear' }), T0)).toEqual({
      next: undefined,
      changed: false,
    });
  });

  it('a new severity is a new alert, and the old one is resolved', () => {
    const critical = applyEvent(undefined, event({}, T0), T0).next as AlertState;
    const minor = applyEvent(critical, event({ severity: 3, severity_name: 'minor' }, T0 + 1000), T0 + 1000)
      .next as AlertState;
    const alerts = alertsOf(minor, T0 + 1000, timing);
    expect(alerts.map((a) => [a.labels.severity, a.endsAt === new Date(T0 + 1000).toISOString()])).toEqual([
      ['critical', true],
      ['minor', false],
    ]);
    expect(minor.key).toBe(critical.key);
  });

  it('ignores an event older than the last one applied (a reordered redelivery)', () => {
    const firing = applyEvent(undefined, event({}, T0), T0).next as AlertState;
    const cleared = applyEvent(firing, event({ severity: 0, severity_name: 'clear' }, T0 + 1000), T0 + 1000)
      .next as AlertState;
    expect(applyEvent(cleared, event({}, T0 + 500), T0 + 2000)).toEqual({ next: cleared, changed: false });
  });

  it('applying the same event twice changes nothing', () => {
    const e = event();
    const firing = applyEvent(undefined, e, T0).next as AlertState;
    expect(applyEvent(firing, e, T0 + 1000).changed).toBe(false);
  });

  it('a resolved alert is sent for the retention, then forgotten', () => {
    const firing = applyEvent(undefined, event({}, T0), T0).next as AlertState;
    const cleared = applyEvent(firing, event({ severity: 0, severity_name: 'clear' }, T0), T0).next as AlertState;
    expect(isSpent(cleared, T0 + timing.resolvedRetentionMs - 1, timing)).toBe(false);
    expect(isSpent(cleared, T0 + timing.resolvedRetentionMs, timing)).toBe(true);
    expect(isSpent(firing, T0 + 10 * timing.resolvedRetentionMs, timing)).toBe(false);
  });

  it('never sends endsAt before startsAt (a clear stamped before the firing time)', () => {
    const firing = applyEvent(undefined, event({}, T0 + 60_000), T0 + 60_000).next as AlertState;
    const cleared = { ...firing, resolvedAt: new Date(T0).toISOString() };
    const [alert] = alertsOf(cleared, T0 + 61_000, timing);
    expect(Date.parse(alert?.endsAt ?? '')).toBeGreaterThanOrEqual(Date.parse(alert?.startsAt ?? ''));
  });

  it('keys by namespace, integration and signature', () => {
    const a = event();
    expect(alertKey(a)).toBe(alertKey({ ...a, severity: 1 } as NormalisedEvent));
    expect(alertKey(a)).not.toBe(alertKey({ ...a, namespace: 'team-b' } as NormalisedEvent));
  });
});

describe('resolveAfter', () => {
  it('resolves a firing alert no event confirmed for that long, and only then', () => {
    const firing = applyEvent(undefined, event({}, T0), T0).next as AlertState;
    expect(expire(firing, T0 + 59_000, 60_000)).toBeUndefined();
    const expired = expire(firing, T0 + 60_000, 60_000) as AlertState;
    expect(expired.resolvedAt).toBe(new Date(T0 + 60_000).toISOString());
    expect(expired.annotations.resolved_by).toBe('resolveAfter: no event for 60s');
    expect(alertsOf(expired, T0 + 61_000, timing)[0]?.endsAt).toBe(new Date(T0 + 60_000).toISOString());
  });

  it('is off at 0, and leaves resolved alerts alone', () => {
    const firing = applyEvent(undefined, event({}, T0), T0).next as AlertState;
    expect(expire(firing, T0 + 1e9, 0)).toBeUndefined();
    expect(expire({ ...firing, resolvedAt: new Date(T0).toISOString() }, T0 + 1e9, 1000)).toBeUndefined();
  });

  it('counts from the last event applied, not the first', () => {
    const first = applyEvent(undefined, event({}, T0), T0).next as AlertState;
    const again = applyEvent(first, event({}, T0 + 50_000), T0 + 50_000).next as AlertState;
    expect(expire(again, T0 + 100_000, 60_000)).toBeUndefined();
  });
});
