/**
 * Event-loop overload detection for the 503 answer. It replaces @fastify/under-pressure, which
 * samples process.memoryUsage() on a timer: that call throws EMFILE once file descriptors run out,
 * and nothing catches it, so idle connections alone could kill the process. This samples only the
 * event-loop delay, which needs no descriptor.
 */
import { monitorEventLoopDelay, type ELDHistogram } from 'node:perf_hooks';

const RESOLUTION_MS = 10;

export class EventLoopGuard {
  private readonly histogram: ELDHistogram;
  private readonly timer: NodeJS.Timeout;
  private delayMs = 0;
  private lastSampleMs = performance.now();

  constructor(
    private readonly maxDelayMs: number,
    private readonly sampleIntervalMs = 1000,
  ) {
    this.histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    this.histogram.enable();
    this.timer = setInterval(() => this.sample(), sampleIntervalMs);
    this.timer.unref();
  }

  /** Mean event-loop delay over the last sample interval, in ms. */
  get eventLoopDelayMs(): number {
    return this.delayMs;
  }

  get overloaded(): boolean {
    return this.delayMs > this.maxDelayMs;
  }

  private sample(): void {
    // The histogram may not have recorded a block yet when this timer runs right after it (both
    // were due); this timer's own lateness measures that block. With no sample the mean is NaN.
    const nowMs = performance.now();
    const lateness = nowMs - this.lastSampleMs - this.sampleIntervalMs;
    this.lastSampleMs = nowMs;
    const mean = this.histogram.mean / 1e6;
    this.delayMs = Math.max(0, lateness, Number.isFinite(mean) ? mean - RESOLUTION_MS : 0);
    this.histogram.reset();
  }

  stop(): void {
    clearInterval(this.timer);
    this.histogram.disable();
  }
}
