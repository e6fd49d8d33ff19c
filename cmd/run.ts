/**
 * How every long-running command (ingester, operator, console) ends: on SIGTERM or SIGINT it stops
 * its component once and exits 0, or 1 when stopping failed or outlasted its time limit. SIGHUP,
 * where the command has a use for it, reopens files (log rotation) and never stops anything.
 */
import type { Logger } from 'pino';

/** The part of `process` this needs; a test passes its own. */
export interface SignalTarget {
  once(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  on(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  exit(code: number): void;
}

export interface StopOnSignalsOptions {
  /** Stops the component: resolves when everything is closed and flushed. */
  stop: () => Promise<unknown>;
  logger: Pick<Logger, 'info' | 'error'>;
  /** Exit 1 when stopping takes longer (none: wait as long as it takes). */
  timeoutMs?: number;
  /** SIGHUP: reopen files. */
  hangup?: () => void;
}

export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

export function stopOnSignals(o: StopOnSignalsOptions, target: SignalTarget = process): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    o.logger.info({ signal }, 'signal received');
    // The other signal while stopping (SIGINT after SIGTERM): one stop is enough. The same signal
    // again has no listener left, so it ends the process at once, as the user asked.
    if (stopping) return;
    stopping = true;
    if (o.timeoutMs !== undefined) {
      const timer = setTimeout(() => {
        o.logger.error({ timeoutSeconds: (o.timeoutMs ?? 0) / 1000 }, 'shutdown timed out; exiting');
        target.exit(1);
      }, o.timeoutMs);
      timer.unref();
    }
    o.stop().then(
      () => target.exit(0),
      (err: Error) => {
        o.logger.error({ err: { message: err?.message } }, 'shutdown failed');
        target.exit(1);
      },
    );
  };
  for (const signal of STOP_SIGNALS) target.once(signal, stop);
  const hangup = o.hangup;
  if (hangup)
    target.on('SIGHUP', () => {
      o.logger.info('SIGHUP: reopening files');
      hangup();
    });
}
