/**
 * No import cycles in the product code (api, cmd, common, console, ingester, kube, operator). ESLint's
 * no-restricted-imports zones keep the ingester's folders layered (eslint.config.js); this finds
 * cycles inside a folder too. Only runtime imports count: `import type` is erased by tsc.
 * Also: no runtime ESM import of node:http, which loads Node's bundled undici (common/node-http.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ROOT } from '../support/paths.js';

const PRODUCT = ['api', 'cmd', 'common', 'console', 'ingester', 'kube', 'operator'];
const GENERATED = join('ingester', 'series', 'remote-write', 'generated');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return relative(ROOT, path) === GENERATED ? [] : sourceFiles(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The specifiers of static, non-type imports and re-exports (what tsc leaves in the JavaScript). */
function runtimeSpecifiers(source: string): string[] {
  const found: string[] = [];
  const statement = /^\s*(import|export)\s+(type\s+)?([^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm;
  for (const m of source.matchAll(statement)) {
    if (m[2]) continue;
    const clause = m[3] ?? '';
    // `import { type A, type B } from` is erased too.
    const names = /\{([^}]*)\}/.exec(clause)?.[1];
    if (names && !/^\s*\w+\s*,/.test(clause) && names.split(',').every((n) => /^\s*(type\s|$)/.test(n))) continue;
    found.push(m[4] as string);
  }
  return found;
}

/** Static, non-type imports and re-exports of our own modules, as absolute .ts paths. */
function runtimeImports(file: string, source: string): string[] {
  return runtimeSpecifiers(source)
    .filter((s) => s.startsWith('.'))
    .map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts')));
}

/** Every cycle found by depth-first search, each as the list of files around it. */
function findCycles(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === 'open') cycles.push(stack.slice(stack.indexOf(next)));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return cycles;
}

describe('the product code', () => {
  it('has no import cycles', () => {
    const files = PRODUCT.flatMap((d) => sourceFiles(join(ROOT, d)));
    expect(files.length).toBeGreaterThan(100);
    const graph = new Map(files.map((f) => [f, runtimeImports(f, readFileSync(f, 'utf8'))]));
    const edges = [...graph.values()].reduce((n, to) => n + to.length, 0);
    expect(edges).toBeGreaterThan(150);
    expect(findCycles(graph).map((cycle) => cycle.map((f) => relative(ROOT, f)).join(' -> '))).toEqual([]);
  });
});

describe('node:http in the product code', () => {
  it('is imported for its types only, or through common/node-http.ts', () => {
    const files = PRODUCT.flatMap((d) => sourceFiles(join(ROOT, d)));
    const importing = files.filter((f) => {
      const source = readFileSync(f, 'utf8');
      return (
        runtimeSpecifiers(source).some((s) => s === 'node:http' || s === 'http') ||
        // A dynamic import loads it too; `typeof import('node:http')` is a type.
        /(?<!typeof\s+)import\(\s*['"](node:)?http['"]\s*\)/.test(source)
      );
    });
    expect(importing.map((f) => relative(ROOT, f))).toEqual([]);
  });
});

describe('the cycle finder', () => {
  it('finds a cycle, and none in a tree', () => {
    expect(
      findCycles(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
        ]),
      ),
    ).toEqual([['a', 'b', 'c']]);
    expect(
      findCycles(
        new Map([
          ['a', ['b', 'c']],
          ['b', ['c']],
          ['c', []],
        ]),
      ),
    ).toEqual([]);
  });

  it('counts runtime imports and skips type-only ones', () => {
    const src = [
      "import { a } from './a.js';",
      "import type { B } from './b.js';",
      "import { type C, type D } from './c.js';",
      "import e, { type E } from './e.js';",
      "export { f } from './f.js';",
      "import { z } from 'zod';",
    ].join('\n');
    expect(runtimeImports('/x/m.ts', src)).toEqual(['/x/a.ts', '/x/e.ts', '/x/f.ts']);
    expect(runtimeSpecifiers(src)).toEqual(['./a.js', './e.js', './f.js', 'zod']);
  });
});
