import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../support/paths.js';

describe('the chart CRDs', () => {
  it('are byte-for-byte the ones in crds/ (one source; copy with cp crds/*.yaml charts/intake/files/crds/)', () => {
    const source = readdirSync(join(ROOT, 'crds')).sort();
    const copy = readdirSync(join(ROOT, 'charts/intake/files/crds')).sort();
    expect(copy).toEqual(source);
    for (const file of source) {
      expect(readFileSync(join(ROOT, 'charts/intake/files/crds', file), 'utf8')).toBe(
        readFileSync(join(ROOT, 'crds', file), 'utf8'),
      );
    }
  });
});
