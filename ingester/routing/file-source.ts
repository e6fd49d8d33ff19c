/**
 * Standalone mode: routes listed under `routes:` in the YAML config file. The file is read whole
 * and checked exactly as at startup (the settings' shape, a `routes:` list, every route); a file
 * startup would refuse is refused on reload too, and the current table stays in place. So an
 * empty or half-written file can never install an empty routing table.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setImmediate } from 'node:timers/promises';
import { watch, type FSWatcher } from 'chokidar';
import { validateRoute, RouteValidationError } from '../../api/route.js';
import { ConfigError, readYamlFile } from '../../common/config-files.js';
import { parseDuration } from '../../common/duration.js';
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
  const routes = routesOf(readYamlFile(path), path, checkSettingsFile);
  return routes.map((raw, i) => checkRoute(raw, i, path, destinations));
}

/**
 * The same as loadRoutesFromFile from a document already read, giving the event loop a turn every
 * VALIDATE_STEP routes: the process keeps answering /healthz while 20,000 routes are checked.
 */
export async function checkRoutesInSteps(
  doc: unknown,
  path: string,
  destinations: readonly KnownDestination[] = [],
  checkSettingsFile: SettingsFileCheck = () => undefined,
): Promise<RouteInput[]> {
  const routes = routesOf(doc, path, checkSettingsFile);
  const inputs: RouteInput[] = [];
  for (let i = 0; i < routes.length; i++) {
    if (i > 0 && i % VALIDATE_STEP === 0) await setImmediate();
    inputs.push(checkRoute(routes[i], i, path, destinations));
  }
  return inputs;
}

/** Routes checked between two turns of the event loop (checkRoutesInSteps). */
const VALIDATE_STEP = 1000;

function routesOf(doc: unknown, path: string, checkSettingsFile: SettingsFileCheck): unknown[] {
  checkSettingsFile(doc, path);
  const routes = (doc as { routes?: unknown }).routes;
  if (routes === undefined)
    throw new ConfigError(
      `${path}: no routes: list (standalone mode reads its routes from this file; write routes: [] to run with none)`,
    );
  if (!Array.isArray(routes)) throw new ConfigError(`${path}: routes must be a list`);
  return routes;
}

function checkRoute(raw: unknown, i: number, path: string, destinations: readonly KnownDestination[]): RouteInput {
  try {
    const route = validateRoute(withTolerance(raw, `${path}: routes[${i}]`));
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
}

/**
 * A file route spells the signature's tolerance as the CRD does, a duration (`tolerance: 5m`); the
 * route document (and a Secret the operator writes) holds `toleranceSeconds`, which a file may
 * still give (config.ts warns of it at start-up). Both with two values are refused.
 */
function withTolerance(raw: unknown, where: string): unknown {
  const signature = (raw as { authentication?: { signature?: Record<string, unknown> } } | null)?.authentication
    ?.signature;
  if (typeof signature !== 'object' || signature === null || !('tolerance' in signature)) return raw;
  const { tolerance, ...rest } = signature;
  const field = `${where}.authentication.signature.tolerance`;
  let ms: number;
  try {
    if (typeof tolerance !== 'string' || tolerance === '')
      throw new Error(`${JSON.stringify(tolerance)} is not a duration such as "5m"`);
    ms = parseDuration(tolerance);
  } catch (err) {
    throw new ConfigError(`${field}: ${(err as Error).message}`);
  }
  if (ms < 1000 || ms > 86_400_000 || ms % 1000 !== 0)
    throw new ConfigError(`${field}: ${JSON.stringify(tolerance)} must be whole seconds between 1s and 24h`);
  if (rest.toleranceSeconds !== undefined && rest.toleranceSeconds !== ms / 1000)
    throw new ConfigError(
      `${field} and toleranceSeconds are both given, with different values (${JSON.stringify(tolerance)} and ${JSON.stringify(rest.toleranceSeconds)}): keep tolerance alone`,
    );
  const route = raw as { authentication: Record<string, unknown> };
  return { ...route, authentication: { ...route.authentication, signature: { ...rest, toleranceSeconds: ms / 1000 } } };
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
    /** The file as the settings were read from it at startup: the first load does not read it again. */
    private firstDocument?: unknown,
  ) {}

  /** Loads once (throws if the file is bad: refuse to start on a broken config), then watches. */
  async start(handlers: Parameters<RouteSource['start']>[0]): Promise<void> {
    const digest = this.digest() ?? '';
    const doc = this.firstDocument ?? readYamlFile(this.path);
    this.firstDocument = undefined;
    await handlers.onRoutes(
      await verifyMappings(await checkRoutesInSteps(doc, this.path, this.destinations, this.checkSettingsFile)),
    );
    this.lastDigest = digest;
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
        const doc = readYamlFile(this.path);
        const inputs = await verifyMappings(
          await checkRoutesInSteps(doc, this.path, this.destinations, this.checkSettingsFile),
        );
        this.lastDigest = digest;
        await handlers.onRoutes(inputs);
      } catch (err) {
        handlers.onError(err as Error);
      }
    };
    // One reload at a time, in the order of the changes: a slow one never installs after a newer one.
    let reloading = Promise.resolve();
    const reloadInTurn = (): void => void (reloading = reloading.then(reload));
    this.watcher
      .on('change', reloadInTurn)
      .on('add', reloadInTurn)
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
