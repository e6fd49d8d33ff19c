/**
 * Text a sender controls, made inert before a person reads it (docs/design.md §4b, rule 4).
 *
 * A User-Agent, a JSON key in a refused body, a mapping's `$error` text or a receiver's answer ends
 * up in activity records, `status`, conditions, logs, CLI tables and the console. Raw, it could
 * clear the reader's terminal, recolour or hide text, set the window title or write the clipboard
 * (ESC, BEL, OSC 52, the one-byte C1 CSI 0x9b), break a line to forge one of intake's own, or
 * reorder what is shown (bidi overrides, as in "Trojan Source"). So every character of these
 * Unicode categories is replaced by its escape, visible and harmless (`\x1b`, `\u202e`):
 *
 * - Cc: C0 controls (tab and newline included), DEL and the C1 controls;
 * - Cf: format characters: the bidi embeddings, overrides, isolates and marks, zero-width spaces
 *   and joiners, the BOM, the invisible tag characters;
 * - Zl, Zp: the line and paragraph separators (line breaks to some renderers);
 * - Cs: a surrogate with no partner (not a character at all).
 *
 * Escaping rather than deleting keeps what the sender did visible ("tags.\x1b[2J" says a key held
 * an escape sequence), and the result holds only printable text, so escaping again changes nothing.
 */

/** One character a reader's screen may act on, rather than show. */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;
const UNSAFE_ALL = new RegExp(UNSAFE.source, 'gu');

const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0');

/** `\x1b` for a code point below 0x100, `\u202e` for one in the BMP, `\u{e0041}` beyond. */
function escapeCodePoint(char: string): string {
  const cp = char.codePointAt(0) as number;
  if (cp < 0x100) return `\\x${hex(cp, 2)}`;
  if (cp < 0x10000) return `\\u${hex(cp, 4)}`;
  return `\\u{${hex(cp, 5)}}`;
}

/**
 * `text` with every control, format, separator and lone surrogate character escaped, then cut to
 * at most `maxChars` UTF-16 units (the last one `…` when cut; a surrogate pair is never split).
 * Anything that is not a string (a hand-edited status) becomes
 * its String() first.
 */
export function inertText(text: unknown, maxChars = Number.POSITIVE_INFINITY): string {
  let out = typeof text === 'string' ? text : text === undefined || text === null ? '' : String(text);
  if (UNSAFE.test(out)) out = out.replace(UNSAFE_ALL, escapeCodePoint);
  return bounded(out, maxChars);
}

/** Whether `text` holds nothing a screen acts on (what inertText leaves). */
export const isInert = (text: string): boolean => !UNSAFE.test(text);

function bounded(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  if (maxChars < 1) return '';
  let end = maxChars - 1;
  // Never leave half of a surrogate pair at the end.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

/** In JSON text, outside strings there is only ASCII: these can only be inside strings. */
const UNSAFE_IN_JSON = /[\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;
const UNSAFE_IN_JSON_ALL = new RegExp(UNSAFE_IN_JSON.source, 'gu');

const jsonEscape = (char: string): string => {
  let out = '';
  for (let i = 0; i < char.length; i++) out += `\\u${hex(char.charCodeAt(i), 4)}`;
  return out;
};

/**
 * JSON text (JSON.stringify's, pretty or not) safe to print: the characters JSON.stringify leaves
 * raw that a screen acts on (DEL, the C1 controls, format characters, separators) as `\uXXXX`
 * escapes. The same JSON value, so a program reading it sees no difference; C0 controls are
 * already escaped by JSON.stringify, and the newlines and spaces of pretty printing are kept.
 */
export function inertJson(json: string): string {
  return UNSAFE_IN_JSON.test(json) ? json.replace(UNSAFE_IN_JSON_ALL, jsonEscape) : json;
}
