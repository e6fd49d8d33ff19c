/**
 * The mapping worker (a node:worker_threads thread started by worker-pool.ts): evaluates one
 * tenant's expression at a time on the payload's JSON bytes and answers with the events as JSON
 * bytes (transferred, not copied) and the CPU time the evaluation used. The pool terminates this
 * thread when an evaluation runs past its limit, or V8 does when it passes the heap cap; a new one
 * takes its place.
 */
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { compileCached, evaluateHere, MappingError, threadCpuMicros, type MappingLimits } from './engine.js';

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
}

const port = parentPort;
if (!port) throw new Error('mapping-worker.js runs as a worker thread (worker-pool.ts starts it)');

/**
 * Tenants' expressions give way to the thread that answers requests: at nice 19 this worker gets
 * about 1.5% of a core the main thread needs (nice 10, a tenth, still doubled another tenant's p99
 * latency in the noisy-neighbour benchmark), and all of one it does not. Its CPU limit counts
 * its own CPU time, so a slowed evaluation is not stopped early (the wall-clock backstop is 10x).
 * Linux only: there the nice value belongs to the calling thread; elsewhere it would lower the
 * whole process.
 */
export const WORKER_NICE = 19;
if (process.platform === 'linux') setPriority(WORKER_NICE);
const utf8 = new TextDecoder('utf-8');
const utf8Encoder = new TextEncoder();

port.on('message', (task: WorkerTask) => {
  void evaluate(task).then((reply) => {
    if (reply.ok) port.postMessage(reply, [reply.json.buffer as ArrayBuffer]);
    else port.postMessage(reply);
  });
});
port.postMessage({ ready: true, threadCpuMs: threadCpuMicros() / 1000 } satisfies WorkerReady);

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
