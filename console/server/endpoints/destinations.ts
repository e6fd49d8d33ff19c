/**
 * The destination pages' server endpoints (docs/console.md, "Destinations"): a namespace's own
 * `Destination` resources and the platform's destinations, pause and resume, and the dead letters
 * of one destination with the filtered bulk replay, its progress and cancel.
 *
 * Everything a user reads or changes in Kubernetes is read or changed with their own identity
 * (kube.ts): pause and resume are a merge patch of `spec.suspend` the API server allows or
 * refuses. Dead letters live in the ingesters, read through their admin listener
 * (`--ingester-admin-url`), which trusts whoever reaches it; so the console asks the API server
 * first, with a SelfSubjectAccessReview made as the user:
 *   - listing a destination's dead letters (without their bodies) needs `get` on that destination;
 *   - replaying or cancelling a replay needs the custom verb `replay` on `destinations` (the
 *     chart's edit role holds it, view does not): a replay sends a namespace's events again.
 * The console always sets the namespace and the destination of a replay itself: a user cannot
 * reach another namespace's letters by a filter, and sees only the replays of the page's destination.
 */
import { setHeaderOptions } from '@kubernetes/client-node';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { teamDestinationName } from '../../../api/destination-document.js';
import { GROUP, VERSION, type Destination } from '../../../api/v1alpha1/types.js';
import { gitOpsOwner, type ObjectMeta } from '../../shared/gitops.js';
import { KubeError, type UserClient } from '../kube.js';
import { slim } from '../watch-stream.js';
import type { ConsoleEndpoints } from '../context.js';

/** The verb that allows replaying (and cancelling replays of) a namespace's dead letters for a destination. */
export const REPLAY_VERB = 'replay';
const PLURAL = 'destinations';
const MERGE_PATCH = setHeaderOptions('Content-Type', 'application/merge-patch+json');
/** Dead letters one page lists at most (the bulk replay takes every one its filters select). */
const LETTERS_SHOWN = 200;
/** The filters a user may give a replay; the namespace and the destination are the page's. */
const USER_FILTERS = ['integration', 'reason', 'since', 'until'] as const;

export interface DestinationEndpointsOptions {
  /** The ingesters' admin listener: dead letters and the platform's destinations. Absent: not offered. */
  ingesterAdminUrl?: string;
  userOf(req: FastifyRequest): UserClient;
}

/** A refusal answered as `{error, message}` with its status. */
export class DestinationRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Passed on from the ingesters (a bulk replay already running there). */
    readonly retryAfter?: string,
  ) {
    super(message);
  }
}

type Params = { ns: string; name: string; id?: string };
interface PlatformDestination {
  name: string;
  kind: string;
  circuit: string;
  paused: boolean;
  reason?: string;
}
/** Which destination a page is about: a team's own (a Destination resource) or one of the platform's. */
type Scope = 'destinations' | 'platform-destinations';

/** Progress of a bulk replay, as the admin listener answers it (bulk-replay.ts); only what is checked here is typed. */
interface ReplayProgress {
  id: string;
  filter?: { namespace?: string; destination?: string };
  [k: string]: unknown;
}

/** The destination pages' endpoints, as the console registers them (endpoints/index.ts). */
export const destinationEndpoints: ConsoleEndpoints = (app, { options, auth }) =>
  registerDestinationEndpoints(app, {
    ...(options.ingesterAdminUrl ? { ingesterAdminUrl: options.ingesterAdminUrl } : {}),
    userOf: (req) => auth.userOf(req),
  });

export function registerDestinationEndpoints(app: FastifyInstance, o: DestinationEndpointsOptions): void {
  // Its own scope: its refusals are answered here, anything else by the console's handler.
  void app.register(async (scope) => {
    scope.setErrorHandler((err, _req, reply) => {
      if (err instanceof DestinationRefusal) {
        if (err.retryAfter) reply.header('retry-after', err.retryAfter);
        return reply.code(err.status).send({ error: err.code, message: err.message });
      }
      throw err;
    });
    endpoints(scope, o);
  });
}

