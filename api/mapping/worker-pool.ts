/**
 * Tenants' expressions run in a small pool of worker processes (docs/design.md §4, README
 * "Guardrails"): a single built-in call ($distinct over 100,000 items, $pad over a range) cannot
 * be interrupted between nodes, so the only way to stop it at its limit without holding the
 * ingester is to run it in another process and kill that process.
 *
 * - Processes, not threads: every thread of a worker (V8's compiler and GC threads, node's
 *   start-up) runs under SCHED_IDLE from its first instruction (worker-priority.ts), in an address
 *   space of its own. A worker thread shared V8's helper threads and the process's locks with the
 *   request thread: measured, that was most of what a hostile tenant cost the others.
 * - Each worker evaluates one payload at a time; the pool starts when first needed (no worker
 *   until a tenant expression runs), all `size` workers at once, and a killed one is replaced at
 *   once.
 * - Deadline: while an evaluation runs, the pool reads the worker's CPU time (/proc/PID/stat, all
 *   its threads) every `watchMs`; past limits.timeoutMs (plus a grace for the worker's own check to
 *   answer D1012 first) the worker is killed (SIGKILL) and the evaluation fails with D1012. The
 *   wall clock is only a backstop (`wallFactor` times the limit): on a busy machine an idle-policy
 *   process waits for a core. Without /proc (not Linux) the wall clock is the CPU limit.
 * - Heap cap: --max-old-space-size; a worker that dies of it fails its evaluation with
 *   INTAKE_MEMORY_LIMIT.
 * - Queue: bounded in evaluations waiting and in payload bytes (waiting and running); past either,
 *   run() rejects at once with MappingBusy (the ingester answers 503 with Retry-After).
 * - Shares: each tenant (the ingester's namespaces; whatever key a caller passes to run(); none:
 *   no share, as for the operator's mapping tests) may hold at most `maxRunningPerTenant` workers
 *   and `maxQueuedPerTenant` / `maxQueuedBytesPerTenant` of the queue; past its queue share run() rejects at once with MappingBusy. A tenant at its
 *   worker share waits even while a worker is idle: that worker is the other tenants', so their
 *   payloads never wait behind an evaluation that may run to its limit. A worker killed at a
 *   tenant's limit counts against that tenant until its replacement is ready.
 * - Fair: workers take waiting evaluations tenant by tenant in turn (round-robin), not first come
 *   first served, so one tenant's backlog never sits in front of another's payload.
 * - Hand-over in batches: a worker that comes free takes up to MAX_BATCH payloads of the tenant
 *   whose turn it is in one message, while no other waiting tenant could take that worker
 *   (otherwise one, so turns stay turns; a tenant at its worker share, or a long one beside a
 *   prompt worker, could not), and answers them all in one message. Each payload crossing the pipe alone cost a
 *   message each way and, since the worker runs only when the request thread is idle, a switch
 *   between the two each way: measured, most of a trivial expression's cost. The deadline of a
 *   batch is the sum of its payloads' limits. When another tenant's payload waits, a batch is asked
 *   to stop after the payload it is evaluating (the rest go back to the front of their queue), so
 *   that payload waits behind one evaluation at most, as before. A worker killed (or dead) with
 *   several payloads of a batch unanswered cannot say which one was to blame, so those go back to
 *   the front of their tenant's queue to run one at a time, each carrying its share of the CPU
 *   time lost.
 * - Two classes of workers, fixed when each starts (worker-priority.ts): prompt workers (SCHED_BATCH,
 *   nice 19) and idle workers (SCHED_IDLE), half the pool each (one worker: an idle one). A tenant
 *   one of whose evaluations used more CPU than `longCpuMs` (a tenth of its limit) in the last
 *   `longForMs` (a minute) runs only in idle workers; the others' evaluations take a prompt worker
 *   first, else an idle one. A prompt worker preempts an idle one at once and gets five sixths of
 *   the core beside it, so a tenant that burns its time limit, even within its CPU budget, cannot
 *   slow another tenant's short evaluations: measured, two workers of one class shared the core
 *   evenly, neither preempting the other, and the short ones waited behind the burner. A prompt
 *   worker whose evaluation runs long is moved to SCHED_IDLE there and then (its tenant is marked),
 *   a new prompt worker starts in its place at once, and it ends with its evaluation: for that
 *   while the pool has one process more (at most one per prompt worker).
 * - Where the two meet: a batch goes only to a worker of a class its tenant may use (a tenant
 *   marked long: idle workers only), so a long tenant's batches never start at the prompt class. A
 *   batch is long when its CPU time passes the sum of its payloads' tenths (as its deadline is the
 *   sum of their limits), or, once it was asked to yield because another tenant waits, when the
 *   payload under way has used a tenth more since: then the payload that other tenant waits behind
 *   runs long. A prompt worker whose batch is long is demoted like one running a single
 *   evaluation, and the batch continues there, in the demoted worker, which retires when it
 *   answers. Each answered payload that used more than its tenth marks its tenant long.
 * - The payload goes over as its JSON bytes, each distinct expression once per batch; the events
 *   come back as JSON text (a string costs the channel less than bytes: no buffer on either side).
 */
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import {
  MappingBusy,
  MappingError,
  type ExpressionRunner,
  type MappingLimits,
  type MappingResult,
} from './mapping-model.js';
import type {
  WorkerAnswers,
  WorkerExpression,
  WorkerReady,
  WorkerReply,
  WorkerTasks,
  WorkerYield,
} from './mapping-worker.js';
import { WorkerLauncher, type RemoteWorker } from './worker-launcher.js';
import { demoteCommand, idleCommand, promptCommand, readProcStat, type WorkerPriority } from './worker-priority.js';

