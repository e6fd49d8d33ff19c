/**
 * A fast reader for the plain YAML that config files are made of: block mappings and sequences,
 * plain and simply quoted scalars, one-line flow collections of scalars, `|` literal blocks and
 * comments. The `yaml` package needs about 2.5 s of CPU and a few hundred MiB of syntax tree for
 * a file of 20,000 routes (docs/benchmarks.md); this reads the same file in a fraction of that and
 * builds nothing but the result.
 *
 * It answers only when it is sure: anything it does not fully understand (anchors, tags, folded or
 * kept blocks, escapes, multi-line plain scalars, tabs, documents markers, a scalar the core schema
 * would read as anything but a string, a decimal integer, a decimal fraction, a boolean or null,
 * a duplicate key, ...) makes it return undefined, and the caller parses the text with `yaml`,
 * which also gives the error messages. test/unit/plain-yaml.test.ts checks it gives what `yaml`
 * gives wherever it answers.
 */

import { flatCopy } from './flat-string.js';

/** Thrown inside the reader when the text is not (only) plain YAML; never leaves this module. */
class NotPlain extends Error {}

const KEY = /^([A-Za-z_][A-Za-z0-9_./-]*):(?:[ ]+(.*))?$/;
/** Words the core schema reads as something other than a string, or that `yaml` treats specially. */
const SPECIAL_KEYS = new Set(['true', 'false', 'null', 'True', 'False', 'Null', 'TRUE', 'FALSE', 'NULL', '__proto__']);
const DECIMAL_INT = /^-?(?:0|[1-9][0-9]{0,14})$/;
const DECIMAL_FRACTION = /^-?(?:0|[1-9][0-9]{0,14})\.[0-9]{1,15}$/;
/** Plain scalars the core schema resolves to numbers, infinities, NaN, or null/booleans in other spellings. */
const OTHER_CORE = [
  /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/,
  /^[-+]?0[oxOX]/,
  /^[-+]?\.(?:inf|Inf|INF|nan|NaN|NAN)$/,
  /^(?:True|TRUE|False|FALSE|Null|NULL|~)$/,
];
/** A string the core schema leaves a string: starts with no indicator, holds no comment or `: `. */
const BLOCK_STRING = /^[A-Za-z0-9_./][^\t#]*$/;
const FLOW_STRING = /^[A-Za-z0-9_./][^\t#,[\]{}]*$/;

/** The value of `text`, or undefined when it is not plain YAML (then parse it with `yaml`). */
export function parsePlainYaml(text: string): { value: unknown } | undefined {
  // Tabs, carriage returns, control characters and Unicode line breaks: `yaml` knows their rules.
  // eslint-disable-next-line no-control-regex -- control characters are what it looks for
  if (/[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\uFEFF]/.test(text)) return undefined;
  try {
    return { value: new Reader(text.split('\n')).document() };
  } catch (err) {
    if (err instanceof NotPlain) return undefined;
    throw err;
  }
}

interface Line {
  indent: number;
  /** Without the indentation and the trailing spaces. */
  text: string;
}

class Reader {
  private at = 0;

  constructor(private readonly lines: string[]) {}

  document(): unknown {
    const first = this.peek();
    if (!first || first.indent !== 0) throw new NotPlain();
    const value = this.block(0);
    if (this.peek()) throw new NotPlain();
    return value;
  }

  /** The next line that holds something (not blank, not a comment), without consuming it. */
  private peek(): Line | undefined {
    while (this.at < this.lines.length) {
      const raw = this.lines[this.at] as string;
      const text = raw.trimStart();
      if (text === '' || text.startsWith('#')) {
        this.at++;
        continue;
      }
      if (/^(?:---|\.\.\.)(?:\s|$)/.test(raw) || raw.startsWith('%')) throw new NotPlain();
      return { indent: raw.length - text.length, text: text.trimEnd() };
    }
    return undefined;
  }

  /** A block node whose first line is the next one, at `indent`. */
  private block(indent: number): unknown {
    const line = this.peek() as Line;
    if (isItem(line.text)) return this.sequence(indent);
    if (KEY.test(line.text)) return this.mapping(indent);
    throw new NotPlain();
  }

  private sequence(indent: number): unknown[] {
    const items: unknown[] = [];
    for (let line = this.peek(); line && line.indent === indent && isItem(line.text); line = this.peek()) {
      this.at++;
      const rest = line.text.slice(1);
      const content = rest.trimStart();
      if (content === '' || content.startsWith('#')) {
        items.push(this.nested(indent));
        continue;
      }
      if (isItem(content)) throw new NotPlain();
      const column = indent + 1 + (rest.length - content.length);
      items.push(KEY.test(content) ? this.mapping(column, content) : this.inline(content, indent));
    }
    this.noDeeper(indent);
    return items;
  }

  /** A mapping at `indent`; `first` is its first entry when it began on a sequence item's line. */
  private mapping(indent: number, first?: string): Record<string, unknown> {
    const map: Record<string, unknown> = {};
    let text = first;
    if (text === undefined) {
      text = (this.peek() as Line).text;
      this.at++;
    }
    for (;;) {
      const m = KEY.exec(text);
      if (!m) throw new NotPlain();
      const key = m[1] as string;
      if (SPECIAL_KEYS.has(key) || Object.hasOwn(map, key)) throw new NotPlain();
      const value = m[2] === undefined || m[2].startsWith('#') ? '' : m[2];
      map[key] = value === '' ? this.nested(indent, true) : this.inline(value, indent);
      const next = this.peek();
      if (!next || next.indent < indent) break;
      if (next.indent > indent || isItem(next.text)) throw new NotPlain();
      text = next.text;
      this.at++;
    }
    return map;
  }

  /** The value on the lines after a key or item with nothing after it: a deeper block, or null. */
  private nested(indent: number, sameIndentSequence = false): unknown {
    const next = this.peek();
    if (next && next.indent > indent) return this.block(next.indent);
    if (next && sameIndentSequence && next.indent === indent && isItem(next.text)) return this.sequence(indent);
    return null;
  }

  private noDeeper(indent: number): void {
    const next = this.peek();
    if (next && next.indent > indent) throw new NotPlain();
  }

  /** A value on the same line as its key or dash; `indent` is the parent's, for literal blocks. */
  private inline(text: string, indent: number): unknown {
    const c = text[0];
    if (c === '"' || c === "'") return quoted(text);
    if (c === '{') return flowMapping(text);
    if (c === '[') return flowSequence(text);
    if (c === '|') return this.literal(text, indent);
    return plainScalar(stripComment(text), BLOCK_STRING);
  }

  /** `|` or `|-`: the lines more indented than the parent, newlines kept. */
  private literal(header: string, parent: number): string {
    const chomp = /^\|(-?)(?:[ ]+#.*)?$/.exec(header);
    if (!chomp) throw new NotPlain();
    const first = this.lines[this.at];
    if (first === undefined || first.trim() === '') throw new NotPlain();
    const indent = first.length - first.trimStart().length;
    if (indent <= parent) throw new NotPlain();
    const content: string[] = [];
    let end = this.at;
    for (let i = this.at; i < this.lines.length; i++) {
      const raw = this.lines[i] as string;
      if (raw.trim() === '') {
        if (raw.length > indent) throw new NotPlain();
        content.push('');
        continue;
      }
      if (raw.length - raw.trimStart().length < indent) break;
      content.push(raw.slice(indent));
      end = i + 1;
    }
    content.length = end - this.at;
    this.at = end;
    const body = flatCopy(content.join('\n'));
    return chomp[1] === '-' ? body : `${body}\n`;
  }
}

const isItem = (text: string): boolean => text === '-' || text.startsWith('- ');

/** A plain scalar ends before ` #`. */
function stripComment(text: string): string {
  const hash = text.search(/[ ]#/);
  return (hash < 0 ? text : text.slice(0, hash)).trimEnd();
}

function quoted(text: string): string {
  const m = /^(?:"([^"\\]*)"|'([^']*)')(?:[ ]+#.*|[ ]*)$/.exec(text);
  if (!m) throw new NotPlain();
  return flatCopy((m[1] ?? m[2]) as string);
}

function plainScalar(text: string, strings: RegExp): unknown {
  if (text === 'true') return true;
  if (text === 'false') return false;
  if (text === 'null') return null;
  if (DECIMAL_INT.test(text) || DECIMAL_FRACTION.test(text)) return Number(text);
  if (OTHER_CORE.some((r) => r.test(text))) throw new NotPlain();
  if (!strings.test(text) || text.includes(': ') || text.endsWith(':')) throw new NotPlain();
  return flatCopy(text);
}

/** A flow scalar: quoted or plain, no nesting. */
function flowScalar(text: string): unknown {
  const c = text[0];
  return c === '"' || c === "'" ? quoted(text) : plainScalar(text, FLOW_STRING);
}

function flowParts(text: string, open: string, close: string): string[] {
  const m = new RegExp(`^\\${open}([^{}[\\]#"']*)\\${close}(?:[ ]+#.*|[ ]*)$`).exec(text);
  if (!m) throw new NotPlain();
  const inner = (m[1] as string).trim();
  if (inner === '') return [];
  const parts = inner.split(',').map((p) => p.trim());
  if (parts.some((p) => p === '')) throw new NotPlain();
  return parts;
}

function flowMapping(text: string): Record<string, unknown> {
  const map: Record<string, unknown> = {};
  for (const part of flowParts(text, '{', '}')) {
    const m = KEY.exec(part);
    if (!m || m[2] === undefined) throw new NotPlain();
    const key = m[1] as string;
    if (SPECIAL_KEYS.has(key) || Object.hasOwn(map, key)) throw new NotPlain();
    map[key] = flowScalar(m[2].trim());
  }
  return map;
}

function flowSequence(text: string): unknown[] {
  return flowParts(text, '[', ']').map(flowScalar);
}
