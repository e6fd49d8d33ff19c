/**
 * Preloaded (`node --import`) into the benchmark's second ingester: takes every native preset out
 * of the registry before any route is compiled, so that ingester maps presets with their JSONata
 * expressions, as all presets once were, in the same build as the first (bench/ingest/presets.ts).
 * The registry is a plain object of this one module instance, which the ingester imports too.
 */
import { NATIVE_PRESETS } from '../../api/mapping/native.js';

const registry = NATIVE_PRESETS as Record<string, unknown>;
for (const name of Object.keys(registry)) delete registry[name];
