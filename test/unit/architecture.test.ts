/**
 * No import cycles in the product code (api, cmd, common, console, ingester, kube, operator), .ts
 * and .tsx alike. ESLint's no-restricted-imports zones keep the ingester's folders layered
 * (eslint.config.js); this finds cycles inside a folder too. Type-only imports count: tsc erases
 * them, but a cycle of types is still two modules that cannot be read, moved or tested apart.
 * Also: no runtime ESM import of node:http, which loads Node's bundled undici (common/node-http.ts).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ROOT } from '../support/paths.js';

const PRODUCT = ['api', 'cmd', 'common', 'console', 'ingester', 'kube', 'operator'];
const GENERATED = join('ingester', 'series', 'remote-write', 'generated');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return relative(ROOT, path) === GENERATED ? [] : sourceFiles(path);
    return /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

const STATEMENT = /^\s*(import|export)\s+(type\s+)?([^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm;

/** The specifiers of every static import and re-export, type-only ones included. */
function specifiers(source: string): string[] {
  return [...source.matchAll(STATEMENT)].map((m) => m[4] as string);
}

/** The specifiers of static, non-type imports and re-exports (what tsc leaves in the JavaScript). */
function runtimeSpecifiers(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(STATEMENT)) {
    if (m[2]) continue;
    const clause = m[3] ?? '';
    // `import { type A, type B } from` is erased too.
    const names = /\{([^}]*)\}/.exec(clause)?.[1];
    if (names && !/^\s*\w+\s*,/.test(clause) && names.split(',').every((n) => /^\s*(type\s|$)/.test(n))) continue;
    found.push(m[4] as string);
  }
  return found;
}

/** A relative specifier as the absolute path of its source: `./x.js` is x.ts, or x.tsx if only that exists. */
function sourcePath(file: string, specifier: string): string {
  const ts = resolve(dirname(file), specifier.replace(/\.js$/, '.ts'));
  return !existsSync(ts) && existsSync(`${ts}x`) ? `${ts}x` : ts;
}

/** Static imports and re-exports of our own modules, type-only ones included, as source paths. */
function imports(file: string, source: string): string[] {
  return specifiers(source)
    .filter((s) => s.startsWith('.'))
    .map((s) => sourcePath(file, s));
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
    expect(files.some((f) => f.endsWith('.tsx'))).toBe(true);
    const graph = new Map(files.map((f) => [f, imports(f, readFileSync(f, 'utf8'))]));
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

  it('counts type-only imports as edges, and tells runtime ones apart for node:http', () => {
    const src = [
      "import { a } from './a.js';",
      "import type { B } from './b.js';",
      "import { type C, type D } from './c.js';",
      "import e, { type E } from './e.js';",
      "export { f } from './f.js';",
      "import { z } from 'zod';",
    ].join('\n');
    expect(imports('/x/m.ts', src)).toEqual(['/x/a.ts', '/x/b.ts', '/x/c.ts', '/x/e.ts', '/x/f.ts']);
    expect(runtimeSpecifiers(src)).toEqual(['./a.js', './e.js', './f.js', 'zod']);
  });

  it('resolves `./x.js` to x.tsx when there is no x.ts (the console)', () => {
    const main = join(ROOT, 'console', 'web', 'main.tsx');
    expect(imports(main, "import { App } from './app.js';\nimport { view } from './views.js';")).toEqual([
      join(ROOT, 'console', 'web', 'app.tsx'),
      join(ROOT, 'console', 'web', 'views.ts'),
    ]);
  });
});
