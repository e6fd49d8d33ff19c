/**
 * V8 flags intake sets for itself, imported first by cmd/intake.ts so they hold before any of its
 * code is compiled, however it is started (the image, the Helm chart, `npm start`, the `intake` bin,
 * `node dist/cmd/intake.js`): V8 refuses them in NODE_OPTIONS, and a flag on a command line is
 * easily forgotten.
 *
 * `--no-maglev`: no mid-tier optimising compiler. Hot functions go from the baseline compiler
 * (Sparkplug) straight to TurboFan, as they did before Node 22. Under single-event load Maglev's
 * compilations freed about 12 MiB of compiler zones that glibc's malloc kept resident afterwards
 * (the peak RSS went from 116-122 to 104-105 MiB), and the hot path ends up in TurboFan code
 * either way: requests per CPU-second did not change measurably (docs/benchmarks.md, "Memory").
 * What it costs is a slower warm-up of code that runs a few hundred times and never becomes hot.
 *
 * The young generation's bound (`--max-semi-space-size`) cannot be set here: V8 reads it when the
 * heap is created, so it stays on the command line and in NODE_OPTIONS (Dockerfile).
 */
import { setFlagsFromString } from 'node:v8';

export const RUNTIME_V8_FLAGS: readonly string[] = ['--no-maglev'];

for (const flag of RUNTIME_V8_FLAGS) setFlagsFromString(flag);
