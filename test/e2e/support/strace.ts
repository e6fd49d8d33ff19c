/**
 * Which threads of a running process flush files to disk: strace attached to every thread of it
 * records each fsync/fdatasync with the file's path, while `run` drives the process. The event
 * loop's thread is the one whose thread id is the process id; libuv's pool threads have others.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../support/waiting.js';

/** Whether strace can run here at all (a test that needs it is skipped where it cannot). */
export const hasStrace = process.platform === 'linux' && spawnSync('strace', ['-V']).status === 0;

export interface Flush {
  /** The thread that called fsync/fdatasync. */
  thread: number;
  /** The line strace wrote, with the descriptor's path (`fdatasync(23</tmp/x/spool.sqlite-wal>)`). */
  line: string;
}

/**
 * The flushes `pid` made while `run` ran, or undefined when strace may not attach here (a
 * container without ptrace: then nothing can be observed this way, and the caller says so).
 */
export async function flushesDuring(pid: number, run: () => Promise<void>): Promise<Flush[] | undefined> {
  const dir = mkdtempSync(join(tmpdir(), 'intake-strace-'));
  const log = join(dir, 'strace.log');
  const strace = spawn('strace', ['-f', '-y', '-e', 'trace=fsync,fdatasync', '-o', log, '-p', String(pid)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let said = '';
  strace.stderr.on('data', (d: Buffer) => void (said += d.toString()));
  try {
    // strace says so on stderr once it is attached to the threads (or that it may not attach).
    await waitFor('strace attached', async () => /attached|not permitted/.test(said), 10_000, 20);
    if (!/attached/.test(said)) {
      console.warn(`strace cannot attach here, nothing checked: ${said.trim()}`);
      return undefined;
    }
    await run();
  } finally {
    const gone = new Promise((resolve) => strace.once('exit', resolve));
    strace.kill('SIGINT');
    await gone;
  }
  const text = existsSync(log) ? readFileSync(log, 'utf8') : '';
  rmSync(dir, { recursive: true, force: true });
  return text
    .split('\n')
    .filter((l) => /f(data)?sync\(\d+</.test(l))
    .map((line) => ({ thread: Number(/^(\d+)/.exec(line)?.[1]), line }));
}
