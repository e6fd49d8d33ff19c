/**
 * What the native presets need of JSONata's semantics, each function named after the operator or
 * built-in it stands for, so that a preset's native code reads like its expression in presets.ts.
 * Each does exactly what jsonata 2.2 does for the values a parsed JSON body can hold (no functions,
 * no NaN or Infinity), including the quirks: a path step over an array maps over its elements, a
 * sequence of one value is that value, `?:` tests JSONata's truthiness, `$string` rounds numbers to
 * 15 significant digits. The unit tests compare every preset with its expression, so a divergence
 * here shows up there.
 */

export type Json = Record<string, unknown>;

/**
 * What a native preset returns for a body it does not reproduce (an array where the tool sends an
 * object, and JSONata would map the whole expression over it): the engine then runs the preset's
 * JSONata expression, the reference, so the result is the same as ever. No tool sends such a body.
 */
export const REFERENCE = Symbol('evaluate the JSONata expression');
export type NativePreset = (body: unknown) => unknown[] | typeof REFERENCE;

/** Thrown with JSONata's code for the same failure; the engine turns it into a MappingError. */
export const failure = (code: string, message: string): Error => Object.assign(new Error(message), { code });

/** `$assert(condition, message)`: JSONata throws D3141 with the message. */
export function assert(condition: boolean, message: string): void {
  if (!condition) throw failure('D3141', message);
}

/** A built-in called with an argument its signature refuses (a number where a string is due). */
const signatureMismatch = (argument: number, name: string): Error =>
  failure('T0410', `Argument ${argument} of function "${name}" does not match function signature`);

