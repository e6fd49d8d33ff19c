/**
 * The operator's heap limit (operator.maxOldSpaceSizeMiB): rendered into NODE_OPTIONS together with
 * the image's own flags (the Dockerfile's NODE_OPTIONS), which the env var replaces.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ROOT } from '../../support/paths.js';
import { renderChart } from '../../support/helm.js';

interface Doc {
  kind: string;
  metadata: { name: string };
  spec?: {
    template?: { spec?: { containers?: Array<{ name: string; env?: Array<{ name: string; value?: string }> }> } };
  };
}

const operatorNodeOptions = (...set: string[]) =>
  renderChart<Doc>('intake', 'intake', set)
    .filter((d) => d.kind === 'Deployment')
    .flatMap((d) => d.spec?.template?.spec?.containers ?? [])
    .filter((c) => c.name === 'operator')
    .map((c) => c.env?.find((e) => e.name === 'NODE_OPTIONS')?.value);

const imageFlags = /^ENV NODE_OPTIONS=(.*)$/m.exec(readFileSync(resolve(ROOT, 'Dockerfile'), 'utf8'))?.[1] ?? '';

describe("chart: the operator's heap limit", () => {
  it("bounds the old generation by default and keeps the image's flags", () => {
    const [value] = operatorNodeOptions();
    expect(value?.split(' ')).toEqual([...imageFlags.split(' '), '--max-old-space-size=192']);
  });

  it('follows the value, and 0 leaves the image as it is', () => {
    expect(operatorNodeOptions('--set', 'operator.maxOldSpaceSizeMiB=256')[0]).toContain('--max-old-space-size=256');
    expect(operatorNodeOptions('--set', 'operator.maxOldSpaceSizeMiB=0')).toEqual([undefined]);
  });
});
