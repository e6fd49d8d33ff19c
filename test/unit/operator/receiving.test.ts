/** The Receiving condition of spec.expectEventsWithin: a dead man's switch per integration. */
import type { WebhookIntegration } from '../../../api/v1alpha1/types.js';
import { receivingOf } from '../../../operator/receiving.js';

const wi = (expectEventsWithin?: string, created = '2026-11-24T10:00:00Z'): WebhookIntegration => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  metadata: { name: 'a', namespace: 'team-a', creationTimestamp: created as unknown as Date },
  spec: expectEventsWithin ? { expectEventsWithin } : {},
});
const at = (iso: string) => new Date(iso);

describe('receivingOf', () => {
  it('is absent without spec.expectEventsWithin', () => {
    expect(receivingOf(wi(), '2026-11-24T10:00:00Z', at('2026-11-24T12:00:00Z'), true)).toBeUndefined();
  });

  it('True while the last event is recent, rechecked when it would turn; False Silent once older', () => {
    const fresh = receivingOf(wi('1h'), '2026-11-24T10:30:00.000Z', at('2026-11-24T11:00:00Z'), true);
    expect(fresh).toMatchObject({ silent: false, state: { status: 'True', reason: 'Receiving' } });
    expect(fresh?.recheckAfterMs).toBe(30 * 60_000 + 1000);
    const silent = receivingOf(wi('1h'), '2026-11-24T10:30:00.000Z', at('2026-11-24T11:30:01Z'), true);
    expect(silent).toMatchObject({
      silent: true,
      state: { status: 'False', reason: 'Silent', message: 'no event since 2026-11-24T10:30:00Z (expected within 1h)' },
    });
  });

  it('never an event: Unknown NoEventYet within the duration of creation, then Silent', () => {
    expect(receivingOf(wi('15m'), undefined, at('2026-11-24T10:10:00Z'), true)).toMatchObject({
      silent: false,
      state: { status: 'Unknown', reason: 'NoEventYet' },
      recheckAfterMs: 5 * 60_000 + 1000,
    });
    expect(receivingOf(wi('15m'), undefined, at('2026-11-24T10:20:00Z'), true)).toMatchObject({
      silent: true,
      state: { status: 'False', reason: 'Silent' },
    });
  });

  it('Unknown ActivityOff when the operator does not collect activity', () => {
    expect(receivingOf(wi('1h'), undefined, at('2026-11-24T12:00:00Z'), false)).toMatchObject({
      silent: false,
      state: { status: 'Unknown', reason: 'ActivityOff' },
    });
  });
});
