/**
 * Tenants' expressions run in a small pool of worker threads (docs/design.md §4, README
 * "Guardrails"): a single built-in call ($distinct over 100,000 items, $pad over a range) cannot
 * be interrupted between nodes, so the only way to stop it at its limit without holding the
 * process is to run it on another thread and terminate that thread.
 *
 * - Each worker evaluates one payload at a time; the pool starts when first needed (no worker
 *   until a tenant expression runs), all `size` workers at once, and a terminated one is replaced
 *   at once.
 * - Deadline: while an evaluation runs, the pool reads the worker's CPU time (worker.cpuUsage())
 *   every `watchMs`; past limits.timeoutMs (plus a grace for the worker's own check to answer
 *   D1012 first) the worker is terminated and the evaluation fails with D1012. The wall clock is
 *   only a backstop (`wallFactor` times the limit): on a busy machine a thread waits for a core.
 * - Heap cap: resourceLimits; an evaluation that passes it fails with INTAKE_MEMORY_LIMIT.
 * - Queue: bounded in evaluations waiting and in payload bytes (waiting and running); past either,
 *   run() rejects at once with MappingBusy (the ingester answers 503 with Retry-After).
 * - The payload goes over as its JSON bytes, transferred; the events come back the same way.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { MappingBusy, MappingError, type ExpressionRunner, type MappingLimits, type MappingResult } from './engine.js';
import type { WorkerReady, WorkerReply, WorkerTask } from './mapping-worker.js';
import type { ThreadPriority } from './thread-priority.js';

export interface WorkerPoolOptions {
  /** Worker threads at most (default: defaultWorkers()). */
  size?: number;
  /** Evaluations waiting for a worker at most (default 64). */
  maxQueued?: number;
  /** Payload bytes waiting or being evaluated at most (default 16 MiB). */
  maxQueuedBytes?: number;
  /** Old-generation heap of each worker, MiB (default 128). */
  heapMb?: number;
  /** How often the CPU time of a running evaluation is read, ms (default 25). */
  watchMs?: number;
  /** Wall-clock backstop: an evaluation is stopped after this many times its CPU limit (default 10, at least 5 s). */
  wallFactor?: number;
  /** The worker script (default: mapping-worker.js next to this module). */
  workerUrl?: URL;
  /** Called when a worker had to be terminated or died (for logs and metrics). */
  onWorkerLost?: (reason: string) => void;
  /** Called once, when the first worker is ready: the scheduling priority its thread got. */
  onFirstWorker?: (priority: ThreadPriority) => void;
}

/** Sensible for small machines: one worker per core beyond the main thread's, at least 2, at most 4. */
export const defaultWorkers = (): number => Math.min(4, Math.max(2, availableParallelism() - 1));

export const DEFAULT_POOL = { maxQueued: 64, maxQueuedBytes: 16 * 1024 * 1024, heapMb: 128 } as const;

interface Task {
  id: number;
  source: string;
  limits: MappingLimits;
  json: Uint8Array;
  /** The payload's size (json is detached once transferred). */
  bytes: number;
  resolve: (r: MappingResult) => void;
  reject: (e: Error) => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  /** The worker's CPU time when its current evaluation began, ms. */
  baseCpuMs: number;
  task?: Task;
  startedAt?: number;
  watch?: NodeJS.Timeout;
  /** Set once the pool gave up on this worker (terminated, died); it takes no more work. */
  lost?: boolean;
  /** The current evaluation's CPU time at the last check, ms. */
  lastCpuMs?: number;
}

const utf8 = new TextDecoder('utf-8');

export class MappingWorkerPool implements ExpressionRunner {
  readonly size: number;
  private readonly maxQueued: number;
  private readonly maxQueuedBytes: number;
  private readonly heapMb: number;
  private readonly watchMs: number;
  private readonly wallFactor: number;
  private readonly workerUrl: URL;
  private readonly slots: Slot[] = [];
  private readonly queue: Task[] = [];
  private bytes = 0;
  private nextId = 1;
  private closed = false;
  /** Workers terminated or lost since start (a gauge of trouble: hostile expressions, heap caps). */
  restarts = 0;
  /** Whether onFirstWorker was called. */
  private firstWorkerReported = false;

  constructor(private readonly o: WorkerPoolOptions = {}) {
    this.size = Math.max(1, o.size ?? defaultWorkers());
    this.maxQueued = o.maxQueued ?? DEFAULT_POOL.maxQueued;
    this.maxQueuedBytes = o.maxQueuedBytes ?? DEFAULT_POOL.maxQueuedBytes;
    this.heapMb = o.heapMb ?? DEFAULT_POOL.heapMb;
    this.watchMs = o.watchMs ?? 25;
    this.wallFactor = o.wallFactor ?? 10;
    this.workerUrl = o.workerUrl ?? new URL('./mapping-worker.js', import.meta.url);
  }

