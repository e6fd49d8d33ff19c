/**
 * The built CLI (dist/cmd/intake.js) as a child process, the one way every test starts an
 * ingester, an operator or a console: its output kept, a wait until it answers that gives up at
 * once if it exits, and a stop that waits for the exit. What to start and on which loopback ports
 * is the caller's (test/e2e/support/ingester.ts, test/integration/support/cluster.ts).
 */
import {
  spawn,
  type ChildProcessByStdio,
  type SpawnOptionsWithStdioTuple,
  type StdioNull,
  type StdioPipe,
} from 'node:child_process';
import type { Readable } from 'node:stream';
import { join } from 'node:path';
import { ROOT } from './paths.js';
import { waitFor } from './waiting.js';

export const INTAKE = join(ROOT, 'dist/cmd/intake.js');

export interface IntakeOptions {
  /** Node flags before the script (e.g. the heap sizes of a pod's memory limit, an --import hook). */
  nodeArgs?: string[];
  /** Environment variables added to the test's own. */
  env?: NodeJS.ProcessEnv;
  /** Run under `ulimit -n N` (the soft limit on open files). */
  fdLimit?: number;
  /** Do not read the child's stdout (a stalled log reader); resume with resumeStdout(). */
  pauseStdout?: boolean;
}

export interface IntakeProcess {
  child: ChildProcessByStdio<null, Readable, Readable>;
  stdout: () => string;
  stderr: () => string;
  /** stdout and stderr interleaved as they came. */
  output: () => string;
  resumeStdout: () => void;
  exited: Promise<number | null>;
  /** Sends `signal` (SIGTERM by default) unless it has exited; resolves with the exit code. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

/** Starts `node [nodeArgs] dist/cmd/intake.js ...args`. */
export function spawnIntake(args: string[], options: IntakeOptions = {}): IntakeProcess {
  const argv = [...(options.nodeArgs ?? []), INTAKE, ...args];
  const spawnOptions: SpawnOptionsWithStdioTuple<StdioNull, StdioPipe, StdioPipe> = {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
  };
  const child =
    options.fdLimit === undefined
      ? spawn(process.execPath, argv, spawnOptions)
      : spawn(
          '/bin/sh',
          ['-c', `ulimit -n ${options.fdLimit} && exec "$0" "$@"`, process.execPath, ...argv],
          spawnOptions,
        );
  let out = '';
  let err = '';
  let both = '';
  const readStdout = (d: Buffer): void => void ((out += d), (both += d));
  if (options.pauseStdout) child.stdout.pause();
  else child.stdout.on('data', readStdout);
  child.stderr.on('data', (d: Buffer) => void ((err += d), (both += d)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    output: () => both,
    resumeStdout: () => void child.stdout.on('data', readStdout).resume(),
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/**
 * The deprecation warnings in a process's output: a setting or flag of an earlier spelling, still
 * read. Tests start processes on the current spelling, so that none drifts back unnoticed.
 */
export function deprecationWarnings(output: string): string[] {
  return output.split('\n').filter((line) => / is deprecated\b/.test(line));
}

/**
 * Polls `probe` (as waitFor does) until it answers; throws at once if the process exits first,
 * with what it wrote to stderr (or the end of its output when stderr is empty). On a timeout the
 * process is killed before the error is thrown: a start that failed must not leave it running,
 * where it would hold the test run open after its last test.
 */
export async function untilAnswers<T>(
  proc: IntakeProcess,
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs: number,
  intervalMs: number,
): Promise<T> {
  try {
    return await waitFor(
      what,
      async () => {
        if (proc.child.exitCode !== null)
          throw new Error(`intake exited: ${proc.stderr() || proc.output().slice(-4000)}`);
        return probe();
      },
      timeoutMs,
      intervalMs,
    );
  } catch (err) {
    await proc.stop('SIGKILL');
    throw err;
  }
}
