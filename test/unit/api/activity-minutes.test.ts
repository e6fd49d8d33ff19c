/**
 * status.activity's per-minute counts: cut to the minutes with anything, summed across replicas
 * minute by minute whatever minute each report starts at, at most an hour, and nothing a replica
 * reported that is not a count is counted.
 */
import type { ActivityMinutes } from '../../../api/activity.js';
import { minuteOfStart, sumActivityMinutes, toActivityMinutes } from '../../../api/activity-minutes.js';

const T = Date.parse('2026-11-27T08:00:00Z') / 60_000;

describe('toActivityMinutes', () => {
  it('cuts leading and trailing quiet minutes, keeps quiet minutes between', () => {
    expect(toActivityMinutes(T, [0, 0, 3, 0, 1, 0], [0, 0, 0, 0, 0, 2])).toEqual({
      start: '2026-11-27T08:02:00.000Z',
      events: [3, 0, 1, 0],
      refused: [0, 0, 0, 2],
    });
  });
  it('is absent for an hour with nothing', () => {
    expect(toActivityMinutes(T, [0, 0], [0, 0])).toBeUndefined();
  });
});

describe('sumActivityMinutes', () => {
  it('adds replicas minute by minute, each starting where it starts', () => {
    const a: ActivityMinutes = { start: '2026-11-27T08:00:00Z', events: [1, 2, 3], refused: [0, 0, 1] };
    const b: ActivityMinutes = { start: '2026-11-27T08:02:00Z', events: [10, 0, 5], refused: [1, 0, 0] };
    expect(sumActivityMinutes([a, undefined, b])).toEqual({
      start: '2026-11-27T08:00:00.000Z',
      events: [1, 2, 13, 0, 5],
      refused: [0, 0, 2, 0, 0],
    });
  });

  it('keeps the hour that ends with the latest minute any replica has', () => {
    const old: ActivityMinutes = { start: '2026-11-27T07:00:00Z', events: [4, 4], refused: [0, 0] };
    const now: ActivityMinutes = { start: '2026-11-27T08:00:00Z', events: [1], refused: [0] };
    const sum = sumActivityMinutes([old, now]);
    expect(sum?.start).toBe('2026-11-27T07:01:00.000Z');
    expect(sum?.events).toHaveLength(60);
    expect(sum?.events[0]).toBe(4);
    expect(sum?.events[59]).toBe(1);
  });

  it('counts nothing that is not a count, and ignores a report whose start is not a time', () => {
    const odd = {
      start: '2026-11-27T08:00:00Z',
      events: [-1, 'x', 2.7, null],
      refused: [Infinity],
    } as unknown as ActivityMinutes;
    const broken = { start: 'yesterday', events: [100], refused: [] } as unknown as ActivityMinutes;
    expect(sumActivityMinutes([odd, broken])).toEqual({ start: '2026-11-27T08:02:00.000Z', events: [2], refused: [0] });
    expect(sumActivityMinutes([broken])).toBeUndefined();
    expect(minuteOfStart('2026-11-27T08:00:59Z')).toBe(T);
  });
});
