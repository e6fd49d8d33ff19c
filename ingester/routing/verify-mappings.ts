/**
 * The standalone file gets the operator's check at load: every mapping compiles and passes its
 * tests, or the whole file is refused (and the routes in effect stay).
 */
import { ConfigError } from '../../common/config-files.js';
import type { RouteInput } from './route-table.js';

export async function verifyMappings(inputs: RouteInput[]): Promise<RouteInput[]> {
  // The engine (and JSONata) only when a route has a mapping (mapping-engine-loader.ts).
  const { checkMapping } = inputs.some((i) => i.route.mapping)
    ? await import('../../api/mapping/engine.js')
    : { checkMapping: undefined };
  for (const { source, route } of inputs) {
    if (!route.mapping) continue;
    const problem = await checkMapping?.(route.mapping);
    if (problem) throw new ConfigError(`${source}: invalid mapping: ${problem}`);
  }
  return inputs;
}
