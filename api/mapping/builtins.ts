/**
 * JSONata's built-in functions are objects shared by every expression in the process (its static
 * frame), and the transform operator writes into whatever its pattern yields: `$ ~> |$uppercase|
 * function($x){"OK"}|` would turn `$uppercase` into a lambda for every tenant until restart.
 * Every built-in definition is locked once, when this module loads (lockFunction), so such a
 * transform fails (a TypeError, a mapping failure of the tenant who wrote it) instead of changing
 * anyone's mapping. The engine's exit hook also locks any other native function definition an
 * expression gets hold of ($now and $millis are made per compiled expression).
 */
import jsonata from 'jsonata';

/** The names jsonata 2.2 binds in its static frame (a unit test compares this list with its source). */
export const BUILTIN_FUNCTIONS = [
  'sum',
  'count',
  'max',
  'min',
  'average',
  'string',
  'substring',
  'substringBefore',
  'substringAfter',
  'lowercase',
  'uppercase',
  'length',
  'trim',
  'pad',
  'match',
  'contains',
  'replace',
  'split',
  'join',
  'formatNumber',
  'formatBase',
  'formatInteger',
  'parseInteger',
  'number',
  'floor',
  'ceil',
  'round',
  'abs',
  'sqrt',
  'power',
  'random',
  'boolean',
  'not',
  'map',
  'zip',
  'filter',
  'single',
  'reduce',
  'sift',
  'keys',
  'lookup',
  'append',
  'exists',
  'spread',
  'merge',
  'reverse',
  'each',
  'error',
  'assert',
  'type',
  'sort',
  'shuffle',
  'distinct',
  'base64encode',
  'base64decode',
  'encodeUrlComponent',
  'encodeUrl',
  'decodeUrlComponent',
  'decodeUrl',
  'eval',
  'toMillis',
  'fromMillis',
  'clone',
  'now',
  'millis',
] as const;

/** Freezes `value` and everything reachable through its own properties (functions included). */
export function deepFreeze(value: unknown, seen = new Set<unknown>()): void {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null || seen.has(value)) return;
  seen.add(value);
  for (const key of Reflect.ownKeys(value)) {
    const descriptor = Reflect.getOwnPropertyDescriptor(value, key);
    if (descriptor && 'value' in descriptor) deepFreeze(descriptor.value, seen);
  }
  Object.freeze(value);
}

/**
 * JSONata itself writes `token` and `position` into a definition at every call (for its error
 * messages), so those two stay writable; everything else is frozen (the implementation and the
 * signature deeply) and no property can be added.
 */
export function lockFunction(definition: object): void {
  for (const key of Reflect.ownKeys(definition)) {
    if (key === 'token' || key === 'position') continue;
    const descriptor = Reflect.getOwnPropertyDescriptor(definition, key);
    if (descriptor && 'value' in descriptor) deepFreeze(descriptor.value);
    Object.defineProperty(definition, key, { writable: false, configurable: false });
  }
  for (const key of ['token', 'position']) {
    const value: unknown = (definition as Record<string, unknown>)[key];
    Object.defineProperty(definition, key, { value, writable: true, enumerable: false, configurable: false });
  }
  Object.preventExtensions(definition);
}

/** A native function definition as JSONata represents it (`{_jsonata_function, implementation, signature}`). */
export const isNativeFunction = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && (value as { _jsonata_function?: unknown })._jsonata_function === true;

async function freezeBuiltins(): Promise<void> {
  // `$name` evaluates to the definition object itself, the one every expression shares.
  const definitions = (await jsonata(`[${BUILTIN_FUNCTIONS.map((n) => `$${n}`).join(', ')}]`).evaluate(
    null,
  )) as unknown[];
  for (const definition of definitions) if (isNativeFunction(definition)) lockFunction(definition as object);
}

// Top-level await: no module that imports this one (the engine) runs before every built-in is frozen.
await freezeBuiltins();
