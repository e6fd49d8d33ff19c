import { destinationTable } from '../../../cmd/commands/destination.js';

describe('intake destination -o table', () => {
  it('shows one row a destination, why it is paused and the last failure, with the receiver’s words inert', () => {
    const text = destinationTable({
      destinations: [
        { name: 'tickets', kind: 'http', circuit: 'closed', paused: false },
        {
          name: 'pager',
          kind: 'alertmanager',
          circuit: 'open',
          paused: true,
          reason: 'auto',
          by: 'auto',
          since: '2026-01-01T00:00:00.000Z',
          lastFailure: { at: '2026-01-01T00:00:00.000Z', reason: 'http_500', error: 'boom\u001b[2J' },
        },
      ],
    });
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+KIND\s+CIRCUIT\s+PAUSED\s+REASON\s+SINCE\s+LAST FAILURE$/);
    expect(lines[1]).toMatch(/^tickets\s+http\s+closed\s+False$/);
    expect(lines[2]).toContain('AutoPaused (auto)');
    expect(lines[2]).toContain('http_500: boom');
    expect(text).not.toContain('\u001b');
  });

  it('shows one destination (get, pause, resume answer with one)', () => {
    const text = destinationTable({
      name: 'tickets',
      kind: 'http',
      circuit: 'closed',
      paused: true,
      reason: 'suspended',
      by: 'admin',
    });
    expect(text).toMatch(/tickets\s+http\s+closed\s+True\s+Suspended \(admin\)/);
  });
});
