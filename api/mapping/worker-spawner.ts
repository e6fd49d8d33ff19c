/**
 * The mapping workers' spawner: a small process that starts the workers (and the pool's chrt
 * demotions) for the ingester, so that the ingester itself never forks once it runs.
 *
 * Why: node starts a child with fork(), and fork() copies the parent's page tables on the thread
 * that calls it. Measured on the ingester's request thread: 0.78 ms at 55 MiB resident, 2.03 ms at
 * 115 MiB, 4.98 ms at 203 MiB, each time a worker stopped at its time limit was replaced (about
 * once a second under a tenant that burns its limit), while every other tenant's requests waited.
 * This process stays small (one V8 isolate and nothing else), forks in its own address space, and
 * runs at nice 19, so its forks take little of the request thread's core. The workers start from
 * here as they did from the ingester (through chrt for their class), and lower themselves to nice
 * 19 where they are not idle.
 *
 * It only starts processes and reports on them: the workers talk to the ingester over a socket of
 * their own (worker-launcher.ts), not through this process. Messages (IPC with the ingester):
 *   in:  { spawn: id, argv, env } | { kill: id } | { run: argv }
 *   out: { started: id, pid } | { failed: id, message } | { exited: id, code, signal, stderr }
 * When the ingester goes (its channel closes), this process kills the workers it started and ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { settleWorkerPriority } from './worker-priority.js';

/** What the spawner is asked. */
export type SpawnerRequest =
  { spawn: number; argv: string[]; env: NodeJS.ProcessEnv } | { kill: number } | { run: string[] };

/** What the spawner reports: a worker started (its pid), could not start, or ended (with the end of its stderr). */
export type SpawnerReport =
  | { started: number; pid: number }
  | { failed: number; message: string }
  | { exited: number; code: number | null; signal: NodeJS.Signals | null; stderr: string };

/** Enough of a dying worker's stderr to tell an out-of-memory end (or chrt's refusal) from any other. */
export const STDERR_KEEP = 4096;

const send = process.send?.bind(process);
if (send) {
  settleWorkerPriority('the spawner');
  const children = new Map<number, ChildProcess>();

  const start = (id: number, argv: string[], env: NodeJS.ProcessEnv): void => {
    let child: ChildProcess;
    try {
      child = spawn(argv[0] as string, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], env });
    } catch (err) {
      send({ failed: id, message: (err as Error).message } satisfies SpawnerReport);
      return;
    }
    children.set(id, child);
    let stderr = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (d: string) => {
      stderr = (stderr + d).slice(-STDERR_KEEP);
    });
    child.once('spawn', () => send({ started: id, pid: child.pid as number } satisfies SpawnerReport));
    child.once('error', (err) => {
      // Not started (no such file): there will be no 'close' to wait for.
      if (child.pid !== undefined) return;
      children.delete(id);
      send({ failed: id, message: err.message } satisfies SpawnerReport);
    });
    // 'close': ended, and its stderr read to the end.
    child.once('close', (code, signal) => {
      if (!children.delete(id)) return;
      send({ exited: id, code, signal, stderr } satisfies SpawnerReport);
    });
  };

  process.on('message', (m: SpawnerRequest) => {
    if ('spawn' in m) start(m.spawn, m.argv, m.env);
    else if ('kill' in m) children.get(m.kill)?.kill('SIGKILL');
    else {
      const command = spawn(m.run[0] as string, m.run.slice(1), { stdio: 'ignore' });
      // A command that fails (chrt refused) changes nothing the pool relies on.
      command.on('error', () => undefined);
    }
  });
  process.on('disconnect', () => {
    for (const child of children.values()) child.kill('SIGKILL');
    process.exit(0);
  });
}