export interface WorkerPoolOptions {
  /** Worker processes at most (default: defaultWorkers()). */
  size?: number;
  /** Evaluations waiting for a worker at most (default 64). */
  maxQueued?: number;
  /** Payload bytes waiting or being evaluated at most (default 16 MiB). */
  maxQueuedBytes?: number;
  /** Workers one tenant's evaluations may hold at once (default: half the workers, rounded up). */
  maxRunningPerTenant?: number;
  /** Evaluations of one tenant waiting at most (default: a quarter of maxQueued, at least 1). */
  maxQueuedPerTenant?: number;
  /** Payload bytes of one tenant waiting or being evaluated at most (default: a quarter of maxQueuedBytes). */
  maxQueuedBytesPerTenant?: number;
  /** Old-generation heap of each worker, MiB (default 128). */
  heapMb?: number;
  /** How often the CPU time of a running evaluation is read, ms (default 25). */
  watchMs?: number;
  /** Wall-clock backstop: an evaluation is stopped after this many times its CPU limit (default 10, at least 5 s). */
  wallFactor?: number;
  /** The worker script (default: mapping-worker.js next to this module). */
  workerUrl?: URL;
  /** Called when a worker had to be killed or died (for logs and metrics). */
  onWorkerLost?: (reason: string) => void;
  /** Called once, when the first idle worker is ready: the scheduling priority it runs under. */
  onFirstWorker?: (priority: WorkerPriority) => void;
  /** An evaluation that used more CPU than this is long (default: a tenth of its time limit, at least 10 ms). */
  longCpuMs?: number;
  /** How long a tenant whose evaluation ran long runs only in idle workers, ms (default 60,000). */
  longForMs?: number;
}

/** A worker's class: prompt (SCHED_BATCH, nice 19) for short evaluations, idle (SCHED_IDLE) for long ones. */
export type WorkerClass = 'prompt' | 'idle';

/** Idle workers in a pool of `size`: half (rounded down), and the only one of a pool of one. */
export const idleWorkers = (size: number): number => (size === 1 ? 1 : Math.floor(size / 2));

/** Tenants marked long at most; past it, marks that ran out are swept (keys come and go). */
const LONG_MARKS_SWEEP = 1024;

/** Sensible for small machines: one worker per core beyond the main thread's, at least 2, at most 4. */
export const defaultWorkers = (): number => Math.min(4, Math.max(2, availableParallelism() - 1));

export const DEFAULT_POOL = { maxQueued: 64, maxQueuedBytes: 16 * 1024 * 1024, heapMb: 128 } as const;

/** Payloads of one tenant a worker takes in one message at most, and their bytes (one larger payload goes alone). */
export const MAX_BATCH = 16;
export const MAX_BATCH_BYTES = 256 * 1024;

/** One tenant's share of the pool by default: half the workers (at least one), a quarter of the queue. */
export const defaultShares = (
  size: number,
  maxQueued: number,
  maxQueuedBytes: number,
): { maxRunningPerTenant: number; maxQueuedPerTenant: number; maxQueuedBytesPerTenant: number } => ({
  maxRunningPerTenant: Math.max(1, Math.ceil(size / 2)),
  maxQueuedPerTenant: Math.max(1, Math.ceil(maxQueued / 4)),
  maxQueuedBytesPerTenant: Math.max(1, Math.ceil(maxQueuedBytes / 4)),
});

/** What a caller may say about one evaluation (optional; run() without it is the same as before). */
export interface RunOptions {
  /**
   * Whose evaluation this is (the ingester: the route's namespace; the console: the user). Shares
   * and turns are per tenant. Evaluations without one (the operator's mapping tests) take their
   * turns together and are held to no share, as before tenants existed.
   */
  tenant?: string;
}

interface Task {
  id: number;
  tenant: TenantState;
  source: string;
  limits: MappingLimits;
  json: Uint8Array;
  bytes: number;
  /** CPU time of a batch whose worker was lost before this payload was answered, its share (ms). */
  lostCpuMs: number;
  /** Runs in a batch of its own: it was in a batch whose worker was lost, and may be why. */
  alone: boolean;
  resolve: (r: MappingResult) => void;
  reject: (e: Error) => void;
}

/** One tenant's evaluations: waiting, running, their bytes, and workers being replaced on its account. */
interface TenantState {
  key: string;
  waiting: Task[];
  running: number;
  bytes: number;
  /** Replacements starting for workers killed or lost while evaluating this tenant's payload. */
  replacing: number;
}

