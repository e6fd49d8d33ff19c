/**
 * What the ingester needs of data mapping before any mapping is compiled: the settings, the
 * errors it answers with, and the shapes of a compiled mapping and of its runner. Kept apart from
 * engine.ts, which loads JSONata (a few MiB of RSS), so that an ingester with no mapped route
 * never loads it (mapping-engine-loader.ts).
 */
export interface MappingSpec {
  preset?: string;
  expression?: string;
  tests?: MappingTest[];
}

export interface MappingTest {
  input: unknown;
  expect: unknown;
}

/** Set by the platform team in the ingester settings (`mapping:`), never by tenants. */
export interface MappingLimits {
  /** Evaluation time per request, milliseconds. */
  timeoutMs: number;
  /** Nesting depth of evaluation (recursion). */
  maxDepth: number;
  /** Items in any one sequence, including ranges such as [1..n]. */
  maxSequence: number;
  /** Characters in any one intermediate string. */
  maxStringLength: number;
  /** Bytes of the events one payload maps to, as JSON (amplification: a field copied into every event). */
  maxOutputBytes: number;
  /** Events one payload may map to (an Alertmanager group is one notification, however many alerts). */
  maxEvents: number;
}

export const DEFAULT_MAPPING_LIMITS: MappingLimits = {
  timeoutMs: 500,
  maxDepth: 500,
  maxSequence: 100_000,
  maxStringLength: 4 * 1024 * 1024,
  maxOutputBytes: 4 * 1024 * 1024,
  maxEvents: 10_000,
};

/**
 * Guardrail error codes: JSONata's own (timeout, depth, range, sequence) and ours (string, stack,
 * heap, output bytes and events).
 */
export const GUARDRAIL_CODES = new Set([
  'D1011',
  'D1012',
  'D2014',
  'D2015',
  'INTAKE_STRING_LIMIT',
  'INTAKE_STACK_LIMIT',
  'INTAKE_MEMORY_LIMIT',
  'INTAKE_OUTPUT_LIMIT',
  'INTAKE_EVENT_LIMIT',
]);

/** A mapping that failed to compile or evaluate, with JSONata's error code and position. */
export class MappingError extends Error {
  readonly code: string;
  readonly position?: number;
  readonly token?: string;
  /** CPU time the failed evaluation used (ms), when known: charged like a successful one. */
  cpuMs?: number;
  constructor(code: string, message: string, position?: number, token?: string) {
    super(message);
    this.name = 'MappingError';
    this.code = code;
    if (position !== undefined) this.position = position;
    if (token !== undefined) this.token = token;
  }

  get guardrail(): boolean {
    return GUARDRAIL_CODES.has(this.code);
  }

  /** "S0203 at 9: Expected "}" before end of expression" */
  describe(): string {
    return `${this.code}${this.position !== undefined ? ` at ${this.position}` : ''}: ${this.message}`;
  }

  static from(err: unknown): MappingError {
    if (err instanceof MappingError) return err;
    const e = (err ?? {}) as JsonataError;
    const inEval = fromEval(e);
    if (inEval) return inEval;
    const message = typeof e.message === 'string' ? e.message : String(err);
    // V8's own limits surface as plain errors (RangeError: Invalid string length, stack overflow).
    const code =
      typeof e.code === 'string' ? e.code : err instanceof RangeError ? rangeErrorCode(message) : 'INTAKE_EVALUATION';
    return new MappingError(
      code,
      withoutPayloadValues(code, message, e).slice(0, 500),
      typeof e.position === 'number' ? e.position : undefined,
      typeof e.token === 'string' ? e.token : undefined,
    );
  }
}

/**
 * $eval wraps whatever its expression threw in D3120 (syntax) or D3121 (evaluation), with the
 * original as `error`. A guardrail hit inside $eval (the time limit the worker checks at every
 * node, depth, sequence, string length) is the guardrail's own error, not the expression's:
 * without this a runaway $eval was reported as D3121 instead of D1012. Any other error keeps
 * D3121/D3120 and says what the inner expression did (its message redacted like any other).
 */