function endpoints(app: FastifyInstance, o: DestinationEndpointsOptions): void {
  const custom = (user: UserClient) => user.custom;
  const kube = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      throw KubeError.from(err);
    }
  };
  const getDestination = (user: UserClient, ns: string, name: string) =>
    kube(
      () =>
        custom(user).getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: PLURAL,
          name,
        }) as Promise<Destination>,
    );

  /** The admin listener's answer as JSON; its refusals are passed on with their status and message. */
  const admin = async <T>(path: string, body?: unknown): Promise<T> => {
    if (!o.ingesterAdminUrl)
      throw new DestinationRefusal(
        404,
        'ingesters_not_configured',
        "this console was started without --ingester-admin-url: it cannot read the ingesters' dead letters or platform destinations",
      );
    let res: Response;
    try {
      res = await fetch(
        `${o.ingesterAdminUrl}${path}`,
        body === undefined
          ? { signal: AbortSignal.timeout(15_000) }
          : {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-intake-admin': 'true' },
              body: JSON.stringify(body),
              signal: AbortSignal.timeout(15_000),
            },
      );
    } catch (err) {
      throw new DestinationRefusal(
        502,
        'ingesters_unreachable',
        `the ingesters' admin listener could not be reached: ${(err as Error).message}`,
      );
    }
    const answer = (await res.json().catch(() => ({}))) as { error?: string; code?: string; message?: string };
    if (!res.ok) {
      const field = (answer as { field?: string }).field;
      throw new DestinationRefusal(
        res.status,
        // The admin endpoints' own answers say `error`; the error catalogue's (a limit met) say `code`.
        answer.error ?? answer.code?.toLowerCase() ?? 'ingester',
        `${field ? `${field}: ` : ''}${answer.message ?? `HTTP ${res.status}`}`,
        res.headers.get('retry-after') ?? undefined,
      );
    }
    return answer as T;
  };

  /**
   * The platform's destinations as the ingesters know them (a team's have `<namespace>/` in their
   * name): kind, circuit and pause only. Their last failure is left out: every namespace delivers
   * there, and a receiver's answer may speak of another namespace's event.
   */
  const platformDestinations = async (): Promise<PlatformDestination[]> => {
    const answer = await admin<{ destinations?: Array<Record<string, unknown> | null> }>('/destinations');
    return (answer.destinations ?? []).flatMap((d) =>
      typeof d?.name === 'string' && !d.name.includes('/')
        ? [
            {
              name: d.name,
              kind: String(d.kind ?? ''),
              circuit: String(d.circuit ?? ''),
              paused: d.paused === true,
              ...(typeof d.reason === 'string' ? { reason: d.reason } : {}),
            },
          ]
        : [],
    );
  };

  /**
   * The ingesters' name of the page's destination, once the user is known to see it: a team's own
   * is read as the user (the API server says whether they may); a platform one must exist and the
   * user must be allowed `get` on destinations of that name in the namespace.
   */
  const destinationName = async (user: UserClient, scope: Scope, ns: string, name: string): Promise<string> => {
    if (scope === 'destinations') {
      const d = await getDestination(user, ns, name);
      return d.status?.destinationName ?? teamDestinationName(ns, name);
    }
    if (!(await user.can(ns, 'get', PLURAL, name)))
      throw new DestinationRefusal(403, 'forbidden', `your identity may not get destinations in ${ns}`);
    if (!(await platformDestinations()).some((d) => d.name === name))
      throw new DestinationRefusal(404, 'not_found', `the platform has no destination named ${JSON.stringify(name)}`);
    return name;
  };

  const mayReplay = (user: UserClient, ns: string, name: string) => user.can(ns, REPLAY_VERB, PLURAL, name);
  const requireReplay = async (user: UserClient, ns: string, name: string): Promise<void> => {
    if (!(await mayReplay(user, ns, name)))
      throw new DestinationRefusal(
        403,
        'forbidden',
        `replaying dead letters needs the verb "${REPLAY_VERB}" on destinations/${name} in ${ns} (the chart's edit role holds it, view does not)`,
      );
  };

  /** A replay of this page's destination in this namespace, or 404 (another's is not shown, whoever asks). */
  const ownReplay = (progress: ReplayProgress, ns: string, destination: string, id: string): ReplayProgress => {
    if (progress.filter?.namespace !== ns || progress.filter?.destination !== destination)
      throw new DestinationRefusal(404, 'not_found', `no replay ${id.slice(0, 64)} of this destination`);
    return progress;
  };

  app.get<{ Params: { ns: string } }>('/api/namespaces/:ns/destinations', async (req) => {
    const user = o.userOf(req);
    const { ns } = req.params;
    const list = await kube(
      () =>
        custom(user).listNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: PLURAL,
        }) as Promise<{
          items: Array<Record<string, unknown>>;
        }>,
    );
    // The platform's are a courtesy: the team's own list stands without them.
    let platform: { items?: PlatformDestination[]; message?: string };
    if (!o.ingesterAdminUrl) platform = { message: 'the console was started without --ingester-admin-url' };
    else
      try {
        platform = { items: await platformDestinations() };
      } catch (err) {
        platform = { message: (err as Error).message };
      }
    return { items: list.items.map(slim), platform };
  });

  app.get<{ Params: Params }>('/api/namespaces/:ns/destinations/:name', async (req) => {
    const { ns, name } = req.params;
    return slim((await getDestination(o.userOf(req), ns, name)) as unknown as Record<string, unknown>);
  });

  app.get<{ Params: Params }>('/api/namespaces/:ns/platform-destinations/:name', async (req) => {
    const { ns, name } = req.params;
    const user = o.userOf(req);
    await destinationName(user, 'platform-destinations', ns, name);
    return (await platformDestinations()).find((d) => d.name === name);
  });

  /**
   * An auto-pause (the receiver failed for `autoPause.after`) is the ingesters' state, not the
   * spec's: Resume ends it through the admin listener too, for a user who may patch the
   * Destination. A pause the platform made through the admin API stays theirs to end.
   */
  const endAutoPause = async (destination: string): Promise<void> => {
    if (!o.ingesterAdminUrl) return;
    const path = `/destinations/${encodeURIComponent(destination)}`;
    // Not known (not published yet, or the ingesters out of reach): nothing this resume can end.
    const state = await admin<{ paused?: boolean; by?: string }>(path).catch(() => undefined);
    if (state?.paused && state.by === 'auto') await admin(`${path}/resume`, {});
  };

  /**
   * Pause and resume: `spec.suspend` set as the user, refused for an object Argo CD or Flux manages
   * (the next sync would undo it); a resume also ends an auto-pause.
   */
  const suspend = (value: boolean) => async (req: FastifyRequest<{ Params: Params }>) => {
    const { ns, name } = req.params;
    const user = o.userOf(req);
    const current = await getDestination(user, ns, name);
    let result: unknown = current;
    if ((current.spec?.suspend === true) !== value) {
      const owner = gitOpsOwner(current.metadata as ObjectMeta | undefined);
      if (owner)
        throw new DestinationRefusal(
          409,
          'gitops_managed',
          `Destination ${ns}/${name} is managed by ${owner.tool} (${owner.owner}): change spec.suspend in Git; the next sync would undo it here.`,
        );
      result = await kube(() =>
        custom(user).patchNamespacedCustomObject(
          { group: GROUP, version: VERSION, namespace: ns, plural: PLURAL, name, body: { spec: { suspend: value } } },
          MERGE_PATCH,
        ),
      );
    } else if (!(await user.can(ns, 'patch', PLURAL, name)))
      throw new DestinationRefusal(
        403,
        'forbidden',
        `pausing or resuming needs patch on destinations/${name} in ${ns}`,
      );
    if (!value) await endAutoPause(current.status?.destinationName ?? teamDestinationName(ns, name));
    return slim(result as Record<string, unknown>);
  };
  app.post<{ Params: Params }>('/api/namespaces/:ns/destinations/:name/pause', suspend(true));
  app.post<{ Params: Params }>('/api/namespaces/:ns/destinations/:name/resume', suspend(false));

  for (const scope of ['destinations', 'platform-destinations'] as const) {
    const base = `/api/namespaces/:ns/${scope}/:name`;

    app.get<{ Params: Params; Querystring: Record<string, string> }>(`${base}/deadletters`, async (req) => {
      const { ns, name } = req.params;
      const user = o.userOf(req);
      const destination = await destinationName(user, scope, ns, name);
      const query = new URLSearchParams({
        kind: 'delivery',
        namespace: ns,
        destination,
        limit: String(LETTERS_SHOWN),
      });
      for (const key of USER_FILTERS) {
        const v = req.query[key];
        if (typeof v === 'string' && v !== '') query.set(key, v);
      }
      const [letters, replay] = await Promise.all([
        admin<{ count: number; entries: unknown[] }>(`/deadletter?${query}`),
        mayReplay(user, ns, name),
      ]);
      return { destination, count: letters.count, limit: LETTERS_SHOWN, entries: letters.entries, mayReplay: replay };
    });

    app.get<{ Params: Params }>(`${base}/replays`, async (req) => {
      const { ns, name } = req.params;
      const destination = await destinationName(o.userOf(req), scope, ns, name);
      const all = await admin<{ replays?: ReplayProgress[] }>('/deadletter/replays');
      return {
        replays: (all.replays ?? []).filter((r) => r.filter?.namespace === ns && r.filter?.destination === destination),
      };
    });

    app.post<{ Params: Params; Body: Record<string, unknown> | undefined }>(`${base}/replays`, async (req, reply) => {
      const { ns, name } = req.params;
      const user = o.userOf(req);
      const destination = await destinationName(user, scope, ns, name);
      await requireReplay(user, ns, name);
      const filter: Record<string, string | number> = { kind: 'delivery', namespace: ns, destination };
      for (const [key, value] of Object.entries(req.body ?? {})) {
        if (value === undefined || value === null || value === '') continue;
        if (key === 'rate' && typeof value === 'number') filter.rate = value;
        else if ((USER_FILTERS as readonly string[]).includes(key) && typeof value === 'string') filter[key] = value;
        else
          throw new DestinationRefusal(
            400,
            'invalid_body',
            `${key}: not a replay filter here (the page's filters are ${USER_FILTERS.join(', ')} and rate; the namespace and destination are the page's)`,
          );
      }
      try {
        return reply.code(202).send(await admin<ReplayProgress>('/deadletter/replays', filter));
      } catch (err) {
        // The ingesters name the limit met; the console says which in its own words, without the
        // running replay's id (it may be of a destination this user may not replay).
        if (err instanceof DestinationRefusal && err.status === 429)
          throw new DestinationRefusal(429, err.code, replayRefusal(err.code), err.retryAfter);
        throw err;
      }
    });

    app.get<{ Params: Params }>(`${base}/replays/:id`, async (req) => {
      const { ns, name, id = '' } = req.params;
      const destination = await destinationName(o.userOf(req), scope, ns, name);
      return ownReplay(
        await admin<ReplayProgress>(`/deadletter/replays/${encodeURIComponent(id)}`),
        ns,
        destination,
        id,
      );
    });

    app.post<{ Params: Params }>(`${base}/replays/:id/cancel`, async (req) => {
      const { ns, name, id = '' } = req.params;
      const user = o.userOf(req);
      const destination = await destinationName(user, scope, ns, name);
      await requireReplay(user, ns, name);
      ownReplay(await admin<ReplayProgress>(`/deadletter/replays/${encodeURIComponent(id)}`), ns, destination, id);
      return admin<ReplayProgress>(`/deadletter/replays/${encodeURIComponent(id)}/cancel`, {});
    });
  }
}

/** Why a bulk replay could not start on the ingester replica that was asked, by the limit it met. */
function replayRefusal(code: string): string {
  if (code === 'bulk_replay_replica_full')
    return "as many namespaces' bulk replays as this ingester replica runs at once are running there: try again after Retry-After";
  if (code === 'bulk_replay_exclusive')
    return "the platform's bulk replay of all namespaces runs alone on this ingester replica: try again after Retry-After";
  return 'a bulk replay of this namespace is running on this ingester replica, and one runs per namespace: wait for it, or cancel it, and try again after Retry-After';
}
