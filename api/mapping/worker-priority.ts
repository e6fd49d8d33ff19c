/**
 * Mapping workers run below the process that answers requests, in two classes fixed when each
 * worker starts (worker-pool.ts decides which evaluation runs in which):
 *
 * - Idle workers, for a tenant whose recent evaluations ran long: started through `chrt --idle 0`
 *   (util-linux; in the image). The policy is set before node starts, so every thread the worker
 *   ever has inherits it: its JavaScript thread, and also V8's compiler and garbage-collector
 *   threads and node's start-up. The kernel lets any other thread that wakes up preempt an
 *   idle-policy one at once.
 * - Prompt workers, for the other tenants' (short) evaluations: started through `chrt --batch 0`,
 *   and the worker puts every thread it has at nice 19 before it loads the engine (the image has
 *   no `nice`; threads started later inherit it): SCHED_BATCH at nice 19, a weight of 15 against
 *   the request thread's 1,024, and a batch thread that wakes never preempts a request thread. Against an idle worker it is the
 *   request thread's place that it takes: it preempts an idle worker at once and gets five sixths
 *   of the core while both run. Two idle workers would share it evenly, and neither preempts the
 *   other when it wakes (measured: another tenant's short evaluations then waited behind a
 *   burner for whole scheduler slices, and its queue share filled).
 * - Demotion: a prompt worker whose evaluation turns out long is moved to SCHED_IDLE, all its
 *   threads, by `chrt --idle --all-tasks --pid 0 PID` (any process may lower its own children;
 *   none may raise them again without privileges, so the pool retires it afterwards).
 * - Why a process and not a thread (measured, docs/benchmarks.md "noisy neighbour"): a worker
 *   thread could lower only itself, and only once its start-up had run. V8's helper threads work
 *   for every isolate of a process at the process's priority, and all threads share one address
 *   space and its locks. A hostile expression stopped at its limit every few seconds raised another
 *   tenant's p99 several-fold, against none for the same work in idle-policy processes.
 * - Without chrt (another platform, or a system without util-linux) a worker lowers its threads
 *   to nice 19 whatever its class, and the pool says so once in its log: the classes are then the
 *   same.
 */
import { accessSync, constants, readdirSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { setPriority } from 'node:os';

const WORKER_NICE = 19;

export type WorkerPriority =
  | { policy: 'idle' }
  | { policy: 'batch'; nice: number }
  | { policy: 'nice'; nice: number; why: string }
  | { policy: 'unchanged'; why: string };

/** The executable `name` on `path` (PATH's syntax), if any. */
function findOnPath(name: string, path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** `argv` to run under SCHED_IDLE from its first instruction, when chrt is on `path`. */
export function idleCommand(argv: readonly string[], path?: string): { argv: string[]; idle: boolean } {
  if (process.platform !== 'linux') return { argv: [...argv], idle: false };
  const chrt = findOnPath('chrt', path);
  return chrt ? { argv: [chrt, '--idle', '0', ...argv], idle: true } : { argv: [...argv], idle: false };
}

/**
 * `argv` to run as a prompt worker: SCHED_BATCH from its first instruction, when chrt is on `path`
 * (the worker then lowers its threads to nice 19 itself: settleWorkerPriority).
 */
export function promptCommand(argv: readonly string[], path?: string): { argv: string[]; idle: boolean } {
  if (process.platform !== 'linux') return { argv: [...argv], idle: false };
  const chrt = findOnPath('chrt', path);
  return chrt ? { argv: [chrt, '--batch', '0', ...argv], idle: false } : { argv: [...argv], idle: false };
}

/** The command that moves every thread of process `pid` to SCHED_IDLE, when chrt is on `path`. */
export function demoteCommand(pid: number, path?: string): string[] | undefined {
  if (process.platform !== 'linux') return undefined;
  const chrt = findOnPath('chrt', path);
  return chrt ? [chrt, '--idle', '--all-tasks', '--pid', '0', String(pid)] : undefined;
}

const SCHED_IDLE = 5;
const SCHED_BATCH = 3;

/**
 * A /proc stat file (`/proc/PID/stat`, `/proc/thread-self/stat`, ...) as a look-up of its numeric
 * fields by their number in proc(5): 4 ppid, 14 utime, 15 stime, 19 nice, 41 policy. Undefined
 * where it cannot be read (not Linux, or the process has ended).
 */
export function readProcStat(path: string): ((field: number) => number) | undefined {
  let stat: string;
  try {
    stat = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  // Field 2, "(comm)", may hold spaces and parentheses: the fields after its last ")" start at 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (field) => Number(fields[field - 3]);
}

/**
 * This thread, then every other thread of the process (V8's, started before any script ran), to
 * `nice`; threads started later inherit it from the thread that starts them. Linux's setpriority
 * takes a thread id; where there is no /proc, this thread alone.
 */
function lowerEveryThread(nice: number): void {
  setPriority(nice);
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return;
  }
  for (const tid of tids)
    try {
      setPriority(Number(tid), nice);
    } catch {
      // the thread has ended
    }
}

/**
 * In a worker, before it loads the engine: what it runs under. Under SCHED_IDLE (an idle worker):
 * nothing to do. Otherwise it lowers its threads to nice 19, and, unless it is a prompt worker
 * (SCHED_BATCH, started through chrt), says why it is
 * not idle (`why` comes from the pool, which knows how it started the worker).
 */
export function settleWorkerPriority(why: string): WorkerPriority {
  const stat = readProcStat('/proc/thread-self/stat');
  if (stat?.(41) === SCHED_IDLE) return { policy: 'idle' };
  try {
    lowerEveryThread(WORKER_NICE);
    // A prompt worker (chrt --batch 0): as meant.
    if (stat?.(41) === SCHED_BATCH) return { policy: 'batch', nice: WORKER_NICE };
    return { policy: 'nice', nice: WORKER_NICE, why };
  } catch (err) {
    return { policy: 'unchanged', why: `${why}; setpriority: ${(err as Error).message}` };
  }
}
