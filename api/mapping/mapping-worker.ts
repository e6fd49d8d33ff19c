/**
 * A mapping worker: a process (started for worker-pool.ts by its spawner, worker-spawner.ts, under
 * SCHED_IDLE where chrt is available; connected to the pool by a socket, worker-launcher.ts) that evaluates one tenant's expression at a time on the payload's JSON bytes and
 * answers with the events as JSON bytes and the CPU time the evaluation used. Payloads come in
 * batches (one message of one or more, one tenant's); they are evaluated in order and answered
 * together, in one message. The pool kills this
 * process when an evaluation runs past its limit, or V8 ends it at its heap cap
 * (--max-old-space-size); a new one takes its place.
 *
 *   node mapping-worker.js <why-not-idle>
 *
 * The argument is what the pool says when it could not start the worker under SCHED_IDLE (the
 * worker then lowers itself to nice 19 and reports it).
 */
import type { Expression } from 'jsonata';
import type { DirectMapping } from './direct.js';
import type { MappingError as EvaluationError, MappingLimits } from './engine.js';
import { connect } from 'node:net';
import { FrameReader, writeFrame } from './frames.js';
import {
  addressFromEnv,
  WORKER_ID_ENV,
  WORKER_SOCKET_ENV,
  WORKER_TOKEN_ENV,
  type WorkerHello,
} from './worker-connection.js';
import { settleWorkerPriority, type WorkerPriority } from './worker-priority.js';

const priority = settleWorkerPriority(process.argv[2] ?? 'not started through chrt');
const { compileCached, countProcessCpu, eventsAsJson, evaluateToJson, MappingError, processCpuMicros } =
  await import('./engine.js');
const { directMapping } = await import('./direct.js');
const { RULES_TASK, evaluateRulesTask } = await import('../routing-rules-task.js');
countProcessCpu();

/** An expression a batch's payloads are evaluated with: its source and limits, sent once per batch. */
export interface WorkerExpression {
  source: string;
  limits: MappingLimits;
}

/** One evaluation: its expression (an index into the batch's expressions) and the payload as UTF-8 JSON. */
export interface WorkerTask {
  id: number;
  expression: number;
  json: Uint8Array;
}

/**
 * What the pool sends: payloads to evaluate in this order. Each distinct expression goes once,
 * not once per payload: the batch's payloads mostly share one (one tenant's, often one integration's).
 */
export interface WorkerTasks {
  expressions: WorkerExpression[];
  tasks: WorkerTask[];
}

/** What the pool sends when another tenant waits: stop the batch after the payload being evaluated. */
export interface WorkerYield {
  yield: true;
}

/**
 * One payload's answer; the events as JSON text (a string crosses the channel for less than
 * bytes: no buffer to allocate on either side, no encoding here or decoding there).
 */
export type WorkerReply =
  | { id: number; ok: true; json: string; count: number; cpuMs: number; outputBytes: number }
  | { id: number; ok: false; code: string; message: string; position?: number; token?: string; cpuMs: number };

/** A batch's answers; every message carries the worker's whole CPU time so far, ms (the pool's deadline counts from it). */
export interface WorkerAnswers {
  replies: WorkerReply[];
  processCpuMs: number;
}

/** Sent once the worker has loaded the engine. */
export interface WorkerReady {
  ready: true;
  processCpuMs: number;
  /** What the worker runs under (the pool reports anything short of SCHED_IDLE once). */
  priority: WorkerPriority;
}

const socketAddress = process.env[WORKER_SOCKET_ENV];
if (!socketAddress)
  throw new Error('mapping-worker.js is started by the mapping pool (worker-launcher.ts), which says where to connect');
// Connected to the pool; its id and token say which worker this is (and are nobody else's business).
const socket = connect({ path: addressFromEnv(socketAddress) });
socket.setNoDelay(true);
const send = (message: WorkerAnswers | WorkerReady): void => writeFrame(socket, message);
writeFrame(
  socket,
  {
    id: Number(process.env[WORKER_ID_ENV]),
    token: process.env[WORKER_TOKEN_ENV] ?? '',
    pid: process.pid,
  } satisfies WorkerHello,
  'json',
);
delete process.env[WORKER_TOKEN_ENV];

const utf8 = new TextDecoder('utf-8');

/** Set by a yield message: the batch under way stops after its current payload. */
let yieldAsked = false;

