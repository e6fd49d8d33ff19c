import { letterTable, progressTable, replayTable } from '../../../cmd/commands/deadletter.js';

const columnsOf = (line: string): string[] => line.split(/ {2,}/);

describe('intake deadletter -o table', () => {
  it('list: a header, one row a letter in columns, the reason inert, then what the store holds', () => {
    const text = letterTable({
      store: 'SQLite file /tmp/dl.sqlite',
      bytes: 957,
      entries: [
        {
          id: 'd-42ce',
          at: '2026-11-27T11:27:41.919Z',
          kind: 'delivery',
          namespace: 'default',
          integration: 'demo',
          destination: 'tickets',
          attempts: 3,
          reason: 'http_500',
        },
        {
          id: '6336dd68-80cf-40ca-974c-d91e56eae527',
          at: '2026-11-27T11:27:42.166Z',
          kind: 'mapping',
          namespace: 'default',
          integration: 'mapped',
          reason: 'cannot map: \u001b]0;pwned',
        },
      ],
    });
    const lines = text.trimEnd().split('\n');
    expect(columnsOf(lines[0] as string)).toEqual([
      'ID',
      'KEPT',
      'KIND',
      'INTEGRATION',
      'DESTINATION',
      'ATTEMPTS',
      'REASON',
    ]);
    expect(columnsOf(lines[1] as string)).toEqual([
      'd-42ce',
      '2026-11-27T11:27:41.919Z',
      'delivery',
      'default/demo',
      'tickets',
      '3',
      'http_500',
    ]);
    // Every row's reason starts where the header's does.
    expect((lines[2] as string).indexOf('cannot map')).toBe((lines[0] as string).indexOf('REASON'));
    expect(text).not.toContain('\u001b');
    expect(text).toContain('cannot map: \\x1b]0;pwned');
    expect(lines[3]).toBe('2 dead letter(s) listed; the store (SQLite file /tmp/dl.sqlite) holds 957 bytes');
  });

  it('list: no letters is the count alone', () => {
    expect(letterTable({ store: 's', bytes: 0, entries: [] })).toBe(
      '0 dead letter(s) listed; the store (s) holds 0 bytes\n',
    );
  });

  it('replay: one row a letter with what became of it, then the counts', () => {
    const text = replayTable({
      replayed: 2,
      failed: 1,
      skipped: 0,
      results: [
        { id: 'a', kind: 'mapping', namespace: 'default', integration: 'checker', result: 'replayed', events: 1 },
        { id: 'b', kind: 'delivery', integration: 'demo', destination: 'tickets', result: 'replayed' },
        { id: 'c', kind: 'mapping', integration: 'mapped', result: 'failed', message: 'nope' },
      ],
    });
    const lines = text.trimEnd().split('\n');
    expect(columnsOf(lines[0] as string)).toEqual(['ID', 'KIND', 'INTEGRATION', 'RESULT']);
    expect(columnsOf(lines[1] as string)).toEqual(['a', 'mapping', 'default/checker', 'handed on 1 event(s)']);
    expect(columnsOf(lines[2] as string)).toEqual(['b', 'delivery', 'demo', 'handed back to tickets']);
    expect(columnsOf(lines[3] as string)).toEqual(['c', 'mapping', 'mapped', 'failed: nope']);
    expect(lines[4]).toBe('2 replayed, 1 failed, 0 skipped (held by another replay)');
  });

  it('bulk replays: a header, rows in its columns, the last failures under them', () => {
    const progress = {
      id: 'ee7cb8f9-df15-4b1d-b67e-d9304ef91e90',
      state: 'running',
      filter: { kind: 'delivery', reason: 'http_5*' },
      startedAt: '2026-11-27T11:27:57.080Z',
      matched: 1200,
      replayed: 10,
      failed: 1,
      skipped: 0,
      remaining: 1189,
      failures: [{ id: 'd-1', message: 'http_503' }],
    };
    const lines = progressTable([progress]).trimEnd().split('\n');
    expect(columnsOf(lines[0] as string)).toEqual([
      'ID',
      'STATE',
      'MATCHED',
      'REPLAYED',
      'FAILED',
      'SKIPPED',
      'REMAINING',
      'STARTED',
      'FILTER',
    ]);
    expect(columnsOf(lines[1] as string)).toEqual([
      progress.id,
      'running',
      '1200',
      '10',
      '1',
      '0',
      '1189',
      progress.startedAt,
      'kind=delivery,reason=http_5*',
    ]);
    expect(lines[2]).toBe('    failed d-1: http_503');
    // --wait's later lines: no header, the row still in the header's columns.
    const later = progressTable([{ ...progress, state: 'done', remaining: 0, failures: [] }], false);
    expect(later.split('\n')[0]?.indexOf('done')).toBe((lines[0] as string).indexOf('STATE'));
    expect(progressTable([])).toBe(
      'ID  STATE  MATCHED  REPLAYED  FAILED  SKIPPED  REMAINING  STARTED  FILTER\nno bulk replays on this replica\n',
    );
  });
});
