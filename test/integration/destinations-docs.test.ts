/**
 * docs/destinations.md as a team reads it, against a real kube-apiserver: the quick start's
 * commands and YAML, taken from the page itself (only the namespace and the receiver's URL are
 * swapped for the test's), give a Ready destination, a dry run that answers what the page shows,
 * and critical events delivered to the team's receiver with the Secret's password while the rest
 * go to the platform's default destination. And every Kubernetes object the page shows is one the
 * API server accepts (`kubectl apply --dry-run=server`).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { parseAllDocuments } from 'yaml';
import { apply, kubectl, ROOT, type Proc, webhookReady } from './support/cluster.js';
import { operatorSuite } from './support/suite.js';
import { startTeamDeliveryPath } from './support/team-destinations.js';
import { waitFor } from '../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../e2e/support/event-receiver.js';

jest.setTimeout(90_000);

const PAGE = readFileSync(join(ROOT, 'docs/destinations.md'), 'utf8');
/** The namespace, the receiver's URL and the platform's namespace as the page writes them. */
const DOC_NAMESPACE = 'team-a';
const DOC_URL = 'https://tickets.team-a.example.com/hooks/intake';

/** The code blocks of a section (from its heading to the next of the same level), dedented. */
function blocksOf(section: string): Array<{ lang: string; text: string }> {
  const start = PAGE.indexOf(`\n## ${section}\n`);
  if (start < 0) throw new Error(`no section "${section}" in docs/destinations.md`);
  const end = PAGE.indexOf('\n## ', start + 1);
  return blocksIn(PAGE.slice(start, end < 0 ? undefined : end));
}