interface Slot {
  child: RemoteWorker;
  ready: boolean;
  /**
   * The worker's CPU time so far as it last reported it (ready, or its last answer), ms: the base
   * the deadline's /proc readings are measured from. Reported rather than read at each start, which
   * cost a /proc read per payload; what the idle worker used in between is at most a few ms, and
   * /proc's 10 ms ticks against this microsecond clock at most one tick: the grace covers both.
   */
  baseCpuMs: number;
  /** The batch it evaluates: the payloads not answered yet, in the order sent (one tenant's). */
  batch?: Task[];
  startedAt?: number;
  watch?: NodeJS.Timeout;
  /** The batch was asked to stop after its current payload (another tenant waits). */
  yieldAsked?: boolean;
  /** The batch's CPU time when it was asked to yield, ms: the payload under way is long a tenth past it. */
  yieldCpuMs?: number;
  /** Set once the pool gave up on this worker (killed, died); it takes no more work. */
  lost?: boolean;
  /** The current batch's CPU time at the last check, ms. */
  lastCpuMs?: number;
  /** The end of what the worker wrote to stderr (V8's out-of-memory report, chrt's refusal). */
  stderr: string;
  /** Started through chrt (false: the worker lowers itself to nice 19). */
  viaChrt: boolean;
  /** What it was started as; a demoted prompt worker counts as idle. */
  cls: WorkerClass;
  /** A prompt worker moved to SCHED_IDLE during a long batch (or evaluation): retired once it ends. */
  demoted?: boolean;
  /** A replacement for a worker lost on this tenant's evaluation: counts against its share until ready. */
  replacing?: TenantState;
}

const OUT_OF_MEMORY = /heap out of memory|Reached heap limit|Allocation failed/i;
/** Clock ticks per second in /proc/PID/stat (USER_HZ: 100 on every Linux ABI node runs on). */
const USER_HZ = 100;

/** A process's CPU time (all its threads) from /proc, ms; undefined where there is no /proc or it has ended. */
function processCpuMs(pid: number | undefined): number | undefined {
  const stat = pid === undefined ? undefined : readProcStat(`/proc/${pid}/stat`);
  return stat && ((stat(14) + stat(15)) * 1000) / USER_HZ;
}

export class MappingWorkerPool implements ExpressionRunner {
  readonly size: number;
  private readonly maxQueued: number;
  private readonly maxQueuedBytes: number;
  private readonly heapMb: number;
  private readonly watchMs: number;
  private readonly wallFactor: number;
  private readonly workerPath: string;
  /** Starts the workers (through a spawner process) and carries their messages. */
  private readonly launcher: WorkerLauncher;
  private readonly maxRunningPerTenant: number;
  private readonly maxQueuedPerTenant: number;
  private readonly maxQueuedBytesPerTenant: number;
  private readonly idleTarget: number;
  private readonly longForMs: number;
  /** Until when (performance.now()) each tenant marked long runs only in idle workers. */
  private readonly longUntil = new Map<string, number>();
  private readonly slots: Slot[] = [];
  /** Tenants with evaluations, by key; an entry goes when its tenant holds nothing. */
  private readonly tenants = new Map<string, TenantState>();
  /** Tenants with evaluations waiting, in the order they take their next turn. */
  private readonly turns: TenantState[] = [];
  private queued = 0;
  private bytes = 0;
  private nextId = 1;
  private closed = false;
  /** Workers killed or lost since start (a gauge of trouble: hostile expressions, heap caps). */
  restarts = 0;
  /** Whether onFirstWorker was called. */
  private firstWorkerReported = false;
  /** Why workers are not started through chrt (absent from PATH, or it refused), once known. */
  private notIdle: string | undefined;

  constructor(private readonly o: WorkerPoolOptions = {}) {
    this.size = Math.max(1, o.size ?? defaultWorkers());
    this.maxQueued = o.maxQueued ?? DEFAULT_POOL.maxQueued;
    this.maxQueuedBytes = o.maxQueuedBytes ?? DEFAULT_POOL.maxQueuedBytes;
    const shares = defaultShares(this.size, this.maxQueued, this.maxQueuedBytes);
    this.maxRunningPerTenant = Math.max(1, o.maxRunningPerTenant ?? shares.maxRunningPerTenant);
    this.maxQueuedPerTenant = Math.max(1, o.maxQueuedPerTenant ?? shares.maxQueuedPerTenant);
    this.maxQueuedBytesPerTenant = o.maxQueuedBytesPerTenant ?? shares.maxQueuedBytesPerTenant;
    this.heapMb = o.heapMb ?? DEFAULT_POOL.heapMb;
    this.watchMs = o.watchMs ?? 25;
    this.wallFactor = o.wallFactor ?? 10;
    this.idleTarget = idleWorkers(this.size);
    this.longForMs = o.longForMs ?? 60_000;
    this.workerPath = fileURLToPath(o.workerUrl ?? new URL('./mapping-worker.js', import.meta.url));
    this.launcher = new WorkerLauncher(join(dirname(this.workerPath), 'worker-spawner.js'));
  }

  /** Evaluations waiting, evaluations running, payload bytes held. */
  get load(): { queued: number; running: number; bytes: number } {
    return {
      queued: this.queued,
      running: this.slots.reduce((n, s) => n + (s.batch?.length ?? 0), 0),
      bytes: this.bytes,
    };
  }

  /** One tenant's evaluations waiting and running, and the payload bytes they hold. */
  loadOf(tenant: string): { queued: number; running: number; bytes: number } {
    const t = this.tenants.get(tenant);
    return { queued: t?.waiting.length ?? 0, running: t?.running ?? 0, bytes: t?.bytes ?? 0 };
  }

