/**
 * The fast reader of plain YAML gives exactly what the `yaml` package gives wherever it answers,
 * and declines (undefined) whatever it does not fully understand, so `yaml` reads that instead.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { parsePlainYaml } from '../../../common/plain-yaml.js';
import { readYamlFile } from '../../../common/config-files.js';
import { ROOT } from '../../support/paths.js';
import { seededRandom } from '../../support/seeded-random.js';

const yamlGives = (text: string): { value: unknown } | { error: true } => {
  try {
    return { value: parse(text, { maxAliasCount: 100 }) };
  } catch {
    return { error: true };
  }
};

/** Whatever the fast reader answers, `yaml` answers the same. */
const expectSameOrDeclined = (text: string): boolean => {
  const plain = parsePlainYaml(text);
  if (plain === undefined) return false;
  expect({ text, ...yamlGives(text) }).toEqual({ text, value: plain.value });
  return true;
};

const FILES = [
  'examples/intake.yaml',
  'examples/jetstream.yaml',
  'examples/mapping.yaml',
  'examples/remote-write.yaml',
  'examples/signed.yaml',
  'examples/intake-alertmanager.yaml',
  'examples/alertmanager.yml',
  'examples/prometheus.yml',
  'charts/intake/values.yaml',
  'charts/intake/Chart.yaml',
  'test/integration/fixtures/destinations.yaml',
];

describe('parsePlainYaml', () => {
  it('reads the example config and a config of many routes as yaml does', () => {
    const example = readFileSync(join(ROOT, 'examples/intake.yaml'), 'utf8');
    expect(expectSameOrDeclined(example)).toBe(true);
    const routes = Array.from(
      { length: 200 },
      (_, i) => `  - apiVersion: intake.dev/v1alpha1
    kind: WebhookIntegration
    name: hook-${i}
    namespace: ns-${i % 7}
    credentials:
      - username: user-${i}
        secret:
          sha256: ${i.toString(16).padStart(64, 'a')}
        notAfter: "2030-01-01T00:00:00Z"
    limits: { eventsPerSecond: ${i + 1}, overLimitStatus: 503 }
    destinations: [am, web]
`,
    ).join('');
    expect(expectSameOrDeclined(`listen: 127.0.0.1:8080\nroutes:\n${routes}`)).toBe(true);
  });

  it("agrees with yaml on the project's own YAML files wherever it answers", () => {
    const answered = FILES.filter((file) => expectSameOrDeclined(readFileSync(join(ROOT, file), 'utf8')));
    expect(answered).toContain('examples/intake.yaml');
  });

  it.each([
    ['a: 1\nb: -2\nc: 0.25\nd: true\ne: false\nf: null\ng:\nh: text with spaces # comment\n'],
    ['a:\n- x\n- y\nb:\n  - 1\n  -\n    c: d\n'],
    ['list:\n  - a: 1\n    b: [x, y]\n  - {}\n  - []\n'],
    ["q: 'single'\nd: \"double\" # c\ne: ''\n"],
    ['m:\n  expression: |\n    $.a\n\n    # not a comment\n  other: |-\n    one\n    two\n\n\nz: 1\n'],
    ['url: http://example.com:9093/api # c\nhost: 127.0.0.1:8080\nwhen: 12:30\n'],
    ['# only a comment\nkey: value\n# trailing\n'],
  ])('reads %j as yaml does', (text) => {
    expect(expectSameOrDeclined(text)).toBe(true);
  });

  it.each([
    ['anchors and aliases', 'a: &x 1\nb: *x\n'],
    ['tags', 'a: !!str 1\n'],
    ['folded blocks', 'a: >\n  x\n'],
    ['kept blocks', 'a: |+\n  x\n\n'],
    ['escapes', 'a: "x\\ny"\n'],
    ['numbers in other spellings', 'a: 0x10\n'],
    ['octal', 'a: 0o17\n'],
    ['leading zeros', 'a: 007\n'],
    ['exponents', 'a: 1e3\n'],
    ['infinity', 'a: .inf\n'],
    ['other spellings of booleans', 'a: True\n'],
    ['the null tilde', 'a: ~\n'],
    ['a duplicate key', 'a: 1\na: 2\n'],
    ['a multi-line plain scalar', 'a: one\n  two\n'],
    ['tabs', 'a:\t1\n'],
    ['CRLF', 'a: 1\r\nb: 2\r\n'],
    ['document markers', '---\na: 1\n'],
    ['a top-level scalar', 'just text\n'],
    ['an empty file', ''],
    ['quoted keys', '"a": 1\n'],
    ['__proto__', '__proto__: 1\n'],
    ['a value with ": "', 'a: b: c\n'],
    ['nested flow collections', 'a: [[1], 2]\n'],
    ['bad indentation', 'a:\n    b: 1\n  c: 2\n'],
  ])('declines %s', (_what, text) => {
    expect(parsePlainYaml(text)).toBeUndefined();
  });

  it('never answers differently from yaml on mutated configs (fuzz, seeded)', () => {
    const random = seededRandom(32);
    const bases = FILES.map((f) => readFileSync(join(ROOT, f), 'utf8').slice(0, 3000));
    const pieces = [
      ' ',
      '  ',
      ':',
      ': ',
      '-',
      '- ',
      '#',
      ' #',
      '"',
      "'",
      '|',
      '|-',
      '\n',
      '\n  ',
      '0',
      '1.5',
      'x',
      '[',
      ']',
      '{',
      '}',
      ',',
      'true',
      'null',
      '~',
      '.',
    ];
    let answered = 0;
    for (let n = 0; n < 3000; n++) {
      let text = bases[Math.floor(random() * bases.length)] as string;
      for (let edits = 1 + Math.floor(random() * 3); edits > 0; edits--) {
        const at = Math.floor(random() * text.length);
        const cut = Math.floor(random() * 3);
        text = text.slice(0, at) + (pieces[Math.floor(random() * pieces.length)] as string) + text.slice(at + cut);
      }
      if (expectSameOrDeclined(text)) answered++;
    }
    // Most mutations still leave plain YAML: the comparison above ran on many of them.
    expect(answered).toBeGreaterThan(500);
  });
});

describe('readYamlFile', () => {
  it('reads a plain file and a file only yaml reads alike', () => {
    const example = join(ROOT, 'examples/intake.yaml');
    expect(readYamlFile(example)).toEqual(parse(readFileSync(example, 'utf8')));
  });
});
