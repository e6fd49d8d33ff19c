/**
 * What `-o table|json|yaml` prints (cmd/output.ts) and how the format is chosen (cmd/options.ts):
 * JSON and YAML read back as the same value, and neither carries a character a terminal acts on.
 */
import { parse } from 'yaml';
import { formatted, inertYaml } from '../../../cmd/output.js';
import { outputFormat } from '../../../cmd/options.js';

/** What a screen acts on, a line break aside. */
const ACTS_ON_SCREEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;
const screenText = (text: string): string => text.replace(/\n/g, '');

const hostile = {
  plain: 'ok',
  esc: 'x\u001b[2Jy',
  c1: 'curl\u009b2J',
  bidi: 'evil \u202eUTP',
  separator: 'line\u2028sep',
  tab: 'a\tb',
  newline: 'one\ntwo',
  del: 'del\u007f',
  lone: '\ud800x',
  tag: 'tag\u{e0041}',
  emoji: 'fine 😀',
  list: ['\u001b]52;c;aGk=\u0007', 2, true, null],
  'key\u001b[31m': { 'nested\u202e': 'v' },
  long: `${'word '.repeat(40)}\u001b`,
};

describe('inertYaml', () => {
  it('reads back as the same value', () => {
    expect(parse(inertYaml(hostile))).toEqual(hostile);
  });

  it('holds no character a terminal acts on, in keys or values', () => {
    const text = inertYaml(hostile);
    expect(screenText(text)).not.toMatch(ACTS_ON_SCREEN);
    expect(text).toContain('"x\\e[2Jy"'); // YAML's own escape for ESC
    expect(text).toContain('"evil \\u202eUTP"');
    expect(text).toContain('"tag\\U000e0041"');
    expect(text).toContain('plain: ok');
  });

  it('keeps a value without such characters as YAML writes it', () => {
    expect(inertYaml({ version: '0.1.0', n: 3 })).toBe('version: 0.1.0\nn: 3\n');
  });
});

describe('formatted', () => {
  const table = () => 'TABLE\n';

  it('prints the table for table', () => {
    expect(formatted('table', hostile, table)).toBe('TABLE\n');
  });

  it('prints inert JSON that reads back as the value', () => {
    const json = formatted('json', hostile, table);
    expect(JSON.parse(json)).toEqual(hostile);
    expect(screenText(json)).not.toMatch(ACTS_ON_SCREEN);
  });

  it('prints inert YAML that reads back as the value', () => {
    const yaml = formatted('yaml', hostile, table);
    expect(parse(yaml)).toEqual(hostile);
    expect(screenText(yaml)).not.toMatch(ACTS_ON_SCREEN);
  });
});

describe('outputFormat', () => {
  it('is -o, table by default', () => {
    expect(outputFormat({ output: 'yaml' })).toBe('yaml');
    expect(outputFormat({ output: 'json' })).toBe('json');
    expect(outputFormat({})).toBe('table');
  });
});