  /** Each tenant's share: workers held at once, evaluations waiting, payload bytes. */
  get shares(): { maxRunningPerTenant: number; maxQueuedPerTenant: number; maxQueuedBytesPerTenant: number } {
    return {
      maxRunningPerTenant: this.maxRunningPerTenant,
      maxQueuedPerTenant: this.maxQueuedPerTenant,
      maxQueuedBytesPerTenant: this.maxQueuedBytesPerTenant,
    };
  }

  /** The worker processes' ids (for tests and diagnostics). */
  get pids(): number[] {
    return this.slots.flatMap((s) => (s.child.pid === undefined ? [] : [s.child.pid]));
  }

  /** The spawner that starts the workers, and the socket they connect to (for tests and diagnostics). */
  get launcherInfo(): { spawnerPid: number | undefined; socketAddress: string } {
    return { spawnerPid: this.launcher.spawnerPid, socketAddress: this.launcher.socketAddress };
  }

  /** The worker processes and their classes (for tests and diagnostics). */
  get workers(): { pid: number; cls: WorkerClass; ready: boolean; busy: boolean }[] {
    return this.slots.flatMap((s) =>
      s.child.pid === undefined ? [] : [{ pid: s.child.pid, cls: s.cls, ready: s.ready, busy: s.batch !== undefined }],
    );
  }

  /** The workers a tenant's next evaluation may run in: idle only while it is marked long. */
  laneOf(tenant: string): WorkerClass | 'any' {
    return this.isLong(tenant) ? 'idle' : 'any';
  }

  private isLong(key: string): boolean {
    const until = this.longUntil.get(key);
    if (until === undefined) return false;
    if (until > performance.now()) return true;
    this.longUntil.delete(key);
    return false;
  }

  /** The CPU time past which an evaluation is long. */
  private longCpuMs(task: Task): number {
    return this.o.longCpuMs ?? Math.max(10, task.limits.timeoutMs / 10);
  }

  /**
   * The CPU time past which a batch is long: the sum of its payloads' tenths (its deadline is the
   * sum of their limits); once it was asked to yield, only the payload under way goes on, and
   * another tenant waits behind it: long when it has used the largest tenth since.
   */
  private longBound(slot: Slot, batch: Task[]): number {
    const sum = batch.reduce((ms, t) => ms + this.longCpuMs(t), 0);
    if (!slot.yieldAsked) return sum;
    return Math.min(sum, (slot.yieldCpuMs ?? 0) + Math.max(...batch.map((t) => this.longCpuMs(t))));
  }

  /** `key`'s evaluations run only in idle workers for the next longForMs. */
  private markLong(key: string): void {
    const now = performance.now();
    if (this.longUntil.size >= LONG_MARKS_SWEEP)
      for (const [k, until] of this.longUntil) if (until <= now) this.longUntil.delete(k);
    this.longUntil.delete(key);
    this.longUntil.set(key, now + this.longForMs);
  }

  run(source: string, limits: MappingLimits, json: Uint8Array, options: RunOptions = {}): Promise<MappingResult> {
    if (this.closed) return Promise.reject(new MappingBusy('the mapping workers are shutting down', 1));
    const refusal = this.refusal(options.tenant ?? '', json.byteLength);
    if (refusal) return Promise.reject(refusal);
    const tenant = this.tenantOf(options.tenant ?? '');
    this.bytes += json.byteLength;
    tenant.bytes += json.byteLength;
    return new Promise<MappingResult>((resolve, reject) => {
      if (tenant.waiting.length === 0) this.turns.push(tenant);
      tenant.waiting.push({
        id: this.nextId++,
        tenant,
        source,
        limits,
        json,
        bytes: json.byteLength,
        lostCpuMs: 0,
        alone: false,
        resolve,
        reject,
      });
      this.queued++;
      this.dispatch();
    });
  }

  /** Why a payload of `bytes` from `key` cannot wait for a worker now (the queue, or the tenant's share of it), if it cannot. */
  private refusal(key: string, bytes: number): MappingBusy | undefined {
    const tenant = this.tenants.get(key);
    const held = tenant?.bytes ?? 0;
    const waiting = tenant?.waiting.length ?? 0;
    const whose = `payloads of namespace ${key}`;
    const shared = key !== '';
    if (this.queued >= this.maxQueued)
      return new MappingBusy(
        `${this.queued} payloads are waiting for a mapping worker (mapping.maxQueued ${this.maxQueued}); retry later`,
        1,
      );
    if (shared && waiting >= this.maxQueuedPerTenant)
      return new MappingBusy(
        `${waiting} ${whose} are waiting for a mapping worker, its share of the queue (mapping.maxQueuedPerNamespace ${this.maxQueuedPerTenant}); retry later`,
        1,
      );
    // A payload larger than the whole budget still runs when it is alone (limits.bodyBytes may be set higher).
    if (this.bytes > 0 && this.bytes + bytes > this.maxQueuedBytes)
      return new MappingBusy(
        `payloads waiting for a mapping worker hold ${this.bytes} bytes (mapping.maxQueuedBytes ${this.maxQueuedBytes}); retry later`,
        1,
      );
    if (shared && held > 0 && held + bytes > this.maxQueuedBytesPerTenant)
      return new MappingBusy(
        `${whose} waiting for or held by a mapping worker hold ${held} bytes, its share (mapping.maxQueuedBytesPerNamespace ${this.maxQueuedBytesPerTenant}); retry later`,
        1,
      );
    return undefined;
  }

