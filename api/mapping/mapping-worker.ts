/**
 * The mapping worker (a node:worker_threads thread started by worker-pool.ts): evaluates one
 * tenant's expression at a time on the payload's JSON bytes and answers with the events as JSON
 * bytes (transferred, not copied) and the CPU time the evaluation used. The pool terminates this
 * thread when an evaluation runs past its limit, or V8 does when it passes the heap cap; a new one
 * takes its place.
 */
import { parentPort } from 'node:worker_threads';
import type { MappingLimits } from './engine.js';
import { lowerThisThread, type ThreadPriority } from './thread-priority.js';

/**
 * Tenants' expressions give way to the thread that answers requests (thread-priority.ts), and so
 * does this thread's start: the priority is lowered before the engine (JSONata and our code) is
 * loaded and compiled, which a worker replacing a terminated one does again each time. Its CPU
 * limit counts its own CPU time, so a slowed evaluation is not stopped early (the wall-clock
 * backstop is 10x).
 */
const priority = lowerThisThread();
const { compileCached, evaluateHere, MappingError, threadCpuMicros } = await import('./engine.js');

/** One evaluation: the expression, its limits and the payload as UTF-8 JSON. */
export interface WorkerTask {
  id: number;
  source: string;
  limits: MappingLimits;
  json: Uint8Array;
}

export type WorkerReply =
  | { id: number; ok: true; json: Uint8Array; count: number; cpuMs: number; outputBytes: number; threadCpuMs: number }
  | {
      id: number;
      ok: false;
      code: string;
      message: string;
      position?: number;
      token?: string;
      cpuMs: number;
      threadCpuMs: number;
    };

/** Sent once the worker has loaded (its start-up CPU time is not charged to the first evaluation). */
export interface WorkerReady {
  ready: true;
  threadCpuMs: number;
  /** What lowering the thread got (the pool reports anything short of SCHED_IDLE once). */
  priority: ThreadPriority;
}

const port = parentPort;
if (!port) throw new Error('mapping-worker.js runs as a worker thread (worker-pool.ts starts it)');

const utf8 = new TextDecoder('utf-8');
const utf8Encoder = new TextEncoder();

port.on('message', (task: WorkerTask) => {
  void evaluate(task).then((reply) => {
    if (reply.ok) port.postMessage(reply, [reply.json.buffer as ArrayBuffer]);
    else port.postMessage(reply);
  });
});
port.postMessage({ ready: true, threadCpuMs: threadCpuMicros() / 1000, priority } satisfies WorkerReady);

async function evaluate(task: WorkerTask): Promise<WorkerReply> {
  const started = threadCpuMicros();
  const cpu = (): { cpuMs: number; threadCpuMs: number } => {
    const now = threadCpuMicros();
    return { cpuMs: (now - started) / 1000, threadCpuMs: now / 1000 };
  };
  try {
    // The main thread already refused bodies that are not JSON or nest too deep.
    const body: unknown = JSON.parse(utf8.decode(task.json));
    const result = await evaluateHere(compileCached(task.source, task.limits), body, task.limits, true);
    // TextEncoder gives a Uint8Array with its own ArrayBuffer (a Buffer may share a pooled one).
    const json = utf8Encoder.encode(result.json ?? '[]');
    return { id: task.id, ok: true, json, count: result.items.length, outputBytes: result.outputBytes, ...cpu() };
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
