/**
 * V8 flags the ingester sets for itself once its first routing table is in place and it serves
 * (main.ts), however it was started (the image, the Helm chart, `npm start`, the `intake` bin):
 * V8 refuses them in NODE_OPTIONS, and a flag on a command line is easily forgotten.
 *
 * `--no-maglev`: no mid-tier optimising compiler from then on. Functions that get hot while
 * serving go from the baseline compiler (Sparkplug) straight to TurboFan. Under single-event load
 * Maglev's compilations freed about 12 MiB of compiler zones that glibc's malloc kept resident
 * (peak RSS 116-122 MiB with it, 104-105 without), and the request path ends up in TurboFan code
 * either way: requests per CPU-second did not change measurably (docs/benchmarks.md, "Memory").
 * Not before the first table: loading 20,000 routes without Maglev took more CPU and a higher peak
 * (160-161 MiB against 151-156), its short-lived hot loops finishing before TurboFan would take them.
 *
 * The young generation's bound (`--max-semi-space-size`) cannot be set here: V8 reads it when the
 * heap is created, so it stays on the command line and in NODE_OPTIONS (Dockerfile).
 */
import { setFlagsFromString } from 'node:v8';

export const SERVING_V8_FLAGS: readonly string[] = ['--no-maglev'];

let set = false;

/** Sets SERVING_V8_FLAGS, once per process; code already compiled by Maglev keeps running. */
export function useServingV8Flags(): void {
  if (set) return;
  set = true;
  for (const flag of SERVING_V8_FLAGS) setFlagsFromString(flag);
}
