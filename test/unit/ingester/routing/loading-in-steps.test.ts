/**
 * Large route sets are checked and built in steps (the event loop turns between them, so /healthz
 * answers meanwhile), and the result is the same as in one go: the same routes, the same skips,
 * the same first-wins rule for a name published twice, the same errors naming the route.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate } from 'node:timers/promises';
import { stringify } from 'yaml';
import type { Route } from '../../../../api/route.js';
import { sha256Hex } from '../../../../api/verifiers.js';
import { newVerifiedCache } from '../../../../ingester/routing/credentials.js';
import { checkRoutesInSteps, FileRouteSource } from '../../../../ingester/routing/file-source.js';
import { RouteTable, type RouteInput } from '../../../../ingester/routing/route-table.js';

const route = (i: number, kind: Route['kind'] = 'WebhookIntegration'): Route => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind,
  name: kind === 'ApiKey' ? `key-${i}` : `hook-${i % 2900}`,
  namespace: `ns-${i % 50}`,
  credentials: [{ username: `u-${i}`, secret: { sha256: sha256Hex(`${kind}-${i}`) } }],
});

const inputs = (): RouteInput[] =>
  Array.from({ length: 3000 }, (_, i) => ({
    source: `#${i}`,
    route: route(i, i % 3 === 0 ? 'ApiKey' : 'WebhookIntegration'),
  }));

/** How many times the event loop turned while `work` ran. */
async function turnsDuring<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let running = true;
  const count = async (): Promise<void> => {
    while (running) {
      await setImmediate();
      turns++;
    }
  };
  const counting = count();
  const result = await work();
  running = false;
  await counting;
  return { result, turns };
}

describe('RouteTable.buildInSteps', () => {
  it('builds what build builds, skips alike, and lets the event loop turn', async () => {
    const all = inputs();
    const once = RouteTable.build(all, { allowPlaintext: false });
    const { result: stepped, turns } = await turnsDuring(() =>
      RouteTable.buildInSteps(all, { allowPlaintext: false }, 500),
    );
    expect(turns).toBeGreaterThanOrEqual(3);
    expect(stepped.table.size).toEqual(once.table.size);
    expect(stepped.skipped).toEqual(once.skipped);
    // A name published twice: the first one wins in both, the second is skipped and named.
    expect(stepped.skipped.some((s) => s.reason.includes('already published'))).toBe(true);
    expect(
      await stepped.table.authenticateWebhook('hook-1', 'u-1', 'WebhookIntegration-1', newVerifiedCache()),
    ).toBeDefined();
    expect(stepped.table.authenticateApiKey('ApiKey-2997', undefined)).toBeDefined();
    expect(stepped.table.authenticateApiKey('ApiKey-2998', undefined)).toBeUndefined();
  });
});

describe('checkRoutesInSteps', () => {
  const file = '/config.yaml';
  it('checks every route as loadRoutesFromFile does, in steps', async () => {
    const doc = { routes: Array.from({ length: 2500 }, (_, i) => route(i, 'ApiKey')) };
    const { result, turns } = await turnsDuring(() => checkRoutesInSteps(doc, file));
    expect(result).toHaveLength(2500);
    expect(result[2499]?.source).toBe(`${file}#routes[2499]`);
    expect(turns).toBeGreaterThanOrEqual(2);
  });

  it('refuses the whole file, naming the route, when one route deep in the list is invalid', async () => {
    const routes: unknown[] = Array.from({ length: 2500 }, (_, i) => route(i, 'ApiKey'));
    routes[2100] = { ...route(2100), kind: 'Nonsense' };
    await expect(checkRoutesInSteps({ routes }, file)).rejects.toThrow(/routes\[2100\]/);
    await expect(checkRoutesInSteps({}, file)).rejects.toThrow(/no routes: list/);
    await expect(checkRoutesInSteps({ routes: 'x' }, file)).rejects.toThrow(/routes must be a list/);
  });
});

describe('FileRouteSource', () => {
  it('loads its first routes from the document it was given, without reading the file again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'intake-steps-'));
    const path = join(dir, 'intake.yaml');
    // The file on disk lists no route; the document read at startup lists one.
    writeFileSync(path, stringify({ routes: [] }));
    const source = new FileRouteSource(path, [], undefined, { routes: [route(1)] });
    const sets: RouteInput[][] = [];
    await source.start({
      onRoutes: (set) => void sets.push(set),
      onError: (err) => {
        throw err;
      },
    });
    await source.stop();
    expect(sets.map((set) => set.map((i) => i.route.name))).toEqual([['hook-1']]);
  });
});
