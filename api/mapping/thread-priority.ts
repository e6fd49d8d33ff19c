/**
 * Puts the calling thread below the thread that answers requests (mapping-worker.ts calls it first,
 * before it loads the mapping engine).
 *
 * - SCHED_IDLE when `chrt` (util-linux; in the image) can set it: the kernel lets any normal thread
 *   that wakes up preempt an idle-policy one at once. The noisy-neighbour benchmark measured the
 *   difference (docs/benchmarks.md): at nice 19 a running evaluation still delayed the request
 *   thread's wake-ups, because the kernel's scheduler (EEVDF) only weighs nice values and lets the
 *   running thread finish its slice first.
 * - Otherwise nice 19 (a weight of 15 against the request thread's 1,024).
 * Linux only: there both belong to the calling thread; elsewhere they would lower the whole
 * process, so nothing changes.
 */
import { execFileSync } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

const WORKER_NICE = 19;

export type ThreadPriority =
  | { policy: 'idle'; tid: number }
  | { policy: 'nice'; nice: number; tid: number; why: string }
  | { policy: 'unchanged'; why: string };

/** Lowers the calling thread; says what it got. Never throws. */
export function lowerThisThread(): ThreadPriority {
  if (process.platform !== 'linux') return { policy: 'unchanged', why: `not on Linux (${process.platform})` };
  let tid: number;
  try {
    // "<pid>/task/<tid>": the calling thread's own id, which Node has no call for.
    tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch (err) {
    return { policy: 'unchanged', why: `/proc/thread-self: ${(err as Error).message}` };
  }
  try {
    setPriority(WORKER_NICE);
  } catch (err) {
    return { policy: 'unchanged', why: `setpriority: ${(err as Error).message}` };
  }
  try {
    // Lowering one's own policy needs no privilege. The child is forked from this (already
    // lowered) thread and exits at once.
    execFileSync('chrt', ['--idle', '--pid', '0', String(tid)], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000 });
    return { policy: 'idle', tid };
  } catch (err) {
    const e = err as Error & { stderr?: Buffer; code?: string };
    const why = e.code === 'ENOENT' ? 'chrt not found' : e.stderr?.toString().trim() || e.message;
    return { policy: 'nice', nice: WORKER_NICE, tid, why: `SCHED_IDLE not set (${why})` };
  }
}
