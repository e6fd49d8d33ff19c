/**
 * Regular expressions a tenant writes (routing rules), compiled so that none runs in exponential
 * time. A pattern must be one V8's linear-time engine can run (an RE2-like automaton: no
 * backreferences, no lookahead, no large counted repetitions); compiling it with that engine's
 * `l` flag checks this, and refuses the rest. It then runs on V8's usual engine, which is about ten times faster
 * on the patterns rules use, with V8's fallback on: a match that backtracks more than V8's bound
 * (`--regexp-backtracks-before-fallback`, 50,000 by default) is finished by the linear-time engine
 * instead, so the worst case is that bound plus a linear pass over the value. A pattern is
 * anchored at both ends, as Alertmanager's matchers are, and bounded in length.
 */
import { setFlagsFromString } from 'node:v8';

/** The longest pattern accepted (characters); the route schema and the CRD state the same. */
export const MAX_REGEX_LENGTH = 256;

// Both are read when a RegExp is compiled or first backtracks too much, so setting them here,
// before any rule's is compiled, is enough. The fallback applies to every RegExp of the process:
// one that backtracks past the bound is finished in linear time with the same result, when the
// linear engine can run it, and as before otherwise.
setFlagsFromString('--enable-experimental-regexp-engine');
setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');

/** The flag of the linear-time engine (a variable: linters do not know it). */
const LINEAR = 'l';

export function compileLinear(pattern: string): RegExp {
  if (pattern.length > MAX_REGEX_LENGTH)
    throw new Error(`is longer than ${MAX_REGEX_LENGTH} characters (${pattern.length})`);
  try {
    // Compiled alone first: a pattern such as `a)|(b` is refused instead of escaping the anchors.
    new RegExp(pattern, LINEAR);
    new RegExp(`^(?:${pattern})$`, LINEAR);
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
  return new RegExp(`^(?:${pattern})$`);
}