function blocksIn(markdown: string): Array<{ lang: string; text: string }> {
  const out: Array<{ lang: string; text: string }> = [];
  let open: { indent: number; lang: string; lines: string[] } | undefined;
  for (const line of markdown.split('\n')) {
    const fence = /^(\s*)```(\w*)\s*$/.exec(line);
    if (fence && !open) open = { indent: fence[1]!.length, lang: fence[2]!, lines: [] };
    else if (fence && open) {
      out.push({ lang: open.lang, text: open.lines.join('\n') });
      open = undefined;
    } else if (open) open.lines.push(line.slice(open.indent));
  }
  return out;
}

const suite = operatorSuite('team-a');
const { system } = suite;
const [team] = suite.tenants;
const dir = mkdtempSync(join(tmpdir(), 'intake-it-dest-docs-'));
let ingester: Proc;
let teamReceiver: EventReceiver;
let platformReceiver: EventReceiver;

/** The page's text in the test's namespace. */
const inTestNamespace = (text: string): string =>
  text.replaceAll(`-n ${DOC_NAMESPACE}`, `-n ${team}`).replaceAll(`namespace: ${DOC_NAMESPACE}`, `namespace: ${team}`);

beforeAll(async () => {
  teamReceiver = await startEventReceiver();
  platformReceiver = await startEventReceiver();
  // The platform's default destination the quick start's other events go to, named as on the page
  // (an HTTP receiver here: what it is does not matter to the team).
  ingester = await startTeamDeliveryPath(suite, dir, {
    name: 'alertmanager',
    url: platformReceiver.url,
    default: true,
  });
});

afterAll(async () => {
  await teamReceiver?.close();
  await platformReceiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the quick start (a team's own HTTP receiver)", () => {
  const shell = blocksOf("Quick start: a team's own HTTP receiver")
    .filter((b) => b.lang === 'sh')
    .map((b) => b.text)
    .join('\n');

  it('gives a Ready destination and integration with the commands and YAML on the page', async () => {
    const createSecret = /^kubectl create secret generic (\S+) -n \S+ --from-literal=(\w+)='([^']*)'$/m.exec(shell);
    expect(createSecret).not.toBeNull();
    const [, secretName, key, value] = createSecret as RegExpExecArray;
    const created = await kubectl([
      'create',
      'secret',
      'generic',
      secretName!,
      '-n',
      team,
      `--from-literal=${key}=${value}`,
    ]);
    expect(created.stderr).toBe('');

    const yaml = /<<'YAML'\n([\s\S]*?)\nYAML$/m.exec(shell)?.[1];
    expect(yaml).toContain(DOC_URL);
    await apply(inTestNamespace(yaml!).replace(DOC_URL, `${teamReceiver.url}/hooks/intake`));

    await waitFor(
      'Destination Ready',
      async () =>
        (
          await kubectl([
            'get',
            'dest',
            'tickets',
            '-n',
            team,
            '-o',
            'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
          ])
        ).stdout === 'True',
      15_000,
    );
    await waitFor(
      'integration Ready',
      async () => (await webhookReady(team, 'checkout-alerts'))?.status === 'True',
      15_000,
    );
    // The page's `kubectl get dest` shows these columns (their widths follow the values), and this row.
    const columns = (line: string) => line.trim().split(/\s{2,}/);
    const get = await kubectl(['get', 'dest', '-n', team]);
    const [header, row] = get.stdout.split('\n');
    const shownHeaders = shell.split('\n').filter((line) => line.startsWith('NAME '));
    expect(shownHeaders.length).toBeGreaterThan(0);
    for (const shown of shownHeaders) expect(columns(shown)).toEqual(columns(header!));
    expect(row).toMatch(/^tickets\s+True\s+False\s/);
  });

  it('answers the dry run as the page shows, and delivers critical events to the team, the rest to the platform', async () => {
    const secret = async (key: string) =>
      (await kubectl(['get', 'secret', 'intake-webhook-checkout-alerts', '-n', team, '-o', `jsonpath={.data.${key}}`]))
        .stdout;
    const url = Buffer.from(await secret('url'), 'base64')
      .toString('utf8')
      .replace('https://intake.test', ingester.url);
    const authorization = Buffer.from(await secret('authorization'), 'base64').toString('utf8');
    const events = /^EVENTS='(.*)'$/m.exec(shell)?.[1];
    const shownRouting = /dryRun=true.*\n# (\[.*\])$/m.exec(shell)?.[1];
    expect(events).toBeDefined();
    expect(shownRouting).toBeDefined();
    const post = (query = '') =>
      fetch(`${url}${query}`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: events,
      });

    const dryRun = await waitFor(
      'route served',
      async () => {
        const res = await post('?dryRun=true');
        return res.status === 200 ? ((await res.json()) as { routing: unknown }) : undefined;
      },
      15_000,
    );
    expect(dryRun.routing).toEqual(JSON.parse(shownRouting!.replaceAll(`${DOC_NAMESPACE}/`, `${team}/`)));

    const res = await post();
    expect(res.status).toBe(200);
    const toTeam = await waitFor(
      'the critical event at the team receiver',
      async () => teamReceiver.requests.find((r) => r.events.some((e) => e.severity_name === 'critical')),
      15_000,
    );
    const password = /--from-literal=password='([^']*)'/.exec(shell)?.[1];
    expect(toTeam.headers.authorization).toBe(`Basic ${Buffer.from(`intake:${password}`).toString('base64')}`);
    expect(toTeam.events.map((e) => e.severity_name)).toEqual(['critical']);
    const toPlatform = await waitFor(
      'the warning at the platform destination',
      async () => platformReceiver.requests.find((r) => r.events.some((e) => e.severity_name === 'warning')),
      15_000,
    );
    expect(toPlatform.events.map((e) => e.severity_name)).toEqual(['warning']);
    expect(teamReceiver.requests.flatMap((r) => r.events).map((e) => e.severity_name)).toEqual(['critical']);
  });
});

describe("the page's Kubernetes objects", () => {
  it('are all accepted by the API server (kubectl apply --dry-run=server)', async () => {
    const objects = blocksIn(PAGE)
      .flatMap((b) =>
        b.lang === 'yaml'
          ? [b.text]
          : b.lang === 'sh'
            ? [...b.text.matchAll(/<<'YAML'\n([\s\S]*?)\nYAML$/gm)].map((m) => m[1]!)
            : [],
      )
      .filter((text) =>
        parseAllDocuments(text).some((d) => {
          const o = d.toJS() as { apiVersion?: string; kind?: string } | null;
          return Boolean(o?.apiVersion && o.kind);
        }),
      );
    // The quick start's, a team's Destination, the routing rules', With Helm's integration and NetworkPolicy.
    expect(objects.length).toBeGreaterThanOrEqual(5);
    for (const yaml of objects) {
      const r = await kubectl(
        ['apply', '--dry-run=server', '-f', '-'],
        yaml
          .replace(/namespace: (team-a|payments)\b/g, `namespace: ${team}`)
          .replace(/namespace: intake-system\b/g, `namespace: ${system}`),
      );
      expect({ yaml, stderr: r.stderr, code: r.code }).toEqual({ yaml, stderr: '', code: 0 });
    }
  });
});
