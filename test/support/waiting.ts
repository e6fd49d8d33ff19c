/** Polling until something holds, with a deadline that names what was awaited. */

/** Calls `fn` every `intervalMs` until it returns neither undefined nor false (its value is returned); throws after `timeoutMs`, with the last error `fn` threw. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Checks the in-process condition `what` every 10 ms until it holds; throws after `timeoutMs`. */
export async function until(what: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!what()) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
