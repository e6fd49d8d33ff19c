/**
 * The docs show only what exists: every `intake <command> --flag` that README.md or docs/*.md
 * show (in code spans, and in shell blocks) is a command and flag of the CLI, taken from the
 * commander program itself (cmd/program.ts builds it without running it), and every admin path
 * they name (/healthz, /metrics/ingested, /deadletter/replay, /status/activity,
 * /destinations/<name>/pause, /inspector/<namespace>/<integration>, ...) is served by the admin
 * listener, built as ingester/main.ts builds it and asked with fastify's hasRoute.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command, Option } from 'commander';
import pino from 'pino';
import { Registry } from 'prom-client';
import { buildProgram } from '../../cmd/program.js';
import type { ActivityRecorder } from '../../ingester/activity/recorder.js';
import { registerDeliveryStatus } from '../../ingester/destinations/status/delivery-report.js';
import {
  registerDeadLetterEndpoints,
  type DeadLetterEndpointsOptions,
} from '../../ingester/dead-letters/admin-endpoints.js';
import { registerDestinationEndpoints } from '../../ingester/destinations/admin-endpoints.js';
import { buildAdminServer } from '../../ingester/http/admin-listener.js';
import {
  registerInspectorEndpoints,
  type InspectorEndpointsOptions,
} from '../../ingester/inspector/admin-endpoints.js';
import { SeriesStore } from '../../ingester/series/series-store.js';
import { ROOT } from '../support/paths.js';

const pages = (): string[] => [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];

/** Fence languages whose lines are commands (a fence without one too). */
const SHELL = new Set(['', 'sh', 'bash', 'shell', 'console']);

interface Snippet {
  line: number;
  text: string;
}

/**
 * The code a page shows: each inline code span, and each line of a shell block (only the `$ `
 * lines when the block has prompts: the others are output), comments dropped.
 */