/** JSONata's boolean cast, which `?:`, `? :`, `and` and `or` apply. */
export function truthy(v: unknown): boolean {
  if (v === undefined || v === null || v === false) return false;
  if (typeof v === 'string') return v.length > 0;
  if (typeof v === 'number') return v !== 0;
  if (Array.isArray(v)) return v.some(truthy);
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

/** `a ?: b ?: c`: the first truthy value, else the last one (which may be falsy or nothing). */
export const elvis = (...values: unknown[]): unknown => values.find(truthy) ?? values[values.length - 1];

/** `a ?? b`: a unless it is nothing (null is something). */
export const coalesce = <T, U>(a: T | undefined, b: U): T | U => (a === undefined ? b : a);

/**
 * `$string(v)`: strings as they are; anything else as JSON with every non-integer number rounded
 * to 15 significant digits (0.1 + 0.2 gives "0.3"); nothing stays nothing.
 */
export function string(v: unknown): string | undefined {
  if (v === undefined || typeof v === 'string') return v;
  if (typeof v === 'number') return JSON.stringify(roundNumber(v));
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  return JSON.stringify(v, (_key, value: unknown) => (typeof value === 'number' ? roundNumber(value) : value));
}
const roundNumber = (n: number): number => (Number.isInteger(n) ? n : Number(n.toPrecision(15)));

/** `a & b & ...`: each operand as `$string` gives it, nothing as "". */
export function concat(...parts: unknown[]): string {
  let out = '';
  for (const p of parts) if (p !== undefined) out += string(p) as string;
  return out;
}

/** `$lowercase(v)` (or `$uppercase`): nothing stays nothing; anything but a string is refused. */
export function lowercase(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw signatureMismatch(1, 'lowercase');
  return v.toLowerCase();
}
export function uppercase(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw signatureMismatch(1, 'uppercase');
  return v.toUpperCase();
}

/** `$replace(v, pattern, replacement)` with a string pattern: every occurrence. */
export function replace(v: unknown, pattern: string, replacement: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw signatureMismatch(1, 'replace');
  return v.split(pattern).join(replacement);
}

/**
 * `$lookup(table, key)` on a table the preset defines: the key's own value ("toString" or
 * "constructor" find nothing, as in JSONata); nothing for nothing; a key that is not a string is refused.
 */
export function lookup<T>(table: Readonly<Record<string, T>>, key: unknown): T | undefined {
  if (key === undefined) return undefined;
  if (typeof key !== 'string') throw signatureMismatch(2, 'lookup');
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/** Drops undefined members, as JSONata leaves them out of the objects it builds. */
export function defined(o: Json): Json {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

/**
 * A path of field names, `a.b.c` (or `$v.b.c` with `root` the variable's value), as JSONata
 * evaluates it. Through objects (the shape every tool sends) it is plain member access, a member
 * being an own property; an array on the way takes JSONata's route (pathOverArrays).
 */
export function path(root: unknown, ...keys: string[]): unknown {
  let v = root;
  for (const key of keys) {
    if (v === null || typeof v !== 'object') return undefined;
    if (Array.isArray(v)) return pathOverArrays(root, keys, false);
    v = Object.hasOwn(v, key) ? (v as Json)[key] : undefined;
  }
  // The last step's value, an array included, is the result as it is.
  return v;
}

/** `a.b[0]`: as path(), with the index applied to the last step's value (a non-array is its own [0]). */
export function pathFirst(root: unknown, ...keys: string[]): unknown {
  let v = root;
  for (const key of keys) {
    if (v === null || typeof v !== 'object') return undefined;
    if (Array.isArray(v)) return pathOverArrays(root, keys, true);
    v = Object.hasOwn(v, key) ? (v as Json)[key] : undefined;
  }
  return Array.isArray(v) ? (v[0] as unknown) : v;
}

/*
 * JSONata's path evaluation (evaluatePath, evaluateStep, lookup and the sequence collapse at the
 * end of evaluate in jsonata 2.2), for the rare payload with an array where the tool sends an
 * object: each step maps over every value the previous one gave, flattening arrays one level into
 * a "sequence"; a sequence of one value becomes that value, of none nothing; but an array that is
 * the last step's only value is kept as it is ([1] stays [1]).
 */
const SEQUENCE = Symbol('jsonata sequence');
type Sequence = unknown[] & { [SEQUENCE]?: true };

function sequence(...items: unknown[]): Sequence {
  const s: Sequence = items;
  s[SEQUENCE] = true;
  return s;
}
const isSequence = (v: unknown): boolean => Array.isArray(v) && (v as Sequence)[SEQUENCE] === true;

/** JSONata's `lookup`: an object's own member; over an array, every element's, flattened one level. */
function lookupMember(input: unknown, key: string): unknown {
  if (Array.isArray(input)) {
    const out = sequence();
    for (const item of input) {
      const found = lookupMember(item, key);
      if (found === undefined) continue;
      if (Array.isArray(found)) for (const v of found as unknown[]) out.push(v);
      else out.push(found);
    }
    return out;
  }
  if (input !== null && typeof input === 'object' && Object.hasOwn(input, key)) return (input as Json)[key];
  return undefined;
}

/** What evaluate() does last with any value: a sequence of none is nothing, of one its value. */
function collapse(v: unknown): unknown {
  if (!isSequence(v)) return v;
  const s = v as Sequence;
  return s.length === 0 ? undefined : s.length === 1 ? s[0] : s;
}

/** A `[0]` stage (evaluateFilter with a number): the first item; an array item is the result itself. */
function firstItem(res: unknown): unknown[] {
  const item: unknown = Array.isArray(res) ? res[0] : res;
  if (item === undefined) return sequence();
  return Array.isArray(item) ? item : sequence(item);
}

function pathOverArrays(root: unknown, keys: readonly string[], firstOfLast: boolean): unknown {
  let input: readonly unknown[] = Array.isArray(root) ? root : [root];
  let output: unknown[] = sequence();
  for (let i = 0; i < keys.length; i++) {
    const last = i === keys.length - 1;
    const results: unknown[] = [];
    for (const item of input) {
      let res = collapse(lookupMember(item, keys[i] as string));
      if (last && firstOfLast) res = firstItem(res);
      if (res !== undefined) results.push(res);
    }
    if (last && results.length === 1 && Array.isArray(results[0]) && !isSequence(results[0])) {
      output = results[0] as unknown[];
    } else {
      output = sequence();
      for (const res of results) {
        if (Array.isArray(res)) for (const v of res as unknown[]) output.push(v);
        else output.push(res);
      }
    }
    if (output.length === 0) break;
    input = output;
  }
  return collapse(output);
}
