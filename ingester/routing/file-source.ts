/**
 * Standalone mode: routes listed under `routes:` in the YAML config file. The file is read whole
 * and checked exactly as at startup (the settings' shape, a `routes:` list, every route); a file
 * startup would refuse is refused on reload too, and the current table stays in place. So an
 * empty or half-written file can never install an empty routing table.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { watch, type FSWatcher } from 'chokidar';
import { validateRoute, RouteValidationError } from '../../api/route.js';
import { ConfigError, readYamlFile } from '../../common/config-files.js';
import type { RouteSource } from './route-source.js';
import { unknownDestination, type KnownDestination, type RouteInput } from './route-table.js';
import { verifyMappings } from './verify-mappings.js';

/** The settings' own check of the whole file (config.ts checkSettingsFile), given by the caller: routing sits below the settings. */
export type SettingsFileCheck = (file: unknown, source: string) => void;

/** Every route is checked, including that the destinations it names are configured (`destinations:`). */
export function loadRoutesFromFile(
  path: string,
  destinations: readonly KnownDestination[] = [],
  checkSettingsFile: SettingsFileCheck = () => undefined,
): RouteInput[] {
  const doc = readYamlFile(path) as { routes?: unknown };
  checkSettingsFile(doc, path);
  const routes = doc.routes;
  if (routes === undefined)
    throw new ConfigError(
      `${path}: no routes: list (standalone mode reads its routes from this file; write routes: [] to run with none)`,
    );
  if (!Array.isArray(routes)) throw new ConfigError(`${path}: routes must be a list`);
  return routes.map((raw, i) => {
    try {
      const route = validateRoute(raw);
      const problem = unknownDestination(route, destinations);
      if (problem)
        throw new ConfigError(
          `${path}: routes[${i}] (${route.name}): ${problem.startsWith('rules[') ? '' : 'destinations: '}${problem}`,
        );
      return { source: `${path}#routes[${i}]`, route };
    } catch (err) {
      if (err instanceof RouteValidationError)
        throw new ConfigError(`${path}: routes[${i}]: ${err.problems.join('; ')}`, { cause: err });
      throw err;
    }
  });
}

/** Watches the file (and survives editors and ConfigMap mounts that replace it) and reloads on change. */
export class FileRouteSource implements RouteSource {
  readonly allowPlaintext = true;
  private watcher?: FSWatcher;
  private lastDigest = '';

  constructor(
    private readonly path: string,
    private readonly destinations: readonly KnownDestination[] = [],
    private readonly checkSettingsFile: SettingsFileCheck = () => undefined,
  ) {}

  /** Loads once (throws if the file is bad: refuse to start on a broken config), then watches. */
  async start(handlers: Parameters<RouteSource['start']>[0]): Promise<void> {
    handlers.onRoutes(await verifyMappings(loadRoutesFromFile(this.path, this.destinations, this.checkSettingsFile)));
    this.lastDigest = this.digest() ?? '';
    this.watcher = watch(this.path, {
      atomic: 200,
      awaitWriteFinish: { stabilityThreshold: 100, pollInterval: 50 },
      ignoreInitial: true,
    });
    const reload = async (): Promise<void> => {
      const digest = this.digest();
      if (digest === undefined) return handlers.onError(new ConfigError(`${this.path} cannot be read`));
      if (digest === this.lastDigest) return;
      try {
        const inputs = await verifyMappings(loadRoutesFromFile(this.path, this.destinations, this.checkSettingsFile));
        this.lastDigest = digest;
        handlers.onRoutes(inputs);
      } catch (err) {
        handlers.onError(err as Error);
      }
    };
    this.watcher
      .on('change', reload)
      .on('add', reload)
      .on('error', (err) => handlers.onError(err as Error));
  }

  private digest(): string | undefined {
    try {
      return createHash('sha256').update(readFileSync(this.path)).digest('hex');
    } catch {
      return undefined;
    }
  }

  async stop(): Promise<void> {
    await this.watcher?.close();
  }
}