  private tenantOf(key: string): TenantState {
    let tenant = this.tenants.get(key);
    if (!tenant) {
      tenant = { key, waiting: [], running: 0, bytes: 0, replacing: 0 };
      this.tenants.set(key, tenant);
    }
    return tenant;
  }

  /** Forgets a tenant that holds nothing any more (keys come and go: namespaces, console users). */
  private forgetIfIdle(tenant: TenantState): void {
    if (tenant.waiting.length === 0 && tenant.running === 0 && tenant.bytes === 0 && tenant.replacing === 0)
      this.tenants.delete(tenant.key);
  }

  /** Within its share of the workers (those it runs on, and those being replaced on its account). */
  private mayStart(tenant: TenantState): boolean {
    return tenant.key === '' || tenant.running + tenant.replacing < this.maxRunningPerTenant;
  }

  /** Whether `tenant`'s next evaluation may start in a free worker of class `cls`: within its worker share, and not long for a prompt worker. */
  private mayTake(tenant: TenantState, cls: WorkerClass): boolean {
    return this.mayStart(tenant) && (cls === 'idle' || !this.isLong(tenant.key));
  }

  /**
   * The next evaluations for a free worker of class `cls`: those of the first tenant in turn
   * within its worker share (and, for a prompt worker, not marked long), which then goes last. More
   * than one only while no other waiting tenant could take this worker, so each tenant still gets
   * its turn between another's payloads. A tenant that waits but could not take it (at its worker
   * share, or marked long beside a prompt worker) does not stop the batch: it would not get the
   * worker sooner, and without batches the others' backlog after any pause drains one payload per
   * round trip (measured: a tenant burning its time limit turned every other tenant's batches into
   * single payloads). Should it become able to take the worker, the batch is asked to yield
   * (askBatchesToYield). The tenant's payloads are spread over the free workers it may take (its
   * share, of a class it may use) before any of them gets two. A payload that must run alone goes
   * alone.
   */
  private nextBatch(cls: WorkerClass): Task[] | undefined {
    const index = this.turns.findIndex((t) => this.mayTake(t, cls));
    if (index < 0) return undefined;
    const tenant = this.turns[index] as TenantState;
    this.turns.splice(index, 1);
    // Workers still starting count as free: the pool starts them all at once, and a payload
    // waits less for one of them than behind a batch.
    const long = this.isLong(tenant.key);
    const free = this.slots.filter((s) => !s.batch && !s.lost && (!long || s.cls === 'idle')).length;
    const workers =
      tenant.key === '' ? free : Math.min(free, this.maxRunningPerTenant - tenant.running - tenant.replacing);
    const take = Math.min(MAX_BATCH, Math.ceil(tenant.waiting.length / Math.max(1, workers)));
    const first = tenant.waiting.shift() as Task;
    const batch = [first];
    let bytes = first.bytes;
    const othersMayTake = this.turns.some((t) => this.mayTake(t, cls));
    while (!first.alone && !othersMayTake && batch.length < take) {
      const next = tenant.waiting[0];
      if (!next || next.alone || bytes + next.bytes > MAX_BATCH_BYTES) break;
      batch.push(tenant.waiting.shift() as Task);
      bytes += next.bytes;
    }
    if (tenant.waiting.length > 0) this.turns.push(tenant);
    this.queued -= batch.length;
    return batch;
  }

  /** A lost batch's payloads, back at the front of their tenant's queue, to run one at a time. */
  private requeueAlone(tasks: Task[], lostCpuMs: number): void {
    const tenant = (tasks[0] as Task).tenant;
    for (const task of tasks) {
      task.alone = true;
      task.lostCpuMs += lostCpuMs / tasks.length;
    }
    if (tenant.waiting.length === 0) this.turns.unshift(tenant);
    tenant.waiting.unshift(...tasks);
    this.queued += tasks.length;
  }

  /** Kills every worker; evaluations still waiting are refused. */
  async close(): Promise<void> {
    this.closed = true;
    for (const task of this.takeAllWaiting())
      this.settle(task, new MappingBusy('the mapping workers are shutting down', 1));
    await Promise.all(this.slots.map((s) => this.lose(s, new MappingBusy('the mapping workers are shutting down', 1))));
    this.launcher.close();
  }

  /** Every waiting evaluation, taken out of the queue (to refuse them). */
  private takeAllWaiting(): Task[] {
    const tasks = this.turns.splice(0).flatMap((t) => t.waiting.splice(0));
    this.queued = 0;
    return tasks;
  }

  private dispatch(): void {
    while (this.queued > 0) {
      // Prompt workers first: a short evaluation runs at the higher class when one is free.
      const free = this.slots
        .filter((s) => s.ready && !s.batch && !s.lost)
        .sort((a, b) => (a.cls === b.cls ? 0 : a.cls === 'prompt' ? -1 : 1));
      let started = false;
      for (const slot of free) {
        // A tenant at its worker share, or a long one beside a free prompt worker, leaves it free.
        const batch = this.nextBatch(slot.cls);
        if (!batch) continue;
        this.start(slot, batch);
        started = true;
        break;
      }
      if (!started) {
        // Start the whole pool, so that while one tenant's expression holds a worker the next
        // payload finds another one ready instead of waiting for a cold start. The evaluations
        // wait for them (or for a busy one to finish), or for a batch to yield.
        while (this.counted().length < this.size) this.spawn(this.classToStart());
        return this.askBatchesToYield();
      }
    }
  }

