/**
 * What a command that lists or shows prints: `-o table` (the default, for people), `-o json` or
 * `-o yaml` (the same value, for programs). Every form is inert (common/sender-text.ts): whatever a
 * sender wrote reaches the terminal as visible escapes, never as a character it acts on.
 */
import type { Scalar } from 'yaml';
import { inertJson } from '../common/sender-text.js';
import { yamlPackage } from '../common/yaml-package.js';
import type { OutputFormat } from './options.js';

/** A character a screen may act on (as sender-text.ts), newline excepted (YAML escapes it itself in double quotes). */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;
const UNSAFE_ALL = new RegExp(UNSAFE.source, 'gu');

const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0');

/** YAML's double-quoted escapes: \x1b, \u202e, \U000e0041. */
function yamlEscape(char: string): string {
  const cp = char.codePointAt(0) as number;
  if (cp < 0x100) return `\\x${hex(cp, 2)}`;
  if (cp < 0x10000) return `\\u${hex(cp, 4)}`;
  return `\\U${hex(cp, 8)}`;
}

/**
 * `value` as YAML a terminal shows as it is: every string (key or value) holding such a character
 * is written double-quoted, where YAML has escapes, and each such character is escaped. The YAML
 * still reads back as `value`.
 */
export function inertYaml(value: unknown): string {
  const { Document, visit } = yamlPackage();
  const doc = new Document(value);
  visit(doc, {
    Scalar(_key, node: Scalar) {
      if (typeof node.value === 'string' && UNSAFE.test(node.value)) node.type = 'QUOTE_DOUBLE';
    },
  });
  // No folding: a long line stays one line, so no escape is cut.
  const text = doc.toString({ lineWidth: 0 });
  // Only double-quoted scalars can still hold one (above), and there an escape means the same.
  return text.replace(UNSAFE_ALL, (char) => (char === '\n' ? char : yamlEscape(char)));
}

/** `value` printed in `format`; `table` renders the table (its text inert already). */
export function formatted(format: OutputFormat, value: unknown, table: () => string): string {
  if (format === 'json') return `${inertJson(JSON.stringify(value, null, 2))}\n`;
  if (format === 'yaml') return inertYaml(value);
  return table();
}

/** Columns padded to the widest cell, two spaces apart (kubectl's table). */
export function columns(rows: string[][]): string {
  const widths = (rows[0] ?? []).map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
