/**
 * The standalone file gets the operator's check at load: every mapping compiles and passes its
 * tests, or the whole file is refused (and the routes in effect stay).
 */
import { checkMapping } from '../../api/mapping/engine.js';
import { ConfigError } from '../../common/config-files.js';
import type { RouteInput } from './route-table.js';

export async function verifyMappings(inputs: RouteInput[]): Promise<RouteInput[]> {
  for (const { source, route } of inputs) {
    if (!route.mapping) continue;
    const problem = await checkMapping(route.mapping);
    if (problem) throw new ConfigError(`${source}: invalid mapping: ${problem}`);
  }
  return inputs;
}