function fromEval(e: JsonataError): MappingError | undefined {
  if ((e.code !== 'D3120' && e.code !== 'D3121') || e.error === undefined || e.error === null) return undefined;
  const inner = MappingError.from(e.error);
  if (inner.guardrail) return inner;
  const what =
    e.code === 'D3120'
      ? 'Syntax error in expression passed to function eval'
      : 'Dynamic error evaluating the expression passed to function eval';
  return new MappingError(
    e.code,
    `${what}: ${inner.describe()}`.slice(0, 500),
    typeof e.position === 'number' ? e.position : undefined,
    typeof e.token === 'string' ? e.token : undefined,
  );
}

interface JsonataError {
  /** What $eval's expression threw (D3120, D3121). */
  error?: unknown;
  code?: unknown;
  message?: unknown;
  position?: unknown;
  token?: unknown;
  /** The values an evaluation error is about, which JSONata writes into the message as JSON. */
  value?: unknown;
  value2?: unknown;
}

/**
 * JSONata writes the values an evaluation stumbled on into its message ("Unable to cast value to
 * a number: "hunter2""). Those come from the payload, and the message reaches the sender's
 * answer, the dead letter's reason and the integration's activity, which anyone who may view the
 * resource reads: a string, object or array quoted is replaced by what kind of value it was
 * (a number, boolean or null is left: it says little and helps). A compile error's (S0...) values
 * are pieces of the expression, not of a payload, and stay.
 */
function withoutPayloadValues(code: string, message: string, e: JsonataError): string {
  if (code.startsWith('S')) return message;
  let out = message;
  for (const value of [e.value, e.value2]) {
    if (value === null || (typeof value !== 'string' && typeof value !== 'object')) continue;
    let quoted: string | undefined;
    try {
      quoted = JSON.stringify(value);
    } catch {
      continue;
    }
    if (quoted) out = out.split(quoted).join(typeof value === 'string' ? '(a string)' : '(an object or array)');
  }
  return out;
}

function rangeErrorCode(message: string): string {
  if (/call stack/i.test(message)) return 'INTAKE_STACK_LIMIT';
  if (/string length/i.test(message)) return 'INTAKE_STRING_LIMIT';
  return 'INTAKE_EVALUATION';
}

/** What one evaluation produced, and what it cost (per-tenant CPU budgets are charged with cpuMs). */
export interface MappingResult {
  /** Always an array of what the mapping produced (one event or many). */
  items: unknown[];
  /** CPU time the evaluation used, milliseconds. */
  cpuMs: number;
  /** Size of `items` as JSON, bytes (at most limits.maxOutputBytes). */
  outputBytes: number;
  /**
   * Each item as JSON (JSON.stringify), when this thread measured it: the events' content ids
   * reuse it instead of serialising every item a second time (ingester/core/event-id.ts).
   */
  texts?: readonly string[];
}

export interface CompiledMapping {
  /** What the route said: "preset alertmanager" or "expression". */
  readonly label: string;
  /** True when evaluations run in a worker (a tenant's expression with a runner). */
  readonly isolated: boolean;
  /**
   * Evaluates against a parsed body. `json`, when given, is the UTF-8 JSON the body was parsed
   * from: an isolated evaluation hands these bytes to the worker instead of serialising `body`
   * again. `tenant`: whose evaluation it is (the route's namespace), for the runner's shares and
   * turns. Rejects with a MappingError (its cpuMs set when known), or a MappingBusy when the
   * workers' queue (or the tenant's share of it) is full.
   */
  evaluate(body: unknown, json?: Uint8Array, tenant?: string): Promise<MappingResult>;
}

/** Evaluates tenants' expressions away from the caller's thread (worker-pool.ts). */
export interface ExpressionRunner {
  /** `options.tenant`: whose evaluation it is; the runner's shares and turns are per tenant. */
  run(source: string, limits: MappingLimits, json: Uint8Array, options?: { tenant?: string }): Promise<MappingResult>;
}

/** The workers cannot take more right now (queue full in count or bytes): retry later, nothing is wrong with the payload. */
export class MappingBusy extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
    this.name = 'MappingBusy';
  }
}
