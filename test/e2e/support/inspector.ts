/**
 * A test's view into a child process it started with `--inspect=127.0.0.1:0` (loopback only),
 * through the inspector protocol: ask for a full garbage collection, read process.memoryUsage().
 * For tests that measure what a process holds, not when V8 chooses to collect what it does not:
 * V8 runs its memory-reducing collection only once the process has been idle for a while, which a
 * busy machine delays by tens of seconds.
 */

export interface Inspected {
  /**
   * Full collections until the heap stops shrinking (at most three), as V8 does under memory
   * pressure: garbage is freed and empty pages go back to the system.
   */
  collectGarbage(): Promise<void>;
  /** process.memoryUsage() in the inspected process. */
  memoryUsage(): Promise<NodeJS.MemoryUsage>;
  close(): void;
}

/**
 * Connects to the inspector of a process started with `--inspect=127.0.0.1:0` (a port the system
 * picks, so no other process can take it first), found in what the process wrote to stderr.
 */
export async function inspect(stderr: string): Promise<Inspected> {
  const url = /Debugger listening on (ws:\/\/127\.0\.0\.1:\d+\/\S+)/.exec(stderr)?.[1];
  if (!url)
    throw new Error(`the process has no inspector on 127.0.0.1 (start it with --inspect=127.0.0.1:0): ${stderr}`);
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  let id = 0;
  const call = (method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const mine = ++id;
      socket.addEventListener('message', function listener(event) {
        const message = JSON.parse(String(event.data)) as {
          id?: number;
          result?: Record<string, unknown>;
          error?: { message: string };
        };
        if (message.id !== mine) return;
        socket.removeEventListener('message', listener);
        if (message.error) reject(new Error(`${method}: ${message.error.message}`));
        else resolve(message.result ?? {});
      });
      socket.send(JSON.stringify({ id: mine, method, params }));
    });
  const memoryUsage = async (): Promise<NodeJS.MemoryUsage> => {
    const answer = (await call('Runtime.evaluate', {
      expression: 'process.memoryUsage()',
      returnByValue: true,
    })) as { result: { value: NodeJS.MemoryUsage } };
    return answer.result.value;
  };
  return {
    async collectGarbage() {
      let heap = Number.POSITIVE_INFINITY;
      for (let i = 0; i < 3; i++) {
        await call('HeapProfiler.collectGarbage');
        const now = (await memoryUsage()).heapTotal;
        if (now >= heap) break;
        heap = now;
      }
    },
    memoryUsage,
    close: () => socket.close(),
  };
}
