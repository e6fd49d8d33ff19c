/**
 * The mapping engine (engine.ts, and with it JSONata: a few MiB of RSS) is loaded when the first
 * route with a mapping arrives, not at start: most routes map nothing, and every replica would pay
 * for it. The routing table compiles a route's mapping synchronously (a syntax error is found when
 * the route is built, never per request), so whoever hands routes to the table first awaits
 * loadMappingEngineFor; the table then takes the engine from here. A route's first mapped request
 * therefore never waits for the load: the route was compiled after it.
 */
import type { CompiledMapping, ExpressionRunner, MappingLimits, MappingSpec } from './mapping-model.js';

/** What the routing table takes of the engine (engine.ts compileMapping). */
export interface MappingCompiler {
  compileMapping(spec: MappingSpec, limits?: MappingLimits, runner?: ExpressionRunner): CompiledMapping;
}

let loaded: MappingCompiler | undefined;

/** Called by engine.ts when it is loaded, however it was imported. */
export function provideMappingEngine(engine: MappingCompiler): void {
  loaded = engine;
}

/** Loads the engine when any of `routes` has a mapping (once per process). */
export async function loadMappingEngineFor(routes: Iterable<{ mapping?: unknown }>): Promise<void> {
  if (loaded) return;
  for (const route of routes)
    if (route.mapping !== undefined) {
      await import('./engine.js');
      return;
    }
}

/** The loaded engine; throws when a mapped route reaches the table before loadMappingEngineFor. */
export function mappingEngine(): MappingCompiler {
  if (!loaded) throw new Error('the mapping engine was not loaded before a mapped route was compiled');
  return loaded;
}
