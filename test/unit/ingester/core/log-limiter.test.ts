import pino from 'pino';
import { Writable } from 'node:stream';
import { LogLimiter } from '../../../../ingester/core/log-limiter.js';

describe('LogLimiter', () => {
  it('logs a kind of failure once per interval with the count left out, and no stack', () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino(new Writable({ write: (c: Buffer, _e, cb) => (lines.push(JSON.parse(c.toString())), cb()) }));
    let now = 0;
    const limiter = new LogLimiter(logger, 1000, () => now);
    const err = Object.assign(new Error('disk full'), { code: 'ENOSPC' });
    for (let i = 0; i < 5; i++) limiter.error('sink:log', err, { sink: 'log' }, 'event sink failed');
    now = 1500;
    limiter.error('sink:log', err, { sink: 'log' }, 'event sink failed');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ sink: 'log', suppressed: 4, error: { message: 'disk full', code: 'ENOSPC' } });
    expect(JSON.stringify(lines)).not.toContain('stack');
  });
});
