import { deliveryTable } from '../../../cmd/delivery-table.js';
import type { DeliveryReport } from '../../../api/delivery-status.js';

const NOW = Date.parse('2026-01-01T01:00:00.000Z');

describe('intake status: the delivery table', () => {
  it('shows one row a destination, and the receivers’ last failing answers inert below it', () => {
    const report: DeliveryReport = {
      time: '2026-01-01T01:00:00.000Z',
      destinations: [
        {
          name: 'tickets',
          kind: 'http',
          deliveredLastHour: 7,
          failedLastHour: 2,
          deadLetteredLastHour: 1,
          backlog: 12,
          oldestPendingSeconds: 150,
          backlogShared: true,
          circuit: 'open',
          paused: false,
          lastSuccess: { time: '2026-01-01T00:59:30.000Z', statusCode: 200 },
          lastFailure: { time: '2026-01-01T00:59:50.000Z', statusCode: 503, excerpt: 'down \u001b[2J\u202e' },
        },
        {
          name: 'team-a/pager',
          namespace: 'team-a',
          kind: 'alertmanager',
          deliveredLastHour: 0,
          failedLastHour: 1,
          deadLetteredLastHour: 0,
          backlogShared: false,
          circuit: 'closed',
          paused: true,
          pausedBy: 'auto',
          lastFailure: { time: '2026-01-01T00:00:00.000Z' },
          addressRefused: {
            time: '2026-01-01T00:00:00.000Z',
            host: 'localhost',
            address: '127.0.0.1',
            message: '127.0.0.0/8 (loopback, refused by default)',
          },
        },
      ],
    };
    const text = deliveryTable(report, NOW);
    const lines = text.split('\n');
    expect(lines[0]).toMatch(
      /^DESTINATION\s+KIND\s+CIRCUIT\s+PAUSED\s+BACKLOG\s+OLDEST PENDING\s+LAST SUCCESS\s+LAST FAILURE\s+DELIVERED 1H\s+FAILED 1H\s+DEAD-LETTERED 1H$/,
    );
    expect(lines[1]).toMatch(/^tickets\s+http\s+open\s+False\s+12\s+2m\s+30s\s+10s \(503\)\s+7\s+2\s+1$/);
    // Not measured yet: a dash; a failure without an answer (a timeout): no answer.
    expect(lines[2]).toMatch(
      /^team-a\/pager\s+alertmanager\s+closed\s+True \(auto\)\s+-\s+-\s+never\s+60m \(no answer\)\s+0\s+1\s+0$/,
    );
    expect(text).toContain(
      'last failures (newest first):\n  2026-01-01T00:59:50.000Z  tickets  503: down \\x1b[2J\\u202e',
    );
    expect(text).toContain('  2026-01-01T00:00:00.000Z  team-a/pager  no answer\n');
    expect(text).toContain('127.0.0.0/8 (loopback, refused by default)');
    expect(text).not.toContain('\u001b');
    expect(text).not.toContain('\u202e');
  });

  it('says so when there is no destination', () => {
    expect(deliveryTable({ time: '2026-01-01T01:00:00.000Z', destinations: [] }, NOW)).toBe(
      'no destination is delivered to by this ingester\n',
    );
  });
});
