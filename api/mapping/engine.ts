/**
 * Data mapping (docs/design.md §3-4, README "Data mapping"): a JSONata expression, or a shipped preset, that turns a tool's own
 * payload into intake events. Shared by the operator (compile and run spec.mapping.tests before
 * publishing) and the ingester (compile once per route change, evaluate per request).
 *
 * Guardrails are always on. JSONata 2.2 checks stack depth at every node and caps sequence length
 * (and ranges); an exit hook, run after every node, adds the time limit (this evaluation's CPU time) and
 * caps the length of every intermediate string: building a long string is one native call no
 * time check can interrupt (V8 concatenates lazily, so a doubling string is caught long before it
 * is materialised). A single built-in call ($distinct, $pad over a range) is never interrupted by
 * a check between nodes: the ingester and the operator therefore evaluate tenants' expressions in
 * worker processes (worker-pool.ts) that are killed at the limit; presets, which are ours, run
 * here. The output of every evaluation is bounded in events and bytes (measureOutput).
 *
 * Built-in functions are read-only (builtins.ts): one tenant's expression cannot rewrite another's.
 */
import jsonata from 'jsonata';
import { LRUCache } from 'lru-cache';
import { isNativeFunction, lockFunction } from './builtins.js';
import { NATIVE_PRESETS, REFERENCE, type NativePreset } from './native.js';
import { PRESETS, type PresetName } from './presets.js';
import {
  DEFAULT_MAPPING_LIMITS,
  MappingError,
  type CompiledMapping,
  type ExpressionRunner,
  type MappingLimits,
  type MappingResult,
  type MappingSpec,
  type MappingTest,
} from './mapping-model.js';
import { provideMappingEngine } from './mapping-engine-loader.js';

export * from './mapping-model.js';
const EXIT_HOOK = Symbol.for('jsonata.__evaluate_exit');

/**
 * Compiled expressions by source and limits. A routing table is rebuilt on every route change;
 * routes that did not change reuse their compiled expression instead of parsing it again.
 */
const compiled = new LRUCache<string, jsonata.Expression>({ max: 5000 });

export function compileCached(source: string, limits: MappingLimits): jsonata.Expression {
  const key = `${limits.timeoutMs}/${limits.maxDepth}/${limits.maxSequence}/${limits.maxStringLength}\u0000${source}`;
  let expr = compiled.get(key);
  if (!expr) {
    expr = compile(source, limits);
    compiled.set(key, expr);
  }
  return expr;
}

/**
 * Parses the expression (or looks the preset up); throws MappingError on a syntax error or unknown
 * preset. With a runner, a tenant's expression is evaluated there (a worker process); presets always
 * run in this thread.
 */
export function compileMapping(
  spec: MappingSpec,
  limits: MappingLimits = DEFAULT_MAPPING_LIMITS,
  runner?: ExpressionRunner,
): CompiledMapping {
  if ((spec.preset === undefined) === (spec.expression === undefined)) {
    throw new MappingError('INTAKE_MAPPING_SPEC', 'give exactly one of mapping.preset and mapping.expression');
  }
  if (spec.preset !== undefined) {
    const preset = PRESETS[spec.preset as PresetName];
    if (!preset)
      throw new MappingError(
        'INTAKE_UNKNOWN_PRESET',
        `unknown preset ${JSON.stringify(spec.preset)}; known: ${Object.keys(PRESETS).join(', ')}`,
      );
    const label = `preset ${spec.preset}`;
    const native = NATIVE_PRESETS[spec.preset];
    if (native) {
      // The expression, compiled when first needed: for the odd body the function leaves to it (native.ts).
      let reference: jsonata.Expression | undefined;
      return {
        label,
        isolated: false,
        evaluate: async (body) =>
          nativeEvaluate(native, body, limits) ??
          evaluateHere((reference ??= compileCached(preset.expression, limits)), body, limits),
      };
    }
    const expr = compileCached(preset.expression, limits);
    return { label, isolated: false, evaluate: (body) => evaluateHere(expr, body, limits) };
  }
  const source = spec.expression as string;
  // Compiled here in any case: a syntax error is found when the route is built, not per request.
  const expr = compileCached(source, limits);
  if (!runner) return { label: 'expression', isolated: false, evaluate: (body) => evaluateHere(expr, body, limits) };
  return {
    label: 'expression',
    isolated: true,
    evaluate: (body, json, tenant) =>
      runner.run(
        source,
        limits,
        json ?? Buffer.from(JSON.stringify(body) ?? 'null'),
        tenant === undefined ? undefined : { tenant },
      ),
  };
}