const reader = new FrameReader((m) => {
  const message = m as WorkerTasks | WorkerYield;
  if ('yield' in message) {
    yieldAsked = true;
    return;
  }
  // A yield meant for an earlier batch (it crossed that batch's answers) does not stop this one.
  yieldAsked = false;
  void evaluateAll(message).then(({ replies, processCpuMs }) =>
    send({ replies, processCpuMs } satisfies WorkerAnswers),
  );
}, Number.MAX_SAFE_INTEGER);
socket.on('data', (chunk: Buffer) => reader.push(chunk));
// The pool closed the socket (or is gone): nothing more to do.
socket.on('close', () => process.exit(0));
socket.on('error', () => process.exit(0));
send({ ready: true, priority, processCpuMs: processCpuMicros() / 1000 } satisfies WorkerReady);

/** A batch's expression, ready to run: compiled once per batch (a JSONata one), or a routing rules task. */
type Prepared =
  | { kind: 'rules'; source: string }
  | { kind: 'jsonata'; expr: Expression; limits: MappingLimits; direct: DirectMapping | undefined };

/**
 * The batch in order; those after a yield are left out (the pool queues them again). The process's
 * CPU time is read once between payloads: the end of one is the start of the next (a payload is
 * charged the turn of the event loop before it too), and the last reading is the batch's answer's.
 */
async function evaluateAll(batch: WorkerTasks): Promise<WorkerAnswers> {
  // Read before the expressions are prepared: a compilation (a new expression) is charged to the first payload.
  let cpuMicros = processCpuMicros();
  const prepared: (Prepared | EvaluationError)[] = batch.expressions.map(prepare);
  const replies: WorkerReply[] = [];
  for (const task of batch.tasks) {
    // A turn of the event loop between payloads, so that a yield message can arrive.
    if (replies.length > 0) await new Promise((resolve) => setImmediate(resolve));
    if (yieldAsked) break;
    const reply = await evaluate(task, prepared[task.expression]);
    const now = processCpuMicros();
    reply.cpuMs = (now - cpuMicros) / 1000;
    replies.push(reply);
    cpuMicros = now;
  }
  return { replies, processCpuMs: cpuMicros / 1000 };
}

/** Compiles a batch's expression once (from the cache, after the first batch); a syntax error fails its payloads. */
function prepare(e: WorkerExpression): Prepared | EvaluationError {
  if (e.source.startsWith(RULES_TASK)) return { kind: 'rules', source: e.source };
  try {
    const expr = compileCached(e.source, e.limits);
    return { kind: 'jsonata', expr, limits: e.limits, direct: directMapping(expr, e.limits) };
  } catch (err) {
    return MappingError.from(err);
  }
}

/** One payload's answer; its cpuMs is filled in by the caller, which reads the clock. */
async function evaluate(task: WorkerTask, expression: Prepared | EvaluationError | undefined): Promise<WorkerReply> {
  try {
    if (expression === undefined) throw new MappingError('INTAKE_EVALUATION', 'the payload names no expression');
    if (expression instanceof MappingError) throw expression;
    // An integration's routing rules (routing-rules-task.ts), not an expression.
    if (expression.kind === 'rules') {
      const answer = evaluateRulesTask(expression.source, utf8.decode(task.json));
      return {
        id: task.id,
        ok: true,
        json: answer.json,
        count: answer.count,
        outputBytes: Buffer.byteLength(answer.json),
        cpuMs: 0,
      };
    }
    // The ingester already refused bodies that are not JSON or nest too deep.
    const body: unknown = JSON.parse(utf8.decode(task.json));
    // The simplest expressions without JSONata's interpreter, the same result (direct.ts).
    const items = expression.direct?.(body);
    if (items) return { id: task.id, ok: true, ...eventsAsJson(items, expression.limits), cpuMs: 0 };
    const result = await evaluateToJson(expression.expr, body, expression.limits);
    return { id: task.id, ok: true, ...result, cpuMs: 0 };
  } catch (err) {
    const e = MappingError.from(err);
    return {
      id: task.id,
      ok: false,
      code: e.code,
      message: e.message,
      ...(e.position !== undefined ? { position: e.position } : {}),
      ...(e.token !== undefined ? { token: e.token } : {}),
      cpuMs: 0,
    };
  }
}
