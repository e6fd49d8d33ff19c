/**
 * The route Secrets' source against a scripted API: the informer's cache is where each Secret's
 * parsed route is kept, so a watch event, a relist after 410 and a deletion must each hand over
 * what the Secret holds now, and an unchanged Secret keeps its parsed route (not parsed again).
 */
import type { V1Secret } from '@kubernetes/client-node';
import pino from 'pino';
import type { KubeApiClient } from '../../../../kube/api-client.js';
import { KubernetesRouteSource } from '../../../../ingester/routing/kubernetes-source.js';
import type { RouteChange, RouteInput, SkippedRoute } from '../../../../ingester/routing/route-table.js';
import { until } from '../../../support/waiting.js';

const NS = 'intake';
const secret = (name: string, rv: string, doc: unknown): V1Secret => ({
  metadata: { name, namespace: NS, resourceVersion: rv, labels: { 'intake.dev/route': 'true' } },
  data: { 'route.json': Buffer.from(JSON.stringify(doc)).toString('base64') },
});
const hook = (name: string, password = 'a'.repeat(64)) => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace: 'team',
  credentials: [{ username: name, secret: { sha256: password } }],
});

/** Lists what `listed` holds; each watch's events are pushed by the test through `send`. */
function scriptedApi() {
  const api = {
    listed: [] as V1Secret[],
    lists: 0,
    send: undefined as undefined | ((phase: string, obj: unknown) => void),
    end: undefined as undefined | ((err: unknown) => void),
    list: async (_path: string, _query: unknown, each: (s: V1Secret) => unknown) => {
      api.lists++;
      return { items: api.listed.map((s) => each(JSON.parse(JSON.stringify(s)) as V1Secret)), resourceVersion: '100' };
    },
    watch: async (
      _p: string,
      _q: unknown,
      onEvent: (phase: string, obj: unknown) => void,
      done: (e: unknown) => void,
    ) => {
      api.send = onEvent;
      api.end = done;
      return new AbortController();
    },
  };
  return api;
}

it('hands over the first list, then each change from a watch event and from a relist after 410', async () => {
  const api = scriptedApi();
  api.listed = [
    secret('route-a', '1', hook('a')),
    secret('route-b', '2', hook('b')),
    secret('route-bad', '3', { kind: 'x' }),
  ];
  const source = new KubernetesRouteSource(api as unknown as KubeApiClient, NS, pino({ level: 'silent' }));
  const sets: Array<{ inputs: RouteInput[]; skipped: SkippedRoute[] }> = [];
  const changes: RouteChange[][] = [];
  await source.start({
    onRoutes: async (inputs, skipped = []) => void sets.push({ inputs, skipped }),
    onChanges: async (c) => void changes.push(c),
    onError: (err) => {
      throw err;
    },
  });
  expect(sets).toHaveLength(1);
  expect(sets[0]?.inputs.map((i) => i.route.name)).toEqual(['a', 'b']);
  expect(sets[0]?.skipped.map((s) => s.source)).toEqual([`secret ${NS}/route-bad`]);
  const routeB = sets[0]?.inputs[1]?.route;

  await until(() => api.send !== undefined);
  api.send?.('MODIFIED', secret('route-a', '4', hook('a', 'b'.repeat(64))));
  await until(() => changes.length === 1);
  expect(changes[0]).toHaveLength(1);
  expect(changes[0]?.[0]?.source).toBe(`secret ${NS}/route-a`);
  expect(changes[0]?.[0]?.input?.route.credentials[0]?.secret).toEqual({ sha256: 'b'.repeat(64) });

  // 410: relisted; a is gone, b unchanged, c new.
  api.listed = [
    secret('route-b', '2', hook('b')),
    secret('route-bad', '3', { kind: 'x' }),
    secret('route-c', '5', hook('c')),
  ];
  const send = api.send;
  api.send = undefined;
  send?.('ERROR', { code: 410, message: 'too old' });
  api.end?.(undefined);
  await until(() => changes.length === 2);
  expect(api.lists).toBe(2);
  const bySource = new Map(changes[1]?.map((c) => [c.source, c.input?.route.name]));
  expect(bySource).toEqual(
    new Map([
      [`secret ${NS}/route-a`, undefined],
      [`secret ${NS}/route-c`, 'c'],
    ]),
  );
  // A full set now: b is the very route object parsed at the first list, and a is gone.
  await until(() => api.send !== undefined);
  const all = (source as unknown as { all(): { inputs: RouteInput[] } }).all();
  expect(all.inputs.map((i) => i.route.name)).toEqual(['b', 'c']);
  expect(all.inputs[0]?.route).toBe(routeB);
  await source.stop();
});