/** CPU time of the calling thread, microseconds. */
const threadCpuMicros = (): number => {
  const u = process.threadCpuUsage();
  return u.user + u.system;
};

/** A native preset's evaluation, bounded like any other; undefined when it leaves the body to the expression. */
function nativeEvaluate(native: NativePreset, body: unknown, limits: MappingLimits): MappingResult | undefined {
  const started = threadCpuMicros();
  try {
    const items = native(body);
    if (items === REFERENCE) return undefined;
    const { bytes, parts } = measureOutput(items, limits);
    return { items, cpuMs: (threadCpuMicros() - started) / 1000, outputBytes: bytes, texts: parts };
  } catch (err) {
    throw withCpu(MappingError.from(err), (threadCpuMicros() - started) / 1000);
  }
}

const withCpu = (err: MappingError, cpuMs: number): MappingError => Object.assign(err, { cpuMs });

/**
 * Evaluates in this thread, output measured. The CPU time is this thread's from start to end: on
 * the main thread (presets only) it may include other requests' steps that interleaved.
 */
export async function evaluateHere(
  expr: jsonata.Expression,
  body: unknown,
  limits: MappingLimits,
): Promise<MappingResult> {
  const started = threadCpuMicros();
  try {
    const items = itemsOf(await expr.evaluate(body));
    const { bytes, parts } = measureOutput(items, limits);
    return { items, cpuMs: (threadCpuMicros() - started) / 1000, outputBytes: bytes, texts: parts };
  } catch (err) {
    throw withCpu(MappingError.from(err), (threadCpuMicros() - started) / 1000);
  }
}

/**
 * For a mapping worker: evaluates, output measured, and returns the events as one JSON array's
 * text. No clock is read here: the worker reads its process's CPU time between payloads, which is
 * what it answers with and what the pool's deadline counts (errors are MappingError without cpuMs).
 */
export async function evaluateToJson(
  expr: jsonata.Expression,
  body: unknown,
  limits: MappingLimits,
): Promise<{ json: string; count: number; outputBytes: number }> {
  let items: unknown[];
  try {
    items = itemsOf(await expr.evaluate(body));
  } catch (err) {
    throw MappingError.from(err);
  }
  return eventsAsJson(items, limits);
}

/** Events as one JSON array's text, their output measured (throws past limits.maxOutputBytes). */
export function eventsAsJson(
  items: readonly unknown[],
  limits: MappingLimits,
): { json: string; count: number; outputBytes: number } {
  const { bytes, parts } = measureOutput(items, limits);
  return { json: `[${parts.join(',')}]`, count: items.length, outputBytes: bytes };
}

/** An expression's result as events: nothing, one, or each of an array's. */
const itemsOf = (result: unknown): unknown[] =>
  result === undefined ? [] : Array.isArray(result) ? [...result] : [result];

/**
 * Counts the events and the bytes they take as JSON, one event at a time, and stops at the first
 * one past limits.maxOutputBytes: a field copied into every event (a 900 KB groupKey in 1,000
 * alerts) is refused after a few events instead of being serialised a thousand times. Returns
 * each event's JSON too: a worker sends them instead of serialising again, and the event ids
 * reuse them (MappingResult.texts).
 */
