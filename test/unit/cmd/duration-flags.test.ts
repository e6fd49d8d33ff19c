import { ConfigError } from '../../../common/config-files.js';
import { durationMs } from '../../../cmd/options.js';
import { buildProgram } from '../../../cmd/program.js';

describe('duration flags (--resync-period, --activity-interval)', () => {
  it('take a Go-style duration', () => {
    const warned: string[] = [];
    expect(durationMs({ resyncPeriod: '5m' }, 'resyncPeriod', 1000, (l) => warned.push(l))).toBe(300_000);
    expect(durationMs({ activityInterval: '1m30s' }, 'activityInterval', 1000, (l) => warned.push(l))).toBe(90_000);
    expect(warned).toEqual([]);
  });

  it('still read a bare number as the seconds they took before, with a warning naming the new spelling', () => {
    const warned: string[] = [];
    expect(durationMs({ resyncPeriod: '300' }, 'resyncPeriod', 1000, (l) => warned.push(l))).toBe(300_000);
    expect(warned).toEqual([
      'intake: --resync-period 300 (seconds) is deprecated: give a duration, --resync-period 5m\n',
    ]);
  });

  it.each([
    ['soon', /--activity-interval must be a duration such as 30s or 5m, got "soon"/],
    ['', /--activity-interval must be a duration/],
    ['500ms', /--activity-interval must be at least 1s/],
    ['0', /--activity-interval must be at least 1s/],
  ])('refuse %p naming the flag', (value, message) => {
    const read = () => durationMs({ activityInterval: value }, 'activityInterval', 1000, () => undefined);
    expect(read).toThrow(ConfigError);
    expect(read).toThrow(message);
  });

  it('default to durations in the help', () => {
    const operator = buildProgram().commands.find((c) => c.name() === 'operator');
    const defaults = Object.fromEntries(operator?.options.map((o) => [o.long, o.defaultValue]) ?? []);
    expect(defaults).toMatchObject({ '--resync-period': '5m', '--activity-interval': '30s' });
  });
});
