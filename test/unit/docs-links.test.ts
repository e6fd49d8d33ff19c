/**
 * The user docs stay honest: every relative link in README.md and any .md under docs/ names a file or
 * directory of the repository, every `#anchor` into a markdown file names one of its headings (as
 * GitHub makes them), every file or folder of the repository a page names in code (`ingester/...`)
 * exists (earlier runs' pages under docs/benchmarks/ aside: they name the tree of their day), the
 * README stays a front page (about 250 lines at most), and no page points at `../shared` (users do
 * not have it).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const README_MAX_LINES = 260;

const pages = (): string[] => [
  'README.md',
  // Recursive: earlier benchmark runs live in docs/benchmarks/.
  ...readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];

/** The text outside fenced code blocks and inline code spans, line by line (line numbers kept). */
const prose = (markdown: string): string[] => {
  let fence: string | undefined;
  return markdown.split('\n').map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker !== undefined && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined;
      return '';
    }
    return fence === undefined ? line.replace(/(`+)(?:(?!\1).)+?\1/g, '') : '';
  });
};

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
const anchors = (markdown: string): Set<string> => {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker !== undefined && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined;
      continue;
    }
    const heading = fence === undefined ? /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line) : null;
    if (!heading) continue;
    const text = (heading[1] ?? '')
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text stays
      .replace(/<[^>]+>/g, '');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
};

/** Every problem with the relative links of one page (`file` relative to `root`). */
const brokenLinks = (
  file: string,
  markdown: string,
  root = ROOT,
  read = (path: string) => readFileSync(path, 'utf8'),
): string[] => {
  const problems: string[] = [];
  const here = dirname(join(root, file));
  prose(markdown).forEach((line, index) => {
    for (const match of line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = match[1] ?? '';
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, ...
      const where = `${file}:${index + 1}: ${target}`;
      const [path, anchor] = target.split('#', 2) as [string, string | undefined];
      const resolved = path === '' ? join(root, file) : resolve(here, decodeURI(path));
      if (relative(root, resolved).startsWith('..')) {
        problems.push(`${where}: points outside the repository`);
        continue;
      }
      if (path !== '' && !existsSync(resolved)) {
        problems.push(`${where}: no such file`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!resolved.endsWith('.md') || (path !== '' && statSync(resolved).isDirectory())) {
        problems.push(`${where}: an anchor into a file that is not markdown`);
        continue;
      }
      const linked = path === '' ? markdown : read(resolved);
      if (!anchors(linked).has(anchor)) problems.push(`${where}: no heading #${anchor} in ${relative(root, resolved)}`);
    }
  });
  return problems;
};

/** The top-level folders of the repository a code span's path may start with. */
const TREE = /^(?:api|bench|charts|cmd|common|console|crds|examples|image|ingester|kube|operator|test)\/[\w./-]*$/;

/** Paths of the repository named in a page's code spans (`ingester/http/listener.ts`) that do not exist. */
const missingPaths = (file: string, markdown: string, root = ROOT): string[] =>
  [...markdown.matchAll(/`([^`\n]+)`/g)]
    .map((m) => m[1] as string)
    .filter((p) => TREE.test(p) && !existsSync(join(root, p)))
    .map((p) => `${file}: ${p}`);

describe('the user docs', () => {
  it('cover README.md and every page under docs/', () => {
    expect(pages()).toEqual(
      expect.arrayContaining(['README.md', 'docs/README.md', 'docs/http-api.md', 'docs/limits.md']),
    );
  });

  it.each(pages())('%s: every relative link and #anchor resolves', (file) => {
    expect(brokenLinks(file, readFileSync(join(ROOT, file), 'utf8'))).toEqual([]);
  });

  it.each(pages().filter((p) => !p.startsWith('docs/benchmarks/')))(
    '%s: every path in code names a file or folder that exists',
    (file) => {
      expect(missingPaths(file, readFileSync(join(ROOT, file), 'utf8'))).toEqual([]);
    },
  );

  it.each(pages())('%s: never points at ../shared', (file) => {
    expect(readFileSync(join(ROOT, file), 'utf8')).not.toContain('../shared');
  });

  it(`README.md is a front page: at most ${README_MAX_LINES} lines`, () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').trimEnd().split('\n').length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });

  it('README.md makes none of the statements that went stale', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).not.toMatch(/not built yet/i);
    expect(readme).not.toMatch(/Node (1\d|2[0-3])\b/);
  });
});

describe('the link checker itself', () => {
  const page = [
    '# A page',
    '## Try it in one minute',
    '### `make test`: what it proves',
    '## Repeat',
    '## Repeat',
    'Fine: [readme](README.md), [dir](docs/), [same](#try-it-in-one-minute), [code](#make-test-what-it-proves),',
    '[again](#repeat-1), [web](https://example.com/x#y), `[in code](nowhere.md)`.',
    '```sh',
    '[in a fence](nowhere.md)',
    '```',
  ].join('\n');

  it('knows a path in code that does not exist, and leaves other code alone', () => {
    const text =
      '`ingester/http/listener.ts`, `ingester/http/nope.ts`, `docs/x.md`, `route-table.ts`, `kubectl get x/y`';
    expect(missingPaths('page.md', text)).toEqual(['page.md: ingester/http/nope.ts']);
  });

  it('accepts what resolves and ignores code', () => {
    expect(brokenLinks('page.md', page)).toEqual([]);
  });

  it('reports a missing file, a missing anchor and a link out of the repository', () => {
    const broken = `${page}\n[gone](docs/nope.md) [bad](#nope) [other](docs/limits.md#nope) [out](../shared/x.md)`;
    expect(brokenLinks('page.md', broken)).toEqual([
      'page.md:11: docs/nope.md: no such file',
      'page.md:11: #nope: no heading #nope in page.md',
      'page.md:11: docs/limits.md#nope: no heading #nope in docs/limits.md',
      'page.md:11: ../shared/x.md: points outside the repository',
    ]);
  });
});
