/**
 * A mapping worker: a child process (started by worker-pool.ts, under SCHED_IDLE where chrt is
 * available) that evaluates one tenant's expression at a time on the payload's JSON bytes and
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
import type { MappingLimits } from './engine.js';
import { settleWorkerPriority, type WorkerPriority } from './worker-priority.js';

const priority = settleWorkerPriority(process.argv[2] ?? 'not started through chrt');
const { compileCached, countProcessCpu, evaluateHere, MappingError, processCpuMicros } = await import('./engine.js');
const { RULES_TASK, evaluateRulesTask } = await import('../routing-rules-task.js');
countProcessCpu();

/** One evaluation: the expression, its limits and the payload as UTF-8 JSON. */
export interface WorkerTask {
  id: number;
  source: string;
  limits: MappingLimits;
  json: Uint8Array;
}

/** What the pool sends: payloads to evaluate in this order. */
export interface WorkerTasks {
  tasks: WorkerTask[];
}

/** What the pool sends when another tenant waits: stop the batch after the payload being evaluated. */
export interface WorkerYield {
  yield: true;
}

/** One payload's answer. */
export type WorkerReply =
  | { id: number; ok: true; json: Uint8Array; count: number; cpuMs: number; outputBytes: number }
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

const send = process.send?.bind(process);
if (!send) throw new Error('mapping-worker.js runs as a child process with an IPC channel (worker-pool.ts starts it)');

const utf8 = new TextDecoder('utf-8');
const utf8Encoder = new TextEncoder();

/** Set by a yield message: the batch under way stops after its current payload. */
let yieldAsked = false;

process.on('message', (message: WorkerTasks | WorkerYield) => {
  if ('yield' in message) {
    yieldAsked = true;
    return;
  }
  // A yield meant for an earlier batch (it crossed that batch's answers) does not stop this one.
  yieldAsked = false;
  void evaluateAll(message.tasks).then((replies) =>
    send({ replies, processCpuMs: processCpuMicros() / 1000 } satisfies WorkerAnswers),
  );
});
// The pool closes the channel (or is gone): nothing more to do.
process.on('disconnect', () => process.exit(0));
send({ ready: true, priority, processCpuMs: processCpuMicros() / 1000 } satisfies WorkerReady);

/** The batch in order; those after a yield are left out (the pool queues them again). */
async function evaluateAll(tasks: WorkerTask[]): Promise<WorkerReply[]> {
  const replies: WorkerReply[] = [];
  for (const task of tasks) {
    // A turn of the event loop between payloads, so that a yield message can arrive.
    if (replies.length > 0) await new Promise((resolve) => setImmediate(resolve));
    if (yieldAsked) break;
    replies.push(await evaluate(task));
  }
  return replies;
}

async function evaluate(task: WorkerTask): Promise<WorkerReply> {
  const started = processCpuMicros();
  const cpu = (): { cpuMs: number } => ({ cpuMs: (processCpuMicros() - started) / 1000 });
  try {
    // An integration's routing rules (routing-rules-task.ts), not an expression.
    if (task.source.startsWith(RULES_TASK)) {
      const answer = evaluateRulesTask(task.source, utf8.decode(task.json));
      const json = utf8Encoder.encode(answer.json);
      return { id: task.id, ok: true, json, count: answer.count, outputBytes: json.byteLength, ...cpu() };
    }
    // The ingester already refused bodies that are not JSON or nest too deep.
    const body: unknown = JSON.parse(utf8.decode(task.json));
    const result = await evaluateHere(compileCached(task.source, task.limits), body, task.limits, true);
    const json = utf8Encoder.encode(result.json ?? '[]');
    return {
      id: task.id,
      ok: true,
      json,
      count: result.items.length,
      outputBytes: result.outputBytes,
      ...cpu(),
    };
  } catch (err) {
    const e = MappingError.from(err);
    return {
      id: task.id,
      ok: false,
      code: e.code,
      message: e.message,
      ...(e.position !== undefined ? { position: e.position } : {}),
      ...(e.token !== undefined ? { token: e.token } : {}),
      ...cpu(),
    };
  }
}
