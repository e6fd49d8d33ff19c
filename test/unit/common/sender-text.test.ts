/** The sanitiser of sender text: nothing a terminal or a browser acts on survives, and the text stays readable. */
import { inertJson, inertText, isInert } from '../../../common/sender-text.js';

/** Every character a screen may act on rather than show; none may be left in inert text. */
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const ACTS_ON_SCREEN = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/u;

describe('inertText', () => {
  it('escapes ESC and BEL: a screen clear, a colour, a window title', () => {
    const key = 'tags.\x1b[2J\x1b[31mred\x1b]0;pwned\x07';
    const got = inertText(key);
    expect(got).toBe('tags.\\x1b[2J\\x1b[31mred\\x1b]0;pwned\\x07');
    expect(got).not.toMatch(ACTS_ON_SCREEN);
  });

  it('escapes OSC 52 (writes the clipboard), with either terminator', () => {
    const osc52 = '\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07 and \x1b]52;c;AAAA\x1b\\';
    const got = inertText(osc52);
    expect(got).not.toMatch(ACTS_ON_SCREEN);
    expect(got).toBe('\\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\x07 and \\x1b]52;c;AAAA\\x1b\\');
  });

  it('escapes the one-byte C1 CSI 0x9b (a header decoded as latin1) and every other C1 control, and DEL', () => {
    const ua = Buffer.from([0x63, 0x75, 0x72, 0x6c, 0x9b, 0x32, 0x4a, 0x85, 0x7f]).toString('latin1');
    expect(inertText(ua)).toBe('curl\\x9b2J\\x85\\x7f');
    for (let c = 0x80; c <= 0x9f; c++) expect(isInert(inertText(String.fromCharCode(c)))).toBe(true);
  });

  it('escapes line breaks and tabs, so one field cannot forge a second line of output', () => {
    expect(inertText('ok\n2026-11-24T07:01:13Z  default/demo  401 from intake: rotate now\r\t')).toBe(
      'ok\\x0a2026-11-24T07:01:13Z  default/demo  401 from intake: rotate now\\x0d\\x09',
    );
    expect(inertText('a\u2028b\u2029c')).toBe('a\\u2028b\\u2029c');
  });

  it('escapes bidi embeddings, overrides, isolates and marks, which make text lie about its order', () => {
    const bidi = ['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069'];
    for (const c of [...bidi, '\u200e', '\u200f', '\u061c']) expect(inertText(`a${c}b`)).toMatch(/^a\\u[0-9a-f]{4}b$/);
    // "evil.exe" shown as "exe.live" by a right-to-left override
    expect(inertText('invoice\u202eexe.pdf')).toBe('invoice\\u202eexe.pdf');
  });

  it('escapes invisible characters (zero-width space, BOM, tag characters) and lone surrogates', () => {
    expect(inertText('in\u200btake')).toBe('in\\u200btake');
    expect(inertText('\ufeffx')).toBe('\\ufeffx');
    expect(inertText('\u{e0041}\u{e0042}')).toBe('\\u{e0041}\\u{e0042}');
    expect(inertText('a\ud800b\udc00')).toBe('a\\ud800b\\udc00');
  });

  it('leaves printable text alone: ASCII, accents, CJK, emoji', () => {
    for (const text of ['Alertmanager/0.28.1', 'Grafana «alerting» ü', '告警 サーバー', 'pager 🚨 bot', ''])
      expect(inertText(text)).toBe(text);
  });

  it('is idempotent: escaping twice changes nothing', () => {
    const once = inertText('\x1b[2J\u009b\u202e\n');
    expect(inertText(once)).toBe(once);
  });

  it('bounds the length after escaping, marks the cut, and never splits a surrogate pair', () => {
    const long = inertText('\x1b'.repeat(1000), 256);
    expect(long).toHaveLength(256);
    expect(long.endsWith('…')).toBe(true);
    expect(inertText('x'.repeat(256), 256)).toBe('x'.repeat(256));
    expect(inertText('x'.repeat(257), 256)).toBe(`${'x'.repeat(255)}…`);
    const emoji = inertText('😀'.repeat(200), 256);
    expect(emoji.length).toBeLessThanOrEqual(256);
    // No lone surrogate at the end: the text encodes to UTF-8 and back unchanged.
    expect(Buffer.from(emoji, 'utf8').toString('utf8')).toBe(emoji);
    expect(inertText('abc', 0)).toBe('');
  });

  it('takes anything: a number, undefined or null from a report of another version', () => {
    expect(inertText(undefined)).toBe('');
    expect(inertText(null)).toBe('');
    expect(inertText(42)).toBe('42');
  });
});

describe('inertJson', () => {
  it('escapes what JSON.stringify leaves raw (C1, DEL, bidi, separators) and keeps the same value', () => {
    const value = { ua: 'x\u009b2J\x7f\u202e\u2028\u{e0041}', key: '\x1b[2J', nested: ['\u2066'] };
    const json = JSON.stringify(value, null, 2);
    expect(json).toMatch(/\u009b/);
    const got = inertJson(json);
    expect(got).not.toMatch(/[\u007f-\u009f\u202a-\u202e\u2028\u2066\u{e0000}-\u{e007f}]/u);
    expect(JSON.parse(got)).toEqual(value);
    // Pretty printing's newlines and indentation are structure, and stay.
    expect(got.split('\n').length).toBe(json.split('\n').length);
  });

  it('returns clean JSON as it is', () => {
    const json = JSON.stringify({ a: 'Alertmanager/0.28.1', b: [1, 2] });
    expect(inertJson(json)).toBe(json);
  });
});