export function measureOutput(items: readonly unknown[], limits: MappingLimits): { bytes: number; parts: string[] } {
  if (items.length > limits.maxEvents) {
    throw new MappingError(
      'INTAKE_EVENT_LIMIT',
      `the mapping produced ${items.length} events; the limit is ${limits.maxEvents} per payload (mapping.maxEvents)`,
    );
  }
  const parts: string[] = [];
  let bytes = 2;
  for (let i = 0; i < items.length; i++) {
    const text = JSON.stringify(items[i]) ?? 'null';
    bytes += Buffer.byteLength(text) + (i > 0 ? 1 : 0);
    if (bytes > limits.maxOutputBytes) {
      throw new MappingError(
        'INTAKE_OUTPUT_LIMIT',
        `the mapped events exceed ${limits.maxOutputBytes} bytes (mapping.maxOutputBytes) at event ${i + 1} of ${items.length}: a field is probably copied into every event`,
      );
    }
    parts.push(text);
  }
  return { bytes, parts };
}

function compile(source: string, limits: MappingLimits): jsonata.Expression {
  let expr: jsonata.Expression;
  try {
    // The time limit is ours (pace, below): JSONata's own counts wall-clock time, which would
    // include the turns other requests take while this evaluation yields.
    expr = jsonata(source, { stack: limits.maxDepth, sequence: limits.maxSequence });
  } catch (err) {
    throw MappingError.from(err);
  }
  const maxString = limits.maxStringLength;
  expr.assign(
    EXIT_HOOK as unknown as string,
    (_node: unknown, _input: unknown, env: { base: SliceState }, result: unknown) => {
      if (typeof result === 'string' && result.length > maxString) {
        throw new MappingError(
          'INTAKE_STRING_LIMIT',
          `a string of ${result.length} characters exceeds the mapping limit of ${maxString}`,
        );
      }
      // A function definition the expression got hold of ($now, $millis: made per expression, and
      // shared by every evaluation of it) is locked before a transform can write into it.
      if (isNativeFunction(result) && Object.isExtensible(result)) lockFunction(result as object);
      return pace(env.base, limits.timeoutMs);
    },
  );
  return expr;
}

/** Per-evaluation bookkeeping, kept on JSONata's execution frame. */
interface SliceState {
  intakeNodes?: number;
  /** When the current slice started: wall clock (ms) and process CPU time (µs). */
  intakeSliceWall?: number;
  intakeSliceCpu?: number;
  /** CPU time used by the slices before this one (µs). */
  intakeUsedCpu?: number;
}

/** An evaluation that has run this long lets the event loop take a turn before it goes on. */
const SLICE_MS = 10;
const CHECK_EVERY_NODES = 256;

// The clock the time limit reads. On the request thread (presets, the file's check) this thread's
// own CPU time: process.cpuUsage() would count every other thread too. A mapping worker process
// evaluates one payload at a time and switches to its whole CPU time (countProcessCpu), as the
// pool that kills it at the limit counts it, so that it stops itself first.
let cpuMicros = threadCpuMicros;

/** CPU time of the whole process (every thread, V8's garbage collector too), microseconds. */
export const processCpuMicros = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** For a mapping worker process: the time limit counts all of this process's threads. */
export function countProcessCpu(): void {
  cpuMicros = processCpuMicros;
}

/**
 * JSONata awaits the exit hook at every node, so returning a promise that settles on setImmediate
 * suspends a long evaluation and lets other requests (and timers) run: a slow or hostile expression
 * slows itself, not the ingester. The time limit counts the CPU time this evaluation's own slices
 * used, so neither concurrent payloads nor a busy machine push a normal evaluation over it.
 * Short evaluations never yield; the clocks are read every 256 nodes.
 */
