/** What the destination pages derive from a Destination (console/web/data/destination-state.ts). */
import { chartMinutes, circuitOf, pausedOf, targetOf } from '../../../console/web/data/destination-state.js';
import type { DestinationResource } from '../../../console/web/data/destination-state.js';

const destination = (spec: DestinationResource['spec'], conditions: Array<Record<string, string>> = []) =>
  ({
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'Destination',
    metadata: { name: 'hook', namespace: 'team' },
    spec,
    status: { conditions },
  }) as unknown as DestinationResource;
const condition = (type: string, status: string, reason: string) => ({ type, status, reason, message: `${reason}!` });

describe('pausedOf', () => {
  it('follows spec.suspend at once, before the operator writes the condition', () => {
    expect(pausedOf(destination({ suspend: true }))).toEqual({ paused: true, why: 'Suspended' });
    expect(pausedOf(destination({}))).toEqual({ paused: false, why: '' });
  });
  it('a Paused condition from spec.suspend no longer holds once the spec says resume', () => {
    expect(pausedOf(destination({ suspend: false }, [condition('Paused', 'True', 'Suspended')])).paused).toBe(false);
  });
  it('an auto-pause holds whatever the spec says', () => {
    expect(pausedOf(destination({}, [condition('Paused', 'True', 'AutoPaused')]))).toEqual({
      paused: true,
      why: 'AutoPaused',
    });
  });
});

describe('circuitOf', () => {
  it("is the CircuitOpen condition's reason: Closed, Open, HalfOpen", () => {
    for (const reason of ['Closed', 'Open', 'HalfOpen'])
      expect(
        circuitOf(destination({}, [condition('CircuitOpen', reason === 'Closed' ? 'False' : 'True', reason)])),
      ).toEqual({ state: reason, message: `${reason}!` });
  });
  it('is Unknown when not reported', () => {
    expect(circuitOf(destination({})).state).toBe('Unknown');
    expect(circuitOf(destination({}, [condition('CircuitOpen', 'Unknown', 'NotReported')])).state).toBe('Unknown');
  });
});

describe('targetOf', () => {
  it('is the HTTP URL or the Alertmanager URLs', () => {
    expect(targetOf(destination({ http: { url: 'https://hooks.example/x' } }))).toBe('https://hooks.example/x');
    expect(targetOf(destination({ alertmanager: { urls: ['http://am-0', 'http://am-1'] } }))).toBe(
      'http://am-0, http://am-1',
    );
  });
});

describe('chartMinutes', () => {
  it('are in the minute chart shape: delivered as the series above the line, failed below', () => {
    expect(chartMinutes({ start: '2026-11-27T11:58:00Z', delivered: [7, 0, 1], failed: [2, 0, 5] })).toEqual({
      start: '2026-11-27T11:58:00Z',
      events: [7, 0, 1],
      refused: [2, 0, 5],
    });
  });
  it('is nothing for a status without well-formed minutes', () => {
    expect(chartMinutes(undefined)).toBeUndefined();
    expect(chartMinutes({ start: '2026-11-27T11:58:00Z', delivered: [1] })).toBeUndefined();
  });
});