export function codeSnippets(markdown: string): { spans: Snippet[]; commands: Snippet[] } {
  const spans: Snippet[] = [];
  const commands: Snippet[] = [];
  const lines = markdown.split('\n');
  let fence: { marker: string; lang: string; start: number; body: string[] } | undefined;
  let prose: string[] = [];
  const flushProse = (endLine: number): void => {
    const text = prose.join('\n');
    const firstLine = endLine - prose.length + 1;
    for (const m of text.matchAll(/(`+)((?:(?!\1)[\s\S])+?)\1/g)) {
      const line = firstLine + text.slice(0, m.index).split('\n').length - 1;
      spans.push({ line, text: (m[2] ?? '').replace(/\s+/g, ' ').trim() });
    }
    prose = [];
  };
  lines.forEach((line, index) => {
    const open = /^\s*(`{3,}|~{3,})\s*([\w-]*)/.exec(line);
    if (fence === undefined && open) {
      flushProse(index);
      fence = { marker: open[1] as string, lang: (open[2] ?? '').toLowerCase(), start: index + 1, body: [] };
      return;
    }
    if (fence !== undefined) {
      if (/^\s*(`{3,}|~{3,})\s*$/.test(line) && line.trim().startsWith(fence.marker)) {
        if (SHELL.has(fence.lang)) {
          const prompted = fence.body.some((l) => l.startsWith('$ '));
          fence.body.forEach((l, i) => {
            if (prompted && !l.startsWith('$ ')) return;
            commands.push({ line: fence!.start + i + 1, text: l.replace(/^\$ /, '').replace(/(^|\s)#.*$/, '') });
          });
        }
        fence = undefined;
      } else fence.body.push(line);
      return;
    }
    if (line.trim() === '') flushProse(index);
    else prose.push(line);
  });
  flushProse(lines.length);
  return { spans, commands };
}

/** The words after `intake` (or `node .../dist/cmd/intake.js`) where it is the command run, up to a pipe or `&&`. */
export function intakeInvocations(text: string): string[][] {
  const found: string[][] = [];
  const start = /(?:^|\$ |npx |-- |&& |; |\| )(?:intake|node (?:--\S+ )*\S*dist\/cmd\/intake\.js)(?=\s|$)/g;
  for (const m of text.matchAll(start)) {
    const rest = text.slice((m.index ?? 0) + m[0].length);
    const words = rest.split(/\s+(?:&&|;|\|(?!\|))\s+|\s+#/)[0] ?? '';
    found.push(
      words
        .split(/\s+/)
        .map((w) => w.replace(/^\[|\]$/g, ''))
        .filter((w) => w !== '' && w !== '...' && w !== '\\'),
    );
  }
  return found;
}

const optionNamed = (command: Command, flag: string): Option | undefined =>
  command
    .createHelp()
    .visibleOptions(command)
    .find((o) => o.long === flag || o.short === flag);

/** What is wrong with one invocation: a command or a flag the program does not have. */
export function invocationProblems(program: Command, words: string[]): string[] {
  const problems: string[] = [];
  let command = program;
  let path = 'intake';
  let positional = false;
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string;
    if (word.startsWith('-')) {
      const flag = word.split('=')[0] as string;
      if (flag === '-' || flag === '--') continue;
      const option = optionNamed(command, flag);
      if (!option) {
        problems.push(`${path} has no option ${flag}`);
        if (!word.includes('=') && !(words[i + 1] ?? '-').startsWith('-')) i++; // what may be its value
      } else if ((option.required || option.optional) && !word.includes('=')) i++; // its value
      continue;
    }
    if (positional) continue;
    // `list|replay`, `list\|replay` (in a table): each must be a subcommand.
    const names = word.split(/\\?\|/).filter(Boolean);
    const subs = names.map((n) => command.commands.find((c) => c.name() === n || c.aliases().includes(n)));
    if (command.commands.length > 0 && subs.every((s) => s !== undefined)) {
      if (subs.length === 1) {
        command = subs[0] as Command;
        path = `${path} ${command.name()}`;
        continue;
      }
      // Alternatives: each checks the rest of the line on its own.
      return [
        ...problems,
        ...names.flatMap((n) =>
          invocationProblems(program, [...path.split(' ').slice(1), n, ...words.slice(i + 1)]).filter(
            (p) => !problems.includes(p),
          ),
        ),
      ];
    }
    if (command.commands.length > 0 && command.registeredArguments.length === 0) {
      problems.push(`${path} has no command ${word}`);
      return problems;
    }
    positional = true;
  }
  return problems;
}

/**
 * The ingester admin listener's paths a text names: bare, or in a URL on the admin port 8081. A
 * placeholder segment (`<name>`) stays in the path; served() reads it as a parameter.
 */
const ADMIN_PATH =
  /(?:^|[\s`'"(]|:8081)((?:\/healthz|\/readyz|\/metrics|\/deadletter|\/status\/|\/destinations|\/inspector)(?:[\w/.:-]|<[\w-]+>)*)/g;
/** Paths of other servers the docs name that share a prefix with the admin listener's. */
const NOT_ADMIN = new Set([
  '/metrics/job/bench', // the benchmarks' Pushgateway-style metric pushes to the ingest port
]);

export const adminPaths = (text: string): string[] =>
  [...text.matchAll(ADMIN_PATH)].map((m) => (m[1] as string).replace(/[.]$/, '')).filter((p) => !NOT_ADMIN.has(p));

/**
 * Whether the admin listener serves `path` by GET or POST: as written, or with placeholders and any
 * other segments after the first as parameters (`/destinations/tickets/pause` is served by
 * `/destinations/:name/pause`), or as the start of such a path (`/inspector` names
 * `/inspector/:namespace/:integration`).
 */
export function served(app: { hasRoute(o: { method: string; url: string }): boolean }, path: string): boolean {
  const segments = path.split('/').slice(1);
  for (const under of ['', '/:u1', '/:u1/:u2']) {
    for (let mask = 0; mask < 1 << Math.max(segments.length - 1, 0); mask++) {
      const url = `/${segments
        .map((s, i) => (i > 0 && (/^<.*>$/.test(s) || (mask >> (i - 1)) & 1) ? `:p${i}` : s))
        .join('/')}${under}`;
      if (['GET', 'POST'].some((method) => app.hasRoute({ method, url }))) return true;
    }
  }
  return false;
}

async function adminListener() {
  const app = buildAdminServer({
    registry: new Registry(),
    series: new SeriesStore({ ttlMs: 60_000, maxSeriesTotal: 10, maxSeriesPerNamespace: 10 }),
    lifecycle: { ready: true, closing: false },
    logger: pino({ level: 'silent' }),
    activity: {} as ActivityRecorder,
  });
  registerDeliveryStatus(app, undefined);
  // As ingester/main.ts: the dead-letter routes on the same listener (nothing is called here).
  registerDeadLetterEndpoints(app, {
    leaseMs: 1000,
    logger: pino({ level: 'silent' }),
  } as unknown as DeadLetterEndpointsOptions);
  registerDestinationEndpoints(app, undefined);
  registerInspectorEndpoints(app, {} as InspectorEndpointsOptions);
  await app.ready();
  return app;
}

describe('the CLI the docs show', () => {
  const program = buildProgram();

  it('finds the invocations in code spans and shell blocks', () => {
    const found = pages().flatMap((file) => {
      const { spans, commands } = codeSnippets(readFileSync(join(ROOT, file), 'utf8'));
      return [...spans, ...commands].flatMap((s) => intakeInvocations(s.text));
    });
    expect(found.length).toBeGreaterThan(20);
    expect(found).toEqual(expect.arrayContaining([['status'], expect.arrayContaining(['deadletter', 'list'])]));
  });

  it.each(pages())('%s: every intake command and flag exists', (file) => {
    const { spans, commands } = codeSnippets(readFileSync(join(ROOT, file), 'utf8'));
    const problems = [...spans, ...commands].flatMap((s) =>
      intakeInvocations(s.text).flatMap((words) =>
        invocationProblems(program, words).map((p) => `${file}:${s.line}: \`${s.text}\`: ${p}`),
      ),
    );
    expect(problems).toEqual([]);
  });
});

describe('the admin paths the docs name', () => {
  it.each(pages())('%s: each is served by the admin listener', async (file) => {
    const app = await adminListener();
    try {
      const { spans, commands } = codeSnippets(readFileSync(join(ROOT, file), 'utf8'));
      const missing = [...spans, ...commands].flatMap((s) =>
        adminPaths(s.text)
          .filter((path) => !served(app, path))
          .map((url) => `${file}:${s.line}: ${url}`),
      );
      expect(missing).toEqual([]);
    } finally {
      await app.close();
    }
  });
});

describe("the ingester's --admin-listen help", () => {
  const help = (buildProgram().commands.find((c) => c.name() === 'ingester') as Command).options.find(
    (o) => o.long === '--admin-listen',
  )?.description as string;
  const named = adminPaths(help);

  it('names only paths the admin listener serves', async () => {
    const app = await adminListener();
    try {
      expect(named.length).toBeGreaterThan(4);
      expect(named.filter((path) => !served(app, path))).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('names every path the docs name (or the one it is under)', () => {
    const documented = new Set(pages().flatMap((file) => adminPaths(readFileSync(join(ROOT, file), 'utf8'))));
    const covered = (path: string): boolean => named.some((n) => path === n || path.startsWith(`${n}/`));
    expect(documented.size).toBeGreaterThan(10);
    expect([...documented].filter((p) => !covered(p))).toEqual([]);
  });
});

describe('the checker itself', () => {
  it('knows a path the admin listener does not serve', async () => {
    const app = await adminListener();
    try {
      expect(app.hasRoute({ method: 'POST', url: '/deadletter/replay' })).toBe(true);
      expect(app.hasRoute({ method: 'GET', url: '/status/activity' })).toBe(true);
      expect(app.hasRoute({ method: 'GET', url: '/deadletters' })).toBe(false);
      expect(app.hasRoute({ method: 'GET', url: '/status/nope' })).toBe(false);
      expect(served(app, '/destinations/tickets/pause')).toBe(true);
      expect(served(app, '/destinations/<name>/resume')).toBe(true);
      expect(served(app, '/inspector/<namespace>/<integration>/<id>/replay')).toBe(true);
      expect(served(app, '/deadletter/replays/0b7d/cancel')).toBe(true);
      expect(served(app, '/destinations/tickets/stop')).toBe(false);
      expect(served(app, '/destinations/deadletter/replay')).toBe(false);
      expect(served(app, '/inspector')).toBe(true);
      expect(served(app, '/inspectors')).toBe(false);
    } finally {
      await app.close();
    }
  });

  const program = buildProgram();
  const check = (text: string): string[] =>
    intakeInvocations(text).flatMap((words) => invocationProblems(program, words));

  it('accepts what the CLI has, however the docs write it', () => {
    expect(check('intake status -o json --admin-url http://127.0.0.1:8081')).toEqual([]);
    expect(check('node dist/cmd/intake.js deadletter list --kind=mapping --integration checker')).toEqual([]);
    expect(check('kubectl exec deploy/x -- node /app/dist/cmd/intake.js deadletter list --kind delivery')).toEqual([]);
    expect(check('intake deadletter list\\|replay --kind delivery')).toEqual([]);
    expect(check('intake operator cleanup --namespace NS [--lease-name intake-operator]')).toEqual([]);
    expect(check('intake console --help')).toEqual([]);
    expect(check('helm install intake charts/intake -n intake-system')).toEqual([]);
  });

  it('reports a command or flag the CLI does not have', () => {
    expect(check('intake stauts')).toEqual(['intake has no command stauts']);
    expect(check('intake deadletter list --kinds mapping')).toEqual(['intake deadletter list has no option --kinds']);
    expect(check('intake deadletter --kind delivery')).toEqual(['intake deadletter has no option --kind']);
    expect(check('intake version --json')).toEqual(['intake version has no option --json']);
    expect(check('intake deadletter list|purge')).toEqual(['intake deadletter has no command list|purge']);
    // Options after a subcommand are the subcommand's: cleanup has no --public-base-url.
    expect(check('intake operator cleanup --public-base-url https://x')).toEqual([
      'intake operator cleanup has no option --public-base-url',
    ]);
  });

  it('reads spans across lines, shell blocks, and only the prompted lines of a session', () => {
    const page = [
      'Use `intake deadletter',
      'list --id <id>` here.',
      '',
      '```sh',
      'intake status   # or: intake nope',
      '```',
      '```',
      '$ intake version -o yaml',
      'intake console: open http://x',
      '```',
      '```yaml',
      'args: [intake, nope]',
      '```',
    ].join('\n');
    const { spans, commands } = codeSnippets(page);
    expect(spans).toEqual([{ line: 1, text: 'intake deadletter list --id <id>' }]);
    expect(commands.map((c) => [c.line, c.text.trim()])).toEqual([
      [5, 'intake status'],
      [8, 'intake version -o yaml'],
    ]);
  });

  it('finds admin paths, bare or on the admin port, and not other paths', () => {
    expect(
      adminPaths(
        'GET /readyz, curl http://127.0.0.1:8081/deadletter?kind=delivery and `/metrics/ingested`. /v1/integrations/metrics /var/lib/intake/deadletter',
      ),
    ).toEqual(['/readyz', '/deadletter', '/metrics/ingested']);
    expect(
      adminPaths(
        '`POST /destinations/<name>/pause`, GET /inspector/<namespace>/<integration>[/<id>], /etc/intake/destinations/x, test/e2e/destinations/',
      ),
    ).toEqual(['/destinations/<name>/pause', '/inspector/<namespace>/<integration>']);
  });
});
