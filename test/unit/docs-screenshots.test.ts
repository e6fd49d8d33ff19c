/**
 * The console's pictures in docs/console.md stay tied to the tests that take them: each picture the
 * page shows is made by a browser test (screenshotForDocs in test/integration/), exists, and each
 * one a test makes is shown. `make docs-screenshots` writes them again from the real console.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/paths.js';

const taken = (): Set<string> => {
  const dir = join(ROOT, 'test/integration');
  const names = new Set<string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.test.ts')))
    for (const m of readFileSync(join(dir, file), 'utf8').matchAll(/screenshotForDocs\(\s*\w+,\s*'([^']+)'/g))
      names.add(m[1] as string);
  return names;
};

const shown = (): Set<string> =>
  new Set(
    [...readFileSync(join(ROOT, 'docs/console.md'), 'utf8').matchAll(/\]\(images\/console-([\w-]+)\.png\)/g)].map(
      (m) => m[1] as string,
    ),
  );

it('shows every picture a browser test takes, and only those', () => {
  expect(taken().size).toBeGreaterThanOrEqual(5);
  expect([...shown()].sort()).toEqual([...taken()].sort());
});

it('has each picture in docs/images', () => {
  for (const name of shown()) expect(existsSync(join(ROOT, 'docs/images', `console-${name}.png`))).toBe(true);
});
