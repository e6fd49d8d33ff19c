/**
 * What one mapping evaluation costs its namespace's CPU budget (limits/tenant-limiter.ts).
 *
 * For now the CPU time of this thread across the evaluation: the mapping runs on the event loop,
 * and an evaluation's own awaits let at most other microtasks in, not other requests' I/O. Once
 * custom expressions run in worker threads that report their CPU time per evaluation, charge that
 * figure instead: this is the one place to change.
 */
const threadCpuMs = (): number => {
  const used = process.threadCpuUsage();
  return (used.user + used.system) / 1000;
};

/** Runs one evaluation and charges its CPU milliseconds, whether it succeeded or failed. */
export async function meteredEvaluation<T>(evaluate: () => Promise<T>, charge: (cpuMs: number) => void): Promise<T> {
  const started = threadCpuMs();
  try {
    return await evaluate();
  } finally {
    charge(threadCpuMs() - started);
  }
}