function pace(state: SliceState, timeoutMs: number): Promise<void> | undefined {
  const nodes = (state.intakeNodes = (state.intakeNodes ?? 0) + 1);
  if (nodes % CHECK_EVERY_NODES !== 0) return undefined;
  const wall = performance.now();
  const cpu = cpuMicros();
  if (state.intakeSliceWall === undefined) {
    state.intakeSliceWall = wall;
    state.intakeSliceCpu = cpu;
    state.intakeUsedCpu = 0;
    return undefined;
  }
  const used = (state.intakeUsedCpu ?? 0) + (cpu - (state.intakeSliceCpu ?? cpu));
  if (used > timeoutMs * 1000)
    throw Object.assign(
      new MappingError('D1012', `Evaluation timeout after ${timeoutMs} milliseconds. Check for infinite loop`),
      { value: timeoutMs },
    );
  if (wall - state.intakeSliceWall < SLICE_MS) return undefined;
  state.intakeUsedCpu = used;
  return new Promise((resolve) =>
    setImmediate(() => {
      state.intakeSliceWall = performance.now();
      state.intakeSliceCpu = cpuMicros();
      resolve();
    }),
  );
}

/**
 * Runs spec.mapping.tests: each input must map to as many events as `expect` lists (an object
 * counts as one), and every field given in an expected event must equal the mapped one (fields not
 * given are not checked). Returns the first failure, described, or undefined when all pass.
 */
export async function runMappingTests(
  spec: MappingSpec,
  limits: MappingLimits = DEFAULT_MAPPING_LIMITS,
  runner?: ExpressionRunner,
): Promise<string | undefined> {
  const mapping = compileMapping(spec, limits, runner);
  const tests = spec.tests ?? [];
  for (let i = 0; i < tests.length; i++) {
    const test = tests[i] as MappingTest;
    let actual: unknown[];
    try {
      actual = (await mapping.evaluate(test.input)).items;
    } catch (err) {
      return `tests[${i}]: ${MappingError.from(err).describe()}`;
    }
    const expected = Array.isArray(test.expect) ? test.expect : [test.expect];
    if (actual.length !== expected.length)
      return `tests[${i}]: expected ${expected.length} event(s), the mapping produced ${actual.length}`;
    for (let j = 0; j < expected.length; j++) {
      const difference = firstDifference(expected[j], actual[j], '');
      if (difference) return `tests[${i}]: event ${j}: ${difference}`;
    }
  }
  return undefined;
}

/** Subset comparison: every key of `expected` must be present in `actual` with an equal value. */
export function firstDifference(expected: unknown, actual: unknown, path: string): string | undefined {
  const where = path || '(event)';
  if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)) {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual))
      return `${where}: expected an object, got ${show(actual)}`;
    for (const key of Object.keys(expected)) {
      const d = firstDifference(
        (expected as Record<string, unknown>)[key],
        (actual as Record<string, unknown>)[key],
        path ? `${path}.${key}` : key,
      );
      if (d) return d;
    }
    return undefined;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length)
      return `${where}: expected ${show(expected)}, got ${show(actual)}`;
    for (let i = 0; i < expected.length; i++) {
      const d = firstDifference(expected[i], actual[i], `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  return Object.is(expected, actual) ? undefined : `${where}: expected ${show(expected)}, got ${show(actual)}`;
}

const show = (v: unknown): string => (v === undefined ? 'nothing' : JSON.stringify(v).slice(0, 200));

/** Compiles and runs the tests; the problem as one message ("S0203 at 9: ..." or "tests[0]: ..."), or undefined. */
export async function checkMapping(
  spec: MappingSpec,
  limits: MappingLimits = DEFAULT_MAPPING_LIMITS,
  runner?: ExpressionRunner,
): Promise<string | undefined> {
  try {
    return await runMappingTests(spec, limits, runner);
  } catch (err) {
    return MappingError.from(err).describe();
  }
}

provideMappingEngine({ compileMapping });