  /**
   * Another tenant's payload waits and may start: every batch of more than one payload of some
   * other tenant is asked to stop after the payload it is evaluating, so that payload waits behind
   * one evaluation at most, as without batches. The rest of the batch goes back to the front of
   * its tenant's queue (finish). A batch in a prompt worker yields only to a tenant not marked
   * long: a long one could not take that worker.
   */
  private askBatchesToYield(): void {
    for (const slot of this.slots) {
      const batch = slot.batch;
      if (!batch || batch.length < 2 || slot.yieldAsked) continue;
      const tenant = (batch[0] as Task).tenant;
      if (!this.turns.some((t) => t !== tenant && this.mayTake(t, slot.cls))) continue;
      slot.yieldAsked = true;
      slot.yieldCpuMs = slot.lastCpuMs ?? 0;
      slot.child.send({ yield: true } satisfies WorkerYield);
    }
  }

  /** The class the pool is short of: idle workers up to idleTarget (a demoted one counts), then prompt ones. */
  private classToStart(): WorkerClass {
    const idle = this.counted().filter((s) => s.cls === 'idle').length;
    return idle < this.idleTarget ? 'idle' : 'prompt';
  }

  /** The workers that count towards `size`: all but demoted ones, which end with their evaluation. */
  private counted(): Slot[] {
    return this.slots.filter((s) => !s.demoted);
  }

