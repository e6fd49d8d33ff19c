/**
 * The destination pages' server endpoints (console/server/endpoints/destinations.ts) with a stand-in
 * user (what the API server would answer and allow) and a stand-in admin listener recording what
 * the console asked of it: the permission is asked before anything reaches the ingesters, and the
 * namespace and destination of a replay are always the page's.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import type { UserClient } from '../../../console/server/kube.js';
import { registerDestinationEndpoints } from '../../../console/server/endpoints/destinations.js';

interface AdminCall {
  method: string;
  url: string;
  body: unknown;
}

const NS = 'team-a';
const OWN = { id: 'r1', state: 'running', filter: { namespace: NS, destination: `${NS}/hook` } };
const OTHERS = { id: 'r2', state: 'running', filter: { namespace: 'team-b', destination: 'team-b/hook' } };

let admin: Server;
let adminUrl: string;
const calls: AdminCall[] = [];
/** What the ingesters say of the team's destination (GET /destinations/<namespace>/hook). */
let ingesterState: Record<string, unknown> = { paused: false };

beforeAll(async () => {
  admin = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      calls.push({ method: req.method ?? '', url: req.url ?? '', body: body ? JSON.parse(body) : undefined });
      const url = req.url ?? '';
      const send = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (url === '/destinations')
        return send(200, {
          destinations: [
            {
              name: 'tickets',
              kind: 'http',
              circuit: 'closed',
              paused: false,
              lastFailure: { at: 'x', reason: 'http_400', error: "team-b's event" },
            },
            { name: `${NS}/hook`, kind: 'http' },
          ],
        });
      if (url === `/destinations/${encodeURIComponent(`${NS}/hook`)}`) return send(200, ingesterState);
      if (url === `/destinations/${encodeURIComponent(`${NS}/hook`)}/resume`) return send(200, { result: 'resumed' });
      if (url.startsWith('/deadletter?')) return send(200, { count: 0, entries: [] });
      if (url === '/deadletter/replays' && req.method === 'GET') return send(200, { replays: [OWN, OTHERS] });
      if (url === '/deadletter/replays' && JSON.parse(body).integration === 'busy') {
        res.setHeader('retry-after', '10');
        return send(429, { error: 'bulk_replay_running', message: 'a bulk replay (other-id) is running' });
      }
      if (url === '/deadletter/replays' && JSON.parse(body).integration === 'full') {
        res.setHeader('retry-after', '10');
        return send(429, {
          success: false,
          code: 'BULK_REPLAY_REPLICA_FULL',
          message: "4 namespaces' bulk replays are running on this replica",
        });
      }
      if (url === '/deadletter/replays') return send(202, { id: 'new', state: 'running', filter: JSON.parse(body) });
      if (url === '/deadletter/replays/r1') return send(200, OWN);
      if (url === '/deadletter/replays/r2') return send(200, OTHERS);
      if (url.endsWith('/cancel')) return send(200, { ...OWN, state: 'cancelled' });
      send(404, { error: 'not_found', message: 'no' });
    });
  });
  await new Promise<void>((resolve) => admin.listen(0, '127.0.0.1', resolve));
  adminUrl = `http://127.0.0.1:${(admin.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => admin.close(() => resolve())));
beforeEach(() => (calls.length = 0));

/** A user the API server allows `verbs` on destinations, and who sees the Destination `hook`. */
function userAllowed(verbs: string[]): UserClient {
  const hook = { metadata: { name: 'hook', namespace: NS }, spec: {}, status: { destinationName: `${NS}/hook` } };
  return {
    can: async (_ns: string, verb: string) => verbs.includes(verb),
    custom: {
      getNamespacedCustomObject: async ({ name }: { name: string }) => {
        if (name !== 'hook') throw Object.assign(new Error('not found'), { code: 404, body: { message: 'not found' } });
        return hook;
      },
      listNamespacedCustomObject: async () => ({ items: [hook] }),
      patchNamespacedCustomObject: async ({ body }: { body: unknown }) => ({ ...hook, ...(body as object) }),
    },
  } as unknown as UserClient;
}

async function appFor(user: UserClient, withAdmin = true): Promise<FastifyInstance> {
  const app = Fastify();
  registerDestinationEndpoints(app, { ...(withAdmin ? { ingesterAdminUrl: adminUrl } : {}), userOf: () => user });
  await app.ready();
  return app;
}

const base = `/api/namespaces/${NS}/destinations/hook`;

describe('replaying dead letters', () => {
  it('is refused with 403 naming the verb when the API server does not allow replay, before the ingesters are asked', async () => {
    const app = await appFor(userAllowed(['get']));
    const res = await app.inject({ method: 'POST', url: `${base}/replays`, payload: {} });
    expect(res.statusCode).toBe(403);
    expect(res.json().message).toContain('"replay"');
    expect(calls.filter((c) => c.method === 'POST')).toEqual([]);
    const cancel = await app.inject({ method: 'POST', url: `${base}/replays/r1/cancel`, payload: {} });
    expect(cancel.statusCode).toBe(403);
    expect(calls.filter((c) => c.url.endsWith('/cancel'))).toEqual([]);
  });

  it("starts one with the user's filters and the page's namespace and destination", async () => {
    const app = await appFor(userAllowed(['get', 'replay']));
    const res = await app.inject({
      method: 'POST',
      url: `${base}/replays`,
      payload: { integration: 'alerts', reason: 'http_5*', since: '2h', until: '', rate: 5 },
    });
    expect(res.statusCode).toBe(202);
    expect(calls.find((c) => c.method === 'POST')?.body).toEqual({
      kind: 'delivery',
      namespace: NS,
      destination: `${NS}/hook`,
      integration: 'alerts',
      reason: 'http_5*',
      since: '2h',
      rate: 5,
    });
  });

  it("passes on the ingesters' refusal while another replay runs there, with its Retry-After", async () => {
    const app = await appFor(userAllowed(['get', 'replay']));
    const res = await app.inject({ method: 'POST', url: `${base}/replays`, payload: { integration: 'busy' } });
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBe('10');
    expect(res.json().error).toBe('bulk_replay_running');
    // The running one may be of a destination this user may not replay: its id is not passed on.
    expect(res.json().message).toContain('one runs per namespace');
    expect(res.json().message).not.toContain('other-id');
  });

  it("says which limit a refused start met: the replica's total, named by the error catalogue's code", async () => {
    const app = await appFor(userAllowed(['get', 'replay']));
    const res = await app.inject({ method: 'POST', url: `${base}/replays`, payload: { integration: 'full' } });
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBe('10');
    expect(res.json().error).toBe('bulk_replay_replica_full');
    expect(res.json().message).toContain('runs at once');
  });

  it('refuses a namespace, a destination or any other field in the filters', async () => {
    const app = await appFor(userAllowed(['get', 'replay']));
    for (const payload of [{ namespace: 'team-b' }, { destination: 'team-b/hook' }, { kind: 'mapping' }, { id: 'x' }]) {
      const res = await app.inject({ method: 'POST', url: `${base}/replays`, payload });
      expect(res.statusCode).toBe(400);
    }
    expect(calls.filter((c) => c.method === 'POST')).toEqual([]);
  });

  it("lists only this destination's replays, and does not show or cancel another namespace's", async () => {
    const app = await appFor(userAllowed(['get', 'replay']));
    const list = await app.inject({ method: 'GET', url: `${base}/replays` });
    expect(list.json().replays.map((r: { id: string }) => r.id)).toEqual(['r1']);
    expect((await app.inject({ method: 'GET', url: `${base}/replays/r2` })).statusCode).toBe(404);
    const cancel = await app.inject({ method: 'POST', url: `${base}/replays/r2/cancel`, payload: {} });
    expect(cancel.statusCode).toBe(404);
    expect(calls.filter((c) => c.url.endsWith('/cancel'))).toEqual([]);
    const own = await app.inject({ method: 'POST', url: `${base}/replays/r1/cancel`, payload: {} });
    expect(own.json().state).toBe('cancelled');
  });
});

describe('listing dead letters', () => {
  it('asks for delivery letters of the namespace and destination with the filters given, and says whether the user may replay', async () => {
    const app = await appFor(userAllowed(['get']));
    const res = await app.inject({
      method: 'GET',
      url: `${base}/deadletters?integration=alerts&namespace=team-b&destination=x&limit=9`,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().mayReplay).toBe(false);
    const asked = new URL(calls[0]?.url ?? '', adminUrl).searchParams;
    expect(Object.fromEntries(asked)).toEqual({
      kind: 'delivery',
      namespace: NS,
      destination: `${NS}/hook`,
      limit: '200',
      integration: 'alerts',
    });
  });

  it('of a platform destination: only one the ingesters have, for a user who may get destinations', async () => {
    const allowed = await appFor(userAllowed(['get']));
    const platform = `/api/namespaces/${NS}/platform-destinations`;
    expect((await allowed.inject({ method: 'GET', url: `${platform}/tickets/deadletters` })).statusCode).toBe(200);
    expect((await allowed.inject({ method: 'GET', url: `${platform}/nothing/deadletters` })).statusCode).toBe(404);
    // A team's destination is not a platform one, even by its ingesters' name.
    expect(
      (await allowed.inject({ method: 'GET', url: `${platform}/${encodeURIComponent(`${NS}/hook`)}/deadletters` }))
        .statusCode,
    ).toBe(404);
    const refused = await appFor(userAllowed([]));
    calls.length = 0;
    expect((await refused.inject({ method: 'GET', url: `${platform}/tickets/deadletters` })).statusCode).toBe(403);
    expect(calls).toEqual([]);
  });

  it('says what is missing without an admin listener, or when it cannot be reached', async () => {
    const none = await appFor(userAllowed(['get']), false);
    const res = await none.inject({ method: 'GET', url: `${base}/deadletters` });
    expect(res.statusCode).toBe(404);
    expect(res.json().message).toContain('--ingester-admin-url');
    const app = Fastify();
    registerDestinationEndpoints(app, { ingesterAdminUrl: 'http://127.0.0.1:9', userOf: () => userAllowed(['get']) });
    expect((await app.inject({ method: 'GET', url: `${base}/deadletters` })).statusCode).toBe(502);
  });
});

describe('the list', () => {
  it("has the namespace's Destinations and only the platform's destinations of the ingesters", async () => {
    const app = await appFor(userAllowed(['get']));
    const res = await app.inject({ method: 'GET', url: `/api/namespaces/${NS}/destinations` });
    expect(res.json().items.map((d: { metadata: { name: string } }) => d.metadata.name)).toEqual(['hook']);
    // Kind, circuit and pause: not the receiver's last answer, which may be of another namespace's event.
    expect(res.json().platform.items).toEqual([{ name: 'tickets', kind: 'http', circuit: 'closed', paused: false }]);
  });

  it('still lists the Destinations when the ingesters cannot be asked', async () => {
    const app = Fastify();
    registerDestinationEndpoints(app, { ingesterAdminUrl: 'http://127.0.0.1:9', userOf: () => userAllowed(['get']) });
    const res = await app.inject({ method: 'GET', url: `/api/namespaces/${NS}/destinations` });
    expect(res.statusCode).toBe(200);
    expect(res.json().items).toHaveLength(1);
    expect(res.json().platform.message).toContain('could not be reached');
  });
});

describe('pause and resume', () => {
  /** A user who may patch (or not), whose Destination `hook` keeps what was patched. */
  function patchingUser(verbs: string[], labels: Record<string, string> = {}) {
    const user = userAllowed(verbs);
    const hook = { metadata: { name: 'hook', namespace: NS, labels }, spec: { suspend: false } };
    const patched: unknown[] = [];
    Object.assign(user.custom, {
      getNamespacedCustomObject: async () => hook,
      patchNamespacedCustomObject: async ({ body }: { body: { spec: { suspend: boolean } } }) => {
        patched.push(body);
        hook.spec.suspend = body.spec.suspend;
        return hook;
      },
    });
    return { user, patched };
  }

  it('set spec.suspend as the user', async () => {
    const { user, patched } = patchingUser([]);
    const app = await appFor(user);
    expect((await app.inject({ method: 'POST', url: `${base}/pause`, payload: {} })).statusCode).toBe(200);
    expect((await app.inject({ method: 'POST', url: `${base}/resume`, payload: {} })).statusCode).toBe(200);
    expect(patched).toEqual([{ spec: { suspend: true } }, { spec: { suspend: false } }]);
  });

  it('refuse an object Argo CD manages', async () => {
    const { user, patched } = patchingUser([], { 'argocd.argoproj.io/instance': 'payments' });
    const res = await (await appFor(user)).inject({ method: 'POST', url: `${base}/pause`, payload: {} });
    expect(res.statusCode).toBe(409);
    expect(res.json().error).toBe('gitops_managed');
    expect(patched).toEqual([]);
  });

  it("a resume ends the ingesters' auto-pause, for a user who may patch the Destination", async () => {
    ingesterState = { paused: true, reason: 'auto', by: 'auto' };
    const resumes = () => calls.filter((c) => c.url.endsWith('/resume'));
    // Nothing to patch (spec.suspend is false already): the API server is asked whether the user may.
    const refused = await (
      await appFor(patchingUser(['get']).user)
    ).inject({
      method: 'POST',
      url: `${base}/resume`,
      payload: {},
    });
    expect(refused.statusCode).toBe(403);
    expect(resumes()).toEqual([]);
    const allowed = await (
      await appFor(patchingUser(['get', 'patch']).user)
    ).inject({
      method: 'POST',
      url: `${base}/resume`,
      payload: {},
    });
    expect(allowed.statusCode).toBe(200);
    expect(resumes()).toHaveLength(1);
    // A pause the platform made through the admin API is not the team's to end.
    ingesterState = { paused: true, reason: 'suspended', by: 'admin' };
    calls.length = 0;
    await (
      await appFor(patchingUser(['get', 'patch']).user)
    ).inject({ method: 'POST', url: `${base}/resume`, payload: {} });
    expect(resumes()).toEqual([]);
    ingesterState = { paused: false };
  });
});
