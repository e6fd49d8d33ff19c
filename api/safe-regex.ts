/**
 * Regular expressions a tenant writes (routing rules), compiled so that none can burn CPU: V8's
 * linear-time engine (the `l` flag, an RE2-like automaton without backtracking) runs each match in
 * time linear in the value, and refuses, at compile time, what it cannot run that way
 * (backreferences, lookahead, large counted repetitions). A pattern is anchored at both ends, as Alertmanager's matchers are,
 * and bounded in length, so the automaton stays small.
 */
import { setFlagsFromString } from 'node:v8';

/** The longest pattern accepted (characters); the route schema and the CRD state the same. */
export const MAX_REGEX_LENGTH = 256;

// The engine is behind a V8 flag; it is read when a RegExp with the `l` flag is compiled, so
// setting it here, before any is, is enough. Every other RegExp keeps the usual engine.
setFlagsFromString('--enable-experimental-regexp-engine');

/** The flag of the linear-time engine (a variable: linters do not know it). */
const LINEAR = 'l';

export function compileLinear(pattern: string): RegExp {
  if (pattern.length > MAX_REGEX_LENGTH)
    throw new Error(`is longer than ${MAX_REGEX_LENGTH} characters (${pattern.length})`);
  try {
    // Compiled alone first: a pattern such as `a)|(b` is refused instead of escaping the anchors.
    new RegExp(pattern, LINEAR);
    return new RegExp(`^(?:${pattern})$`, LINEAR);
  } catch (err) {
    const message = (err as Error).message;
    if (/linear time/.test(message))
      throw new Error(
        `cannot be matched in linear time (backreferences, lookahead and large counted repetitions are not allowed): ${JSON.stringify(pattern)}`,
        { cause: err },
      );
    throw new Error(`is not a valid regular expression: ${message.replace(/^Invalid regular expression: /, '')}`, {
      cause: err,
    });
  }
}