  private spawn(cls: WorkerClass): Slot {
    const node = [
      process.execPath,
      `--max-old-space-size=${this.heapMb}`,
      '--max-semi-space-size=4',
      // V8's garbage collection on the worker's JavaScript thread, none in its helper threads. A
      // helper that wakes and sleeps (a parallel scavenge's job, the sweeper) is placed afresh by
      // the kernel (EEVDF) each time it wakes, eligible to run before the request thread that woke
      // at the same moment, for up to a scheduler tick, even under SCHED_IDLE; the worker's
      // JavaScript thread, which runs until its evaluation ends, is not. Measured: the helpers'
      // wake-ups fell from 2,581 to 331 in 200 evaluations, for no more CPU time in all. Not
      // --single-threaded: without concurrent compilation V8 never optimised a long loop already
      // running ($distinct over 20,000 items took 1.2 s instead of 0.08 s).
      '--single-threaded-gc',
      this.workerPath,
    ];
    const command =
      this.notIdle !== undefined
        ? { argv: node, idle: false }
        : cls === 'idle'
          ? idleCommand(node)
          : promptCommand(node);
    const viaChrt = this.notIdle === undefined && /(^|\/)chrt$/.test(command.argv[0] as string);
    const why =
      this.notIdle ??
      (process.platform === 'linux' ? 'chrt not found on PATH' : `SCHED_IDLE is Linux's (this is ${process.platform})`);
    const env = { ...process.env };
    // The worker gets its flags above and nothing else (an inspector port, a --require).
    delete env.NODE_OPTIONS;
    // Started by the spawner, not forked from this process (worker-spawner.ts says why).
    const child = this.launcher.start([...command.argv, why], env);
    const slot: Slot = { child, ready: false, baseCpuMs: 0, stderr: '', viaChrt, cls };
    this.slots.push(slot);
    // Idle workers never keep the process alive; one with an evaluation does (start()).
    this.idleRefs(slot, false);
    child.on('message', (m: WorkerAnswers | WorkerReady) => {
      slot.baseCpuMs = m.processCpuMs;
      if ('ready' in m) {
        slot.ready = true;
        this.replaced(slot);
        if (!this.firstWorkerReported && cls === 'idle') {
          this.firstWorkerReported = true;
          this.o.onFirstWorker?.(m.priority);
        }
        this.dispatch();
        return;
      }
      this.finish(slot, m);
    });
    child.on(
      'error',
      (err) => void this.lose(slot, new MappingError('INTAKE_EVALUATION', `the mapping worker failed: ${err.message}`)),
    );
    // 'close': the process has ended and its stderr is read to the end.
    child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
      slot.stderr = child.stderr;
      void this.lose(slot, this.deathOf(slot, code, signal));
    });
    return slot;
  }

  /** A replacement is ready (or gave up): the tenant it was charged to has its share back. */
  private replaced(slot: Slot): void {
    const tenant = slot.replacing;
    if (!tenant) return;
    slot.replacing = undefined;
    tenant.replacing--;
    this.forgetIfIdle(tenant);
  }

  /** Why a worker ended by itself: its heap cap (V8's report on stderr), or anything else. */
  private deathOf(slot: Slot, code: number | null, signal: NodeJS.Signals | null): MappingError {
    if (OUT_OF_MEMORY.test(slot.stderr))
      return new MappingError(
        'INTAKE_MEMORY_LIMIT',
        `the evaluation used more than the mapping heap of ${this.heapMb} MiB (mapping.workerHeapMb)`,
      );
    const how = signal ? `signal ${signal}` : `exit code ${code}`;
    const said = slot.stderr.trim().split('\n').pop();
    return new MappingError('INTAKE_EVALUATION', `the mapping worker stopped (${how})${said ? `: ${said}` : ''}`);
  }

  /** The worker's process and channel keep this process alive only while it evaluates. */
  private idleRefs(slot: Slot, busy: boolean): void {
    if (busy) slot.child.ref();
    else slot.child.unref();
  }

  private start(slot: Slot, batch: Task[]): void {
    slot.batch = batch;
    (batch[0] as Task).tenant.running++;
    slot.startedAt = performance.now();
    this.idleRefs(slot, true);
    slot.child.send(batchMessage(batch));
    slot.watch = setInterval(() => this.check(slot, batch), this.watchMs);
  }

  /** The deadline: CPU time past the batch's limits (plus grace), or the wall-clock backstop. */
  private check(slot: Slot, batch: Task[]): void {
    if (slot.batch !== batch) return;
    const limitMs = batch.reduce((sum, t) => sum + t.limits.timeoutMs, 0);
    const wallMs = performance.now() - (slot.startedAt ?? 0);
    const now = processCpuMs(slot.child.pid);
    // Without /proc the wall clock stands in for the CPU time.
    const cpuMs = now === undefined ? wallMs : now - slot.baseCpuMs;
    slot.lastCpuMs = cpuMs;
    const grace = Math.max(50, limitMs * 0.2);
    const wallLimitMs = Math.max(5000, limitMs * this.wallFactor);
    if (slot.cls === 'prompt' && !slot.demoted && cpuMs > this.longBound(slot, batch)) this.demote(slot, batch);
    if (cpuMs > limitMs + grace || wallMs > wallLimitMs) {
      const why =
        cpuMs > limitMs + grace
          ? `${Math.round(cpuMs)} ms of CPU time`
          : `${Math.round(wallMs)} ms (the wall-clock backstop; ${Math.round(cpuMs)} ms of CPU time)`;
      const err = new MappingError(
        'D1012',
        `Evaluation timeout: stopped after ${why}; the limit is ${limitMs} ms of CPU time (mapping.timeout)`,
      );
      err.cpuMs = cpuMs;
      void this.lose(slot, err);
    }
  }

  /**
   * A prompt worker's batch runs long: its tenant runs only in idle workers from now on, and this
   * worker goes to SCHED_IDLE at once (all its threads), where the batch goes on, to be retired
   * when the batch ends (nothing can raise it again). Without chrt the classes are the same:
   * nothing to move.
   */
  private demote(slot: Slot, batch: Task[]): void {
    this.markLong((batch[0] as Task).tenant.key);
    const argv = this.notIdle === undefined && slot.child.pid !== undefined ? demoteCommand(slot.child.pid) : undefined;
    if (!argv) return;
    // At most one demoted worker per prompt worker: past that, a long evaluation stays where it is.
    if (this.slots.filter((s) => s.demoted).length >= this.size - this.idleTarget) return;
    slot.demoted = true;
    slot.cls = 'idle';
    // Through the spawner too; if chrt fails the worker stays where it was until retired.
    this.launcher.run(argv);
    // The other tenants get a prompt worker back now, not when the long batch ends.
    if (!this.closed && this.counted().length < this.size) this.spawn(this.classToStart());
  }

  /** A demoted worker whose batch ended: ended (its replacement started when it was demoted). */
  private retire(slot: Slot): void {
    slot.lost = true;
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
    void this.kill(slot.child);
    if (!this.closed && this.counted().length < this.size) this.spawn(this.classToStart());
    this.dispatch();
  }

  /**
   * A batch answered: each payload settled with its events or its error, in the order sent; one
   * that used more than its tenth marks its tenant long. A demoted worker is retired.
   */
  private finish(slot: Slot, answers: WorkerAnswers): void {
    const batch = slot.batch;
    if (!batch) return;
    this.clear(slot);
    const notRun: Task[] = [];
    for (const task of batch) {
      const reply = answers.replies.find((r) => r.id === task.id);
      if (!reply) {
        notRun.push(task);
        continue;
      }
      if (reply.cpuMs > this.longCpuMs(task)) this.markLong(task.tenant.key);
      this.settle(task, outcomeOf(reply));
    }
    if (notRun.length > 0) this.requeueNotRun(notRun);
    if (slot.demoted) return this.retire(slot);
    this.dispatch();
  }

  /** A batch's payloads the worker left when asked to yield: first in their tenant's queue, which takes its turn after the others'. */
  private requeueNotRun(tasks: Task[]): void {
    const tenant = (tasks[0] as Task).tenant;
    if (tenant.waiting.length === 0) this.turns.push(tenant);
    tenant.waiting.unshift(...tasks);
    this.queued += tasks.length;
  }

  private clear(slot: Slot): void {
    if (slot.batch) (slot.batch[0] as Task).tenant.running--;
    if (slot.watch) clearInterval(slot.watch);
    slot.watch = undefined;
    slot.batch = undefined;
    slot.yieldAsked = false;
    slot.yieldCpuMs = undefined;
    slot.startedAt = undefined;
    slot.lastCpuMs = undefined;
    this.idleRefs(slot, false);
  }

  /**
   * Gives up on a worker: its evaluation fails with `err` (a batch of several goes back to the
   * queue, one at a time: which of them was to blame is not known), the process is killed, a new
   * one starts when needed.
   */
  private async lose(slot: Slot, err: Error): Promise<void> {
    if (slot.lost) return;
    slot.lost = true;
    const batch = slot.batch;
    const task = batch?.[0];
    const lastCpuMs = slot.lastCpuMs;
    this.clear(slot);
    // A replacement that never became ready gives its tenant's share back.
    this.replaced(slot);
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
    if (task) {
      // Stopped at its limit or dead of its heap: long, whatever the reason.
      this.markLong(task.tenant.key);
      // The tenant whose evaluation cost this worker holds it, within its share, until the
      // replacement is ready: otherwise its next payload takes another tenant's idle worker while
      // this one starts. Charged before the evaluation is settled, which may free its last hold.
      if (!this.closed && slot.ready) {
        slot.replacing = task.tenant;
        task.tenant.replacing++;
      }
      if (!this.closed && (batch as Task[]).length > 1) this.requeueAlone(batch as Task[], lastCpuMs ?? 0);
      else {
        // A worker that died (heap cap) cannot say what it used: the last reading, else the limit.
        if (err instanceof MappingError && err.cpuMs === undefined) err.cpuMs = lastCpuMs ?? task.limits.timeoutMs;
        for (const t of batch as Task[]) this.settle(t, err);
      }
    }
    if (!this.closed) {
      this.restarts++;
      this.o.onWorkerLost?.(err.message);
    }
    await this.kill(slot.child);
    if (this.closed || !slot.ready) {
      this.replaced(slot);
      if (!this.closed) this.lostWhileStarting(slot, err);
      return;
    }
    // Replaced at once, so the next payload does not wait for a worker to start; the charge moves to it.
    if (this.counted().length < this.size) {
      const replacement = this.spawn(this.classToStart());
      replacement.replacing = slot.replacing;
      slot.replacing = undefined;
    }
    this.replaced(slot);
    this.dispatch();
  }

  /** A worker died before it was ready: without chrt from now on if chrt refused, else refuse what waits. */
  private lostWhileStarting(slot: Slot, err: Error): void {
    if (slot.viaChrt && /chrt/.test(slot.stderr)) {
      // chrt is there but may not set the policy here (a seccomp profile, a platform without
      // SCHED_IDLE): start the workers without it from now on, at nice 19, and say why.
      this.notIdle = `chrt could not set SCHED_IDLE: ${slot.stderr.trim().split('\n').pop()}`;
      this.dispatch();
      return;
    }
    // It died while starting (its script failed to load): starting another would fail the same
    // way, in a loop. Refuse what waits (ours to fix, so a 503 the sender retries, not a 422);
    // the next payload tries again.
    const failure = new MappingBusy(`a mapping worker could not start: ${err.message}`, 5);
    for (const waiting of this.takeAllWaiting()) this.settle(waiting, failure);
  }

  /** SIGKILL, then wait until the process is gone (a worker in a built-in call never reads a gentler signal). */
  private kill(child: RemoteWorker): Promise<void> {
    if (child.hasEnded) return Promise.resolve();
    return new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.kill();
    });
  }

  private settle(task: Task, outcome: MappingResult | Error): void {
    this.bytes -= task.bytes;
    task.tenant.bytes -= task.bytes;
    this.forgetIfIdle(task.tenant);
    if (outcome instanceof Error) {
      if (outcome instanceof MappingError && outcome.cpuMs !== undefined) outcome.cpuMs += task.lostCpuMs;
      task.reject(outcome);
    } else task.resolve(task.lostCpuMs > 0 ? { ...outcome, cpuMs: outcome.cpuMs + task.lostCpuMs } : outcome);
  }
}

