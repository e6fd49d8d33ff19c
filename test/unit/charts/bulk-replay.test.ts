/** The chart writes the bulk replays' limits into the ingester's settings, defaults and given values alike. */
import { parse } from 'yaml';
import { renderChart } from '../../support/helm.js';

interface Doc {
  kind: string;
  data?: Record<string, string>;
}

const deadLetterOf = (...set: string[]) => {
  const docs = renderChart<Doc>(
    'intake',
    'intake',
    set.flatMap((s) => ['--set', s]),
  );
  const text = docs.find((d) => d.kind === 'ConfigMap' && d.data?.['intake.yaml'])?.data?.['intake.yaml'] ?? '';
  return (parse(text) as { deadLetter: Record<string, unknown> }).deadLetter;
};

describe('chart: bulk replays', () => {
  it('writes the defaults, and the values given', () => {
    expect(deadLetterOf().bulkReplay).toEqual({ maxRunning: 4, maxRate: 1000, allNamespaces: 'shared' });
    expect(
      deadLetterOf(
        'ingester.deadLetter.bulkReplay.maxRunning=2',
        'ingester.deadLetter.bulkReplay.maxRate=5',
        'ingester.deadLetter.bulkReplay.allNamespaces=exclusive',
      ).bulkReplay,
    ).toEqual({ maxRunning: 2, maxRate: 5, allNamespaces: 'exclusive' });
  });

  it('refuses a value out of bounds', () => {
    expect(() => deadLetterOf('ingester.deadLetter.bulkReplay.maxRunning=0')).toThrow();
    expect(() => deadLetterOf('ingester.deadLetter.bulkReplay.allNamespaces=all')).toThrow();
  });
});
