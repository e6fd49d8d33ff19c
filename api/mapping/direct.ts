/**
 * Expressions of the simplest shape, evaluated without JSONata's interpreter: an object
 * constructor whose keys are string literals and whose values are literals, field paths (`host`,
 * `labels.severity`) or object constructors of the same shape. It is the shape most custom
 * mappings of single events take (fields renamed, constants added), and JSONata spends on it some
 * fifteen µs of promises and frames, most of a mapping worker's CPU time per event: measured, the
 * worker took as much time per event as the whole unmapped request.
 *
 * It runs where the expression would (in the mapping worker, after the same reservation, within
 * the same deadline), and gives exactly JSONata's result, or leaves the payload to JSONata: the
 * shape is checked once per expression against a list of the AST's fields it understands, and at
 * each evaluation anything JSONata treats specially (a body that is not an object, an array met
 * on a path, whose sequences JSONata flattens and unwraps; a string past maxStringLength, which
 * JSONata refuses) hands the payload back (undefined) for JSONata to evaluate as before.
 *
 * JSONata's rules it follows: a path step reads an own property of an object only (anything else:
 * nothing); a key whose value is nothing is left out of the object; null is a value; the object
 * made has no prototype.
 */
import type jsonata from 'jsonata';
import type { MappingLimits } from './mapping-model.js';

/** The body's events (one object), or undefined: JSONata evaluates this payload. */
export type DirectMapping = (body: unknown) => unknown[] | undefined;

/** What one node gives for an item: its value, nothing (undefined), or GIVE_UP. */
type Value = (item: Record<string, unknown>) => unknown;

const GIVE_UP = Symbol('give up');

/** JSONata's depth guardrail counts nodes; the shapes here are shallow, so a tiny maxDepth is left to it. */
const MIN_DEPTH = 64;

interface AstNode {
  type?: unknown;
  value?: unknown;
  steps?: unknown;
  lhs?: unknown;
}

const compiled = new WeakMap<jsonata.Expression, DirectMapping | null>();

/** The direct evaluation of `expr` under `limits`, when it has the shape; undefined otherwise. Cached per expression. */
export function directMapping(expr: jsonata.Expression, limits: MappingLimits): DirectMapping | undefined {
  let direct = compiled.get(expr);
  if (direct === undefined) {
    direct = build(expr.ast() as AstNode, limits) ?? null;
    compiled.set(expr, direct);
  }
  return direct ?? undefined;
}

function build(ast: AstNode, limits: MappingLimits): DirectMapping | undefined {
  if (limits.maxDepth < MIN_DEPTH) return undefined;
  const root = objectOf(ast, limits.maxStringLength);
  if (!root) return undefined;
  return (body) => {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
    const event = root(body as Record<string, unknown>);
    return event === GIVE_UP ? undefined : [event];
  };
}

/** Only these fields, each of a node of this type (position is where it was in the source). */
const hasOnly = (node: object, fields: readonly string[]): boolean =>
  Object.keys(node).every((k) => k === 'position' || fields.includes(k));

const isObjectNode = (node: unknown): node is AstNode =>
  node !== null && typeof node === 'object' && !Array.isArray(node);

/** `{"k": v, ...}`: keys string literals, each once; values of the shapes below. */
function objectOf(node: AstNode, maxString: number): Value | undefined {
  if (node.type !== 'unary' || node.value !== '{' || !hasOnly(node, ['type', 'value', 'lhs'])) return undefined;
  if (!Array.isArray(node.lhs)) return undefined;
  const keys: string[] = [];
  const values: Value[] = [];
  for (const pair of node.lhs as unknown[]) {
    if (!Array.isArray(pair) || pair.length !== 2) return undefined;
    const [key, value] = pair as [unknown, unknown];
    if (!isObjectNode(key) || key.type !== 'string' || typeof key.value !== 'string') return undefined;
    if (!hasOnly(key, ['type', 'value']) || key.value.length > maxString) return undefined;
    // JSONata refuses a key given twice (D1009) and its own flags' names (D1013): left to it.
    if (keys.includes(key.value) || key.value === '_jsonata_lambda' || key.value === '_jsonata_function')
      return undefined;
    const v = isObjectNode(value) ? valueOf(value, maxString) : undefined;
    if (!v) return undefined;
    keys.push(key.value);
    values.push(v);
  }
  return (item) => {
    // As JSONata makes it: without a prototype (a key `__proto__` is a key like any other).
    const out = Object.create(null) as Record<string, unknown>;
    for (let i = 0; i < keys.length; i++) {
      const v = (values[i] as Value)(item);
      if (v === GIVE_UP) return GIVE_UP;
      if (v !== undefined) out[keys[i] as string] = v;
    }
    return out;
  };
}

function valueOf(node: AstNode, maxString: number): Value | undefined {
  switch (node.type) {
    case 'string':
      if (typeof node.value !== 'string' || node.value.length > maxString || !hasOnly(node, ['type', 'value']))
        return undefined;
      return constant(node.value);
    case 'number':
      if (typeof node.value !== 'number' || !Number.isFinite(node.value) || !hasOnly(node, ['type', 'value']))
        return undefined;
      return constant(node.value);
    case 'value':
      if (![true, false, null].includes(node.value as boolean | null) || !hasOnly(node, ['type', 'value']))
        return undefined;
      return constant(node.value);
    case 'path':
      return pathOf(node, maxString);
    case 'unary':
      return objectOf(node, maxString);
    default:
      return undefined;
  }
}

const constant =
  (value: unknown): Value =>
  () =>
    value;

/**
 * `a.b.c`: names only (no predicate, wildcard, variable, function or index). JSONata checks every
 * step's result against maxStringLength: a string past it, at any step, is left to it.
 */
function pathOf(node: AstNode, maxString: number): Value | undefined {
  if (!hasOnly(node, ['type', 'steps']) || !Array.isArray(node.steps) || node.steps.length === 0) return undefined;
  const names: string[] = [];
  for (const step of node.steps as unknown[]) {
    if (!isObjectNode(step) || step.type !== 'name' || typeof step.value !== 'string') return undefined;
    if (!hasOnly(step, ['type', 'value'])) return undefined;
    names.push(step.value);
  }
  return (item) => {
    let at: unknown = item;
    for (const name of names) {
      // An array on the way (or at the end) is a sequence to JSONata: flattened, a singleton unwrapped.
      if (Array.isArray(at)) return GIVE_UP;
      if (at === null || typeof at !== 'object' || !Object.hasOwn(at, name)) return undefined;
      at = (at as Record<string, unknown>)[name];
      if (typeof at === 'string' && at.length > maxString) return GIVE_UP;
    }
    return Array.isArray(at) ? GIVE_UP : at;
  };
}