/** A batch as the worker takes it: each distinct expression (source and limits) once, the payloads naming theirs. */
function batchMessage(batch: readonly Task[]): WorkerTasks {
  const expressions: WorkerExpression[] = [];
  const tasks = batch.map((t) => {
    let expression = expressions.findIndex((e) => e.source === t.source && e.limits === t.limits);
    if (expression < 0) expression = expressions.push({ source: t.source, limits: t.limits }) - 1;
    return { id: t.id, expression, json: t.json };
  });
  return { expressions, tasks };
}

/** One payload's answer from the worker: its events (the JSON it sent back, parsed), or its error. */
function outcomeOf(reply: WorkerReply): MappingResult | MappingError {
  if (!reply.ok) {
    const err = new MappingError(reply.code, reply.message, reply.position, reply.token);
    err.cpuMs = reply.cpuMs;
    return err;
  }
  try {
    return {
      items: JSON.parse(reply.json) as unknown[],
      cpuMs: reply.cpuMs,
      outputBytes: reply.outputBytes,
    };
  } catch (err) {
    return new MappingError(
      'INTAKE_EVALUATION',
      `the mapping worker answered what is not JSON: ${(err as Error).message}`,
    );
  }
}

/** onFirstWorker for a component's logger: says once how tenants' expressions are scheduled. */
export const logWorkerPriority =
  (logger: Pick<Logger, 'info' | 'warn'>, what: string) =>
  (p: WorkerPriority): void => {
    if (p.policy === 'idle')
      logger.info(
        `${what} run under SCHED_IDLE (long evaluations) and SCHED_BATCH at nice 19 (the others): request threads preempt them`,
      );
    else if (p.policy === 'batch') logger.info(`${what} run under SCHED_BATCH at nice ${p.nice}`);
    else
      logger.warn(
        { why: p.why },
        p.policy === 'nice'
          ? `${what} run at nice ${p.nice}, not SCHED_IDLE: a running evaluation can delay a request by a scheduler slice`
          : `${what} run at the request threads' priority`,
      );
  };
