/**
 * Repeated failures (a full disk, a bus that is down) must not flood the operational log: each
 * kind is logged at most once per interval, with how many were left out since, and without a
 * stack trace (the message and code say what happened; the stack is the same every time).
 */
import type { Logger } from 'pino';

export class LogLimiter {
  private readonly last = new Map<string, { atMs: number; suppressed: number }>();

  constructor(
    private readonly logger: Logger,
    private readonly intervalMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  error(key: string, err: unknown, fields: Record<string, unknown>, message: string): void {
    const nowMs = this.now();
    const seen = this.last.get(key);
    if (seen && nowMs - seen.atMs < this.intervalMs) {
      seen.suppressed++;
      return;
    }
    const e = err as { message?: string; code?: string; cause?: { code?: string } };
    // Not under `err`: pino's error serializer would add a stack.
    this.logger.error(
      {
        ...fields,
        error: { message: e?.message ?? String(err), code: e?.cause?.code ?? e?.code },
        suppressed: seen?.suppressed ?? 0,
      },
      message,
    );
    this.last.set(key, { atMs: nowMs, suppressed: 0 });
  }
}
