/**
 * Where a body JSON.parse refused stops being JSON, and what is wrong there, in words of our own.
 *
 * V8's messages quote the input ("Unexpected token 'p', "password=hunter2" is not valid JSON"),
 * and the answer's message is also what the integration's activity records and the operator
 * copies into status.activity, which anyone who may view the resource reads. So the message is
 * built from this scanner's position and a fixed phrase, never from V8's text or the body's.
 *
 * Why a scanner of our own: jsonc-parser (the well-kept candidate) was tried; it names the start
 * of the offending token, not the character V8 stops at, and accepts some texts JSON.parse
 * refuses, so its positions disagreed with the parser that actually refused the body.
 *
 * It runs only on a body the parser refused, after the nesting check (body.ts jsonDepthExceeds),
 * so its recursion is as deep as the body's nesting at most.
 */

export interface JsonSyntaxError {
  /** The offset in the text (UTF-16 code units, as JSON.parse counts them) where it stops being JSON. */
  position: number;
  /** 1-based. */
  line: number;
  column: number;
  /** What is wrong there: a fixed phrase, never a piece of the text. */
  problem: string;
}

class Stop {
  constructor(
    readonly position: number,
    readonly problem: string,
  ) {}
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);
const HEX = /^[0-9a-fA-F]$/;
const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

/** The first syntax error in `text`, or undefined if it is JSON after all. */
export function jsonSyntaxError(text: string): JsonSyntaxError | undefined {
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const stop = (problem: string, at = i): never => {
    throw new Stop(at, problem);
  };
  const expected = (what: string): never => stop(i >= text.length ? 'the body ends too early' : `expected ${what}`);
  const skipWhitespace = (): void => {
    while (i < text.length && WHITESPACE.has(text[i] as string)) i++;
  };

  const literal = (word: string): void => {
    for (const c of word) {
      if (text[i] !== c) expected(`the literal ${word}`);
      i++;
    }
  };
  const digits = (what: string): void => {
    if (!isDigit(text[i])) expected(what);
    while (isDigit(text[i])) i++;
  };
  const number = (): void => {
    if (text[i] === '-') i++;
    if (text[i] === '0') i++;
    else digits('a digit');
    if (text[i] === '.') {
      i++;
      digits('a digit after the decimal point');
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++;
      if (text[i] === '+' || text[i] === '-') i++;
      digits("a digit in the number's exponent");
    }
  };
  const string = (): void => {
    i++; // the opening quote
    for (;;) {
      if (i >= text.length) stop('a string is not closed');
      const c = text[i] as string;
      if (c === '"') {
        i++;
        return;
      }
      if (c < ' ') stop('a control character (such as a line break) inside a string; escape it');
      if (c !== '\\') i++;
      else if (ESCAPES.has(text[i + 1] as string)) i += 2;
      else if (text[i + 1] !== 'u') stop('an invalid escape sequence in a string', i + 1);
      else {
        i += 2;
        for (const end = i + 4; i < end; i++) if (!HEX.test(text[i] ?? '')) stop('an invalid \\u escape in a string');
      }
    }
  };
  /** The items of an array or object up to `close`, separated by commas (the opening one is at i). */
  const items = (close: string, item: () => void, after: string): void => {
    i++;
    skipWhitespace();
    if (text[i] === close) {
      i++;
      return;
    }
    for (;;) {
      item();
      skipWhitespace();
      if (text[i] === close) {
        i++;
        return;
      }
      if (text[i] !== ',') expected(`',' or '${close}' after ${after}`);
      i++;
    }
  };
  const member = (): void => {
    skipWhitespace();
    if (text[i] !== '"') expected('a property name in double quotes');
    string();
    skipWhitespace();
    if (text[i] !== ':') expected("':' after a property name");
    i++;
    value();
  };
  function value(): void {
    skipWhitespace();
    const c = text[i];
    if (c === '{') items('}', member, 'a property value');
    else if (c === '[') items(']', value, 'an array element');
    else if (c === '"') string();
    else if (c === '-' || isDigit(c)) number();
    else if (c === 't') literal('true');
    else if (c === 'f') literal('false');
    else if (c === 'n') literal('null');
    else expected('a JSON value (an object, array, string, number, true, false or null)');
  }

  try {
    value();
    skipWhitespace();
    if (i < text.length) stop('more after the JSON value (a body holds one value)');
    return undefined;
  } catch (err) {
    if (!(err instanceof Stop)) throw err;
    const before = text.slice(0, err.position);
    const line = before.split('\n').length;
    return { position: err.position, line, column: err.position - before.lastIndexOf('\n'), problem: err.problem };
  }
}