  /** Evaluations waiting, evaluations running, payload bytes held. */
  get load(): { queued: number; running: number; bytes: number } {
    return { queued: this.queue.length, running: this.slots.filter((s) => s.task).length, bytes: this.bytes };
  }

  run(source: string, limits: MappingLimits, json: Uint8Array): Promise<MappingResult> {
    if (this.closed) return Promise.reject(new MappingBusy('the mapping workers are shutting down', 1));
    if (this.queue.length >= this.maxQueued) {
      return Promise.reject(
        new MappingBusy(
          `${this.queue.length} payloads are waiting for a mapping worker (mapping.maxQueued ${this.maxQueued}); retry later`,
          1,
        ),
      );
    }
    // A payload larger than the whole budget still runs when it is alone (limits.bodyBytes may be set higher).
    if (this.bytes > 0 && this.bytes + json.byteLength > this.maxQueuedBytes) {
      return Promise.reject(
        new MappingBusy(
          `payloads waiting for a mapping worker hold ${this.bytes} bytes (mapping.maxQueuedBytes ${this.maxQueuedBytes}); retry later`,
          1,
        ),
      );
    }
    this.bytes += json.byteLength;
    return new Promise<MappingResult>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, source, limits, json, bytes: json.byteLength, resolve, reject });
      this.dispatch();
    });
  }

  /** Terminates every worker; evaluations still waiting are refused. */
  async close(): Promise<void> {
    this.closed = true;
    for (const task of this.queue.splice(0))
      this.settle(task, new MappingBusy('the mapping workers are shutting down', 1));
    await Promise.all(this.slots.map((s) => this.lose(s, new MappingBusy('the mapping workers are shutting down', 1))));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      const idle = this.slots.find((s) => s.ready && !s.task && !s.lost);
      if (idle) {
        this.start(idle, this.queue.shift() as Task);
        continue;
      }
      // No idle worker: start the whole pool, so that while one tenant's expression holds a worker
      // the next payload finds another one ready instead of waiting for a cold start. The
      // evaluations wait for them (or for a busy one to finish).
      while (this.slots.length < this.size) this.spawn();
      return;
    }
  }

  private spawn(): void {
    const worker = new Worker(this.workerUrl, {
      resourceLimits: { maxOldGenerationSizeMb: this.heapMb },
      stdout: false,
      stderr: false,
    });
    // Idle workers never keep the process alive.
    worker.unref();
    const slot: Slot = { worker, ready: false, baseCpuMs: 0 };
    this.slots.push(slot);
    worker.on('message', (m: WorkerReply | WorkerReady) => {
      if ('ready' in m) {
        slot.ready = true;
        slot.baseCpuMs = m.threadCpuMs;
        if (!this.firstWorkerReported) {
          this.firstWorkerReported = true;
          this.o.onFirstWorker?.(m.priority);
        }
        this.dispatch();
        return;
      }
      this.finish(slot, m);
    });
    worker.on('error', (err: Error & { code?: string }) => {
      const failure =
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? new MappingError(
              'INTAKE_MEMORY_LIMIT',
              `the evaluation used more than the mapping heap of ${this.heapMb} MiB (mapping.workerHeapMb)`,
            )
          : new MappingError('INTAKE_EVALUATION', `the mapping worker failed: ${err.message}`);
      void this.lose(slot, failure);
    });
    worker.on('exit', () => void this.lose(slot, new MappingError('INTAKE_EVALUATION', 'the mapping worker stopped')));
  }

  private start(slot: Slot, task: Task): void {
    slot.task = task;
    slot.startedAt = performance.now();
    const message: WorkerTask = { id: task.id, source: task.source, limits: task.limits, json: task.json };
    // The payload's bytes move to the worker (no copy) when they own their buffer.
    const ownBuffer =
      task.json.byteOffset === 0 &&
      task.json.byteLength === task.json.buffer.byteLength &&
      task.json.buffer instanceof ArrayBuffer;
    slot.worker.postMessage(message, ownBuffer ? [task.json.buffer as ArrayBuffer] : []);
    slot.watch = setInterval(() => void this.check(slot, task), this.watchMs);
  }

  /** The deadline: CPU time past the limit (plus grace), or the wall-clock backstop. */
  private async check(slot: Slot, task: Task): Promise<void> {
    if (slot.task !== task) return;
    const limitMs = task.limits.timeoutMs;
    const wallMs = performance.now() - (slot.startedAt ?? 0);
    let cpuMs: number;
    try {
      const u = await slot.worker.cpuUsage();
      cpuMs = (u.user + u.system) / 1000 - slot.baseCpuMs;
    } catch {
      return; // the worker is gone; its exit handler settles the task
    }
    if (slot.task !== task) return;
    slot.lastCpuMs = cpuMs;
    const grace = Math.max(50, limitMs * 0.2);
    const wallLimitMs = Math.max(5000, limitMs * this.wallFactor);
    if (cpuMs > limitMs + grace || wallMs > wallLimitMs) {
      const why =
        cpuMs > limitMs + grace
          ? `${Math.round(cpuMs)} ms of CPU time`
          : `${Math.round(wallMs)} ms (the wall-clock backstop; ${Math.round(cpuMs)} ms of CPU time)`;
      const err = new MappingError(
        'D1012',
        `Evaluation timeout: stopped after ${why}; the limit is ${limitMs} ms of CPU time (mapping.timeoutMs)`,
      );
      err.cpuMs = cpuMs;
      await this.lose(slot, err);
    }
  }

  private finish(slot: Slot, reply: WorkerReply): void {
    const task = slot.task;
    if (!task || task.id !== reply.id) return;
    this.clear(slot);
    slot.baseCpuMs = reply.threadCpuMs;
    if (reply.ok) {
      let items: unknown[];
      try {
        items = JSON.parse(utf8.decode(reply.json)) as unknown[];
      } catch (err) {
        this.settle(
          task,
          new MappingError(
            'INTAKE_EVALUATION',
            `the mapping worker answered what is not JSON: ${(err as Error).message}`,
          ),
        );
        return this.dispatch();
      }
      this.settle(task, { items, cpuMs: reply.cpuMs, outputBytes: reply.outputBytes });
    } else {
      const err = new MappingError(reply.code, reply.message, reply.position, reply.token);
      err.cpuMs = reply.cpuMs;
      this.settle(task, err);
    }
    this.dispatch();
  }

  private clear(slot: Slot): void {
    if (slot.watch) clearInterval(slot.watch);
    slot.watch = undefined;
    slot.task = undefined;
    slot.startedAt = undefined;
    slot.lastCpuMs = undefined;
  }

  /** Gives up on a worker: its evaluation fails with `err`, the worker is terminated, a new one starts when needed. */
  private async lose(slot: Slot, err: Error): Promise<void> {
    if (slot.lost) return;
    slot.lost = true;
    const task = slot.task;
    const lastCpuMs = slot.lastCpuMs;
    this.clear(slot);
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
    if (task) {
      // A worker that died (heap cap) cannot say what it used: the last reading, else the limit.
      if (err instanceof MappingError && err.cpuMs === undefined) err.cpuMs = lastCpuMs ?? task.limits.timeoutMs;
      this.settle(task, err);
    }
    if (!this.closed) {
      this.restarts++;
      this.o.onWorkerLost?.(err.message);
    }
    await slot.worker.terminate().catch(() => undefined);
    if (this.closed) return;
    if (!slot.ready) {
      // It died while starting (its script failed to load): starting another would fail the same
      // way, in a loop. Refuse what waits (ours to fix, so a 503 the sender retries, not a 422);
      // the next payload tries again.
      const failure = new MappingBusy(`a mapping worker could not start: ${err.message}`, 5);
      for (const waiting of this.queue.splice(0)) this.settle(waiting, failure);
      return;
    }
    // Replaced at once, so the next payload does not wait for a worker to start.
    if (this.slots.length < this.size) this.spawn();
    this.dispatch();
  }

  private settle(task: Task, outcome: MappingResult | Error): void {
    this.bytes -= task.bytes;
    if (outcome instanceof Error) task.reject(outcome);
    else task.resolve(outcome);
  }
}

/** onFirstWorker for a component's logger: says once how tenants' expressions are scheduled. */
export const logWorkerPriority =
  (logger: Pick<Logger, 'info' | 'warn'>, what: string) =>
  (p: ThreadPriority): void => {
    if (p.policy === 'idle') logger.info(`${what} run under SCHED_IDLE: request threads preempt them at once`);
    else
      logger.warn(
        { why: p.why },
        p.policy === 'nice'
          ? `${what} run at nice ${p.nice}, not SCHED_IDLE: a running evaluation can delay a request by a scheduler slice`
          : `${what} run at the request threads' priority`,
      );
  };
