/**
 * `intake console`: the web console's server. It serves the single-page app (dist/console/web)
 * and a small JSON API over the user's own Kubernetes identity (kube.ts); security.ts says who may
 * drive it. Two modes:
 * - kubeconfig (`intake console` on a laptop): the caller's kubeconfig, loopback only, a one-time
 *   token in the printed URL exchanged for a session (a cookie and a secret the page sends in a
 *   header, security.ts), the Host header checked;
 * - token (`--auth token`, the chart's in-cluster Deployment): each user signs in with a
 *   Kubernetes bearer token (pasted, or `Authorization: Bearer` from an authenticating proxy).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import type { KubeConfig } from '@kubernetes/client-node';
import { MappingBusy, type MappingSpec } from '../../api/mapping/engine.js';
import { logWorkerPriority, MappingWorkerPool } from '../../api/mapping/worker-pool.js';
import type { Logger } from 'pino';
import { readCredentials, runTests, sendTestEvent, testEventCurl } from './actions.js';
import { gitOpsOwner, type ObjectMeta } from '../shared/gitops.js';
import { Identities, isPlural, KINDS, KubeError, type Plural, type UserClient } from './kube.js';
import { InspectorRefusal, registerInspectorRoutes } from './inspector.js';
import { registerDestinationRoutes } from './routes/destinations.js';
import { streamNamespace } from './live.js';
import {
  DEFAULT_LOGIN_THROTTLE,
  isRefusal,
  LoginThrottle,
  UserSlots,
  type LoginThrottleOptions,
  type Refusal,
} from './bounds.js';
import {
  allowedLocalHosts,
  CONTENT_SECURITY_POLICY,
  cookieValue,
  isSameOriginWrite,
  OneTimeToken,
  SESSION_HEADER,
  sessionCookieName,
  Sessions,
  type Session,
} from './security.js';

export interface ConsoleOptions {
  kubeConfig: KubeConfig;
  mode: 'kubeconfig' | 'token';
  host: string;
  port: number;
  /** Host header values accepted; undefined: any (token mode behind an Ingress). Kubeconfig mode: loopback names. */
  allowedHosts?: string[];
  /** Replaces the scheme and host of status.url for test events (the console reaches ingesters another way). */
  ingestUrl?: string;
  /** The ingesters' admin listener, where the event inspector's captures are read (inspector.ts). */
  ingesterAdminUrl?: string;
  /** Mark the session cookie Secure (token mode behind HTTPS). */
  secureCookie?: boolean;
  sessionTtlMs?: number;
  /** Sessions one user holds at most (a new one ends that user's oldest); default 5. */
  maxSessionsPerUser?: number;
  /** Live list streams (each two Kubernetes watches) served at once; default 200. */
  maxLiveStreams?: number;
  /** Live list streams one user holds at most (token mode); default 20. */
  maxLiveStreamsPerUser?: number;
  /** spec.mapping.tests runs one user may have going at once; default 1. */
  maxMappingRunsPerUser?: number;
  /** Worker processes that evaluate tenants' expressions for the mapping tests; default 2. */
  mappingWorkers?: number;
  /** Sign-in throttling (bounds.ts); default DEFAULT_LOGIN_THROTTLE. */
  loginThrottle?: LoginThrottleOptions;
  /** The built single-page app; default: dist/console/web next to this module. */
  webDir?: string;
  logger: Logger;
}

export interface RunningConsole {
  /** Kubeconfig mode: the URL with its one-time token. Token mode: the sign-in page. */
  url: string;
  port: number;
  close(): Promise<void>;
}

const STATIC: Record<string, string> = {
  '/app.js': 'text/javascript; charset=utf-8',
  '/style.css': 'text/css; charset=utf-8',
};

export const CONSOLE_DEFAULTS = {
  maxSessionsPerUser: 5,
  maxLiveStreams: 200,
  maxLiveStreamsPerUser: 20,
  maxMappingRunsPerUser: 1,
  mappingWorkers: 2,
} as const;

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }

  static of(refusal: Refusal): HttpError {
    return new HttpError(refusal.status, refusal.code, refusal.message, refusal.retryAfterSeconds);
  }
}

export async function startConsole(options: ConsoleOptions): Promise<RunningConsole> {
  const webDir = options.webDir ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'web');
  const files = new Map<string, Buffer>();
  for (const name of ['index.html', 'app.js', 'style.css']) files.set(name, readFileSync(join(webDir, name)));
  const identities = new Identities(options.kubeConfig, options.mode);
  const sessions = new Sessions(
    options.sessionTtlMs ?? 8 * 3600_000,
    10_000,
    options.maxSessionsPerUser ?? CONSOLE_DEFAULTS.maxSessionsPerUser,
  );
  const logins = new LoginThrottle(options.loginThrottle ?? DEFAULT_LOGIN_THROTTLE);
  // Each open page holds two watches on the API server: a bounded number at once, and in token
  // mode (many users) a bounded share of them per user.
  const streams = new UserSlots({
    perUser:
      options.mode === 'token' ? (options.maxLiveStreamsPerUser ?? CONSOLE_DEFAULTS.maxLiveStreamsPerUser) : Infinity,
    total: options.maxLiveStreams ?? CONSOLE_DEFAULTS.maxLiveStreams,
    what: 'open pages followed live',
    advice: 'close a tab of the console, or wait',
    perUserCode: 'too_many_streams_for_user',
    perUserSetting: '--max-live-streams-per-user',
    totalCode: 'too_many_streams',
    totalSetting: '--max-live-streams',
    retryAfterSeconds: 10,
  });
  // Tenants' expressions in spec.mapping.tests run in worker processes under SCHED_IDLE, killed at
  // the CPU limit (worker-pool.ts), never in this process: a runaway expression or regular
  // expression cannot hold the console's other users. Started when a test first needs one.
  const mappingWorkers = new MappingWorkerPool({
    size: options.mappingWorkers ?? CONSOLE_DEFAULTS.mappingWorkers,
    onWorkerLost: (reason) => options.logger.warn({ reason }, 'mapping test worker killed or ended, and replaced'),
    onFirstWorker: logWorkerPriority(options.logger, 'mapping test workers'),
  });
  // One run at a time per user (a run evaluates its tests one after another), so each user holds
  // at most one worker and one place in the workers' queue: the others' runs are not held up.
  const mappingRuns = new UserSlots({
    perUser: options.maxMappingRunsPerUser ?? CONSOLE_DEFAULTS.maxMappingRunsPerUser,
    total: Infinity,
    what: 'spec.mapping.tests runs going at once',
    advice: 'wait for your run to end',
    perUserCode: 'mapping_tests_running',
    perUserSetting: '--max-mapping-runs-per-user',
    totalCode: 'mapping_busy',
    totalSetting: '',
    retryAfterSeconds: 2,
  });
  const oneTime = new OneTimeToken();
  // forceCloseConnections: the live streams (SSE) would otherwise hold close() open.
  const app = Fastify({ logger: false, bodyLimit: 2 * 1024 * 1024, forceCloseConnections: true });
  let allowedHosts: Set<string> | undefined;

  const cookie = (host: string, value: string, maxAge?: number) =>
    `${sessionCookieName(host)}=${value}; Path=/; HttpOnly; SameSite=Strict${options.secureCookie ? '; Secure' : ''}${maxAge === undefined ? '' : `; Max-Age=${maxAge}`}`;
  const cookieOf = (req: FastifyRequest): string | undefined =>
    cookieValue(req.headers.cookie, sessionCookieName(String(req.headers.host ?? '')));
  const secretOf = (req: FastifyRequest): string | undefined => {
    const value = req.headers[SESSION_HEADER];
    return typeof value === 'string' ? value : undefined;
  };

  /** Token mode: the bearer token an authenticating proxy (or anyone) put in Authorization. */
  const bearerOf = (req: FastifyRequest): string | undefined =>
    options.mode === 'token' ? /^Bearer\s+(\S+)$/i.exec(String(req.headers.authorization ?? ''))?.[1] : undefined;
  /**
   * The session behind this request, or undefined: its cookie and, in X-Intake-Session, its secret
   * (never the cookie alone); in token mode a proxy's bearer token counts as one.
   */
  const sessionOf = (req: FastifyRequest): Session | undefined => {
    const bearer = bearerOf(req);
    if (bearer) return { kubeToken: bearer, user: identities.forToken(bearer).confirmedName ?? '' };
    return sessions.get(cookieOf(req), secretOf(req));
  };
  /**
   * A bearer token the console has not seen yet is checked once, before the request, and throttled
   * like a sign-in: otherwise any path would answer whether a guessed token is valid.
   */
  const checkBearer = async (req: FastifyRequest, bearer: string): Promise<HttpError | undefined> => {
    const client = identities.forToken(bearer);
    if (client.confirmedName !== undefined) return undefined;
    // A page's first requests come together: one check for all of them, counted once.
    if (client.asking)
      return client.userName().then(
        () => undefined,
        (err: unknown) => new HttpError(KubeError.from(err).status, 'token_refused', KubeError.from(err).message),
      );
    const check = logins.beginCheck(req.ip);
    if (isRefusal(check)) return HttpError.of(check);
    try {
      await client.userName();
      check.succeeded('');
      return undefined;
    } catch (err) {
      const e = KubeError.from(err);
      if (e.status !== 401) {
        check.abandoned();
        return new HttpError(e.status, 'kubernetes', e.message);
      }
      check.failed();
      return new HttpError(401, 'token_refused', `the Kubernetes API server did not accept this token: ${e.message}`);
    }
  };
  const userOf = (req: FastifyRequest): UserClient => {
    const session = sessionOf(req);
    if (!session) throw new HttpError(401, 'not_signed_in', 'sign in first');
    return session.kubeToken ? identities.forToken(session.kubeToken) : identities.kubeconfigUser();
  };
  /** Whom the per-user bounds count this request against: the session's user, or who the proxy's token is. */
  const userNameOf = async (req: FastifyRequest, client: UserClient): Promise<string> => {
    if (options.mode === 'kubeconfig') return 'kubeconfig';
    const known = sessionOf(req)?.user;
    return known || client.userName();
  };
  /** A new session: its cookie set on the reply, its secret returned for the page to keep. */
  const startSession = (req: FastifyRequest, reply: FastifyReply, session: Session): string => {
    const keys = sessions.create(session);
    reply.header('set-cookie', cookie(String(req.headers.host ?? ''), keys.id));
    return keys.secret;
  };

  app.addHook('onRequest', async (req, reply) => {
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('x-frame-options', 'DENY');
    reply.header('cache-control', 'no-store');
    const host = String(req.headers.host ?? '');
    // DNS rebinding: a page at evil.example resolved to 127.0.0.1 sends Host: evil.example.
    if (allowedHosts && !allowedHosts.has(host.toLowerCase()))
      return reply
        .code(403)
        .send({ error: 'host_not_allowed', message: `the console does not answer for Host ${JSON.stringify(host)}` });
    if (req.method !== 'GET' && req.method !== 'HEAD' && !isSameOriginWrite(req.headers, host))
      return reply.code(403).send({
        error: 'cross_site_request',
        message: 'writes must come from the console page itself (JSON body, same origin)',
      });
    const path = req.url.split('?')[0] ?? '/';
    // The app's code is no secret; the sign-in (one-time token or Kubernetes token) checks itself.
    if (STATIC[path] !== undefined || path === '/api/login') return;
    if (options.mode === 'kubeconfig') {
      if (path === '/') {
        // The page with the printed URL's token (the page spends it by POST /api/login), or for a
        // browser that has a session cookie (a reload): it is only the app, which asks for the rest.
        const token = (req.query as { token?: string }).token;
        if (token !== undefined && !oneTime.isFresh(token))
          return reply
            .code(401)
            .type('text/plain; charset=utf-8')
            .send('This console link was already used or is wrong. Run `intake console` again for a new one.\n');
        if (token === undefined && !sessions.has(cookieOf(req)))
          return reply
            .code(401)
            .type('text/plain; charset=utf-8')
            .send('Open the URL `intake console` printed (it carries a one-time token).\n');
        return;
      }
      if (!sessionOf(req))
        return reply.code(401).send({
          error: 'no_token',
          message:
            'this tab has no console session: open the URL `intake console` printed (it works once; run it again for a new one)',
        });
      return;
    }
    const bearer = bearerOf(req);
    if (bearer) {
      const refused = await checkBearer(req, bearer);
      if (refused) {
        if (refused.retryAfterSeconds !== undefined) reply.header('retry-after', String(refused.retryAfterSeconds));
        return reply.code(refused.status).send({ error: refused.code, message: refused.message });
      }
    }
    // Token mode: the page and the session check are open; everything else needs a signed-in user.
    const open = path === '/' || path === '/api/session';
    if (!open && !sessionOf(req)) return reply.code(401).send({ error: 'not_signed_in', message: 'sign in first' });
  });

  app.setErrorHandler((err: Error, _req, reply) => {
    if (err instanceof InspectorRefusal) return reply.code(err.status).send({ error: err.code, message: err.message });
    if (err instanceof HttpError) {
      if (err.retryAfterSeconds !== undefined) reply.header('retry-after', String(err.retryAfterSeconds));
      return reply.code(err.status).send({ error: err.code, message: err.message });
    }
    if (err instanceof MappingBusy)
      return reply
        .code(503)
        .header('retry-after', String(err.retryAfterSeconds))
        .send({ error: 'mapping_busy', message: `the console's mapping workers are busy: ${err.message}` });
    if (err instanceof KubeError)
      return reply.code(err.status).send({ error: 'kubernetes', reason: err.reason, message: err.message });
    const status = (err as { statusCode?: number }).statusCode;
    if (status && status < 500) return reply.code(status).send({ error: 'bad_request', message: err.message });
    options.logger.error({ err: err.message }, 'console request failed');
    return reply.code(500).send({ error: 'internal', message: 'the console failed; see its log' });
  });

  const sendFile = (name: string, type: string) => (_req: FastifyRequest, reply: FastifyReply) =>
    reply.type(type).send(files.get(name));
  app.get('/', sendFile('index.html', 'text/html; charset=utf-8'));
  for (const [path, type] of Object.entries(STATIC)) app.get(path, sendFile(path.slice(1), type));

  app.get('/api/session', async (req) => {
    const session = sessionOf(req);
    if (!session) return { mode: options.mode, signedIn: false };
    const user = session.kubeToken ? identities.forToken(session.kubeToken) : identities.kubeconfigUser();
    return {
      mode: options.mode,
      signedIn: true,
      // A proxy's token has no session to remember the name in: ask the API server.
      user: session.user || (await user.whoAmI().catch(() => 'unknown')),
      namespaces: await user.namespaces(),
      defaultNamespace: options.mode === 'kubeconfig' ? identities.defaultNamespace() : 'default',
    };
  });

  /**
   * Starts a session. Kubeconfig mode: with the printed URL's one-time token (spent here). Token
   * mode: with a Kubernetes bearer token the API server accepts. The answer's `session` is the
   * secret the page sends in X-Intake-Session; the cookie set with it is the other half.
   */
  app.post('/api/login', async (req, reply) => {
    const token = String((req.body as { token?: unknown } | undefined)?.token ?? '').trim();
    if (!token)
      throw new HttpError(
        400,
        'token_required',
        options.mode === 'kubeconfig'
          ? 'token: the one-time token of the printed URL'
          : 'token: paste a Kubernetes bearer token',
      );
    // Reserved before the token is checked: the check is the work, and its answer what a guesser wants.
    const attempt = logins.begin(req.ip, token);
    if (isRefusal(attempt)) throw HttpError.of(attempt);
    if (options.mode === 'kubeconfig') {
      if (!oneTime.redeem(token)) {
        attempt.failed();
        throw new HttpError(
          401,
          'token_spent',
          'this console link was already used or is wrong: run `intake console` again for a new one',
        );
      }
      attempt.succeeded('kubeconfig');
      return reply.send({ user: 'kubeconfig', session: startSession(req, reply, { user: 'kubeconfig' }) });
    }
    let user: string;
    try {
      user = await identities.forToken(token).whoAmI();
    } catch (err) {
      const e = KubeError.from(err);
      if (e.status !== 401) {
        attempt.abandoned();
        throw e;
      }
      attempt.failed();
      throw new HttpError(401, 'token_refused', `the Kubernetes API server did not accept this token: ${e.message}`);
    }
    const tooOften = attempt.succeeded(user);
    if (tooOften) throw HttpError.of(tooOften);
    return reply.send({ user, session: startSession(req, reply, { kubeToken: token, user }) });
  });

  app.post('/api/logout', async (req, reply) => {
    if (sessionOf(req)) sessions.delete(cookieOf(req));
    return reply.header('set-cookie', cookie(String(req.headers.host ?? ''), '', 0)).send({});
  });

  type Params = { ns: string; plural: string; name: string };
  const target = (req: FastifyRequest): { ns: string; plural: Plural; name: string } => {
    const p = req.params as Params;
    if (!isPlural(p.plural)) throw new HttpError(404, 'not_found', `no such kind: ${p.plural}`);
    return { ns: p.ns, plural: p.plural, name: p.name };
  };
  const objectBody = (req: FastifyRequest): Record<string, unknown> => {
    if (!req.body || typeof req.body !== 'object' || Array.isArray(req.body))
      throw new HttpError(400, 'invalid_body', 'the body must be a JSON object');
    return req.body as Record<string, unknown>;
  };

  app.get('/api/namespaces/:ns/live', async (req, reply) => {
    const user = userOf(req);
    const place = streams.acquire(await userNameOf(req, user));
    if (isRefusal(place)) throw HttpError.of(place);
    reply.hijack();
    // The page may have gone while its user's name was asked: nothing to follow then.
    if (req.raw.socket.destroyed) return place.release();
    reply.raw.once('close', place.release);
    streamNamespace(user, (req.params as Params).ns, reply.raw);
  });
  app.get('/api/namespaces/:ns/:plural/:name', async (req) => {
    const { ns, plural, name } = target(req);
    return userOf(req).get(ns, plural, name);
  });
  app.post('/api/namespaces/:ns/:plural', async (req, reply) => {
    const { ns, plural } = target(req);
    return reply.code(201).send(await userOf(req).create(ns, plural, objectBody(req)));
  });
  /**
   * An object Argo CD or Flux manages is not changed here, whatever the page showed: the next sync
   * would undo it (docs/console.md). Read as the user, just before the write.
   */
  const refuseGitOpsManaged = async (user: UserClient, ns: string, plural: Plural, name: string): Promise<void> => {
    const current = await user.get(ns, plural, name);
    const owner = gitOpsOwner(current.metadata as ObjectMeta | undefined);
    if (owner)
      throw new HttpError(
        409,
        'gitops_managed',
        `${KINDS[plural]} ${ns}/${name} is managed by ${owner.tool} (${owner.owner}): change it in Git. The console does not edit, rotate, suspend or delete it, since the next sync would undo that.`,
      );
  };
  app.put('/api/namespaces/:ns/:plural/:name', async (req) => {
    const { ns, plural, name } = target(req);
    const user = userOf(req);
    const body = objectBody(req);
    await refuseGitOpsManaged(user, ns, plural, name);
    return user.replace(ns, plural, name, body);
  });
  app.patch('/api/namespaces/:ns/:plural/:name', async (req) => {
    const { ns, plural, name } = target(req);
    const user = userOf(req);
    const body = objectBody(req);
    await refuseGitOpsManaged(user, ns, plural, name);
    return user.patch(ns, plural, name, body);
  });
  app.delete('/api/namespaces/:ns/:plural/:name', async (req) => {
    const { ns, plural, name } = target(req);
    const user = userOf(req);
    await refuseGitOpsManaged(user, ns, plural, name);
    await user.delete(ns, plural, name);
    return {};
  });
  app.get('/api/namespaces/:ns/:plural/:name/credentials', async (req) => {
    const { ns, plural, name } = target(req);
    return readCredentials(userOf(req), ns, plural, name);
  });
  registerInspectorRoutes(app, {
    ...(options.ingesterAdminUrl ? { ingesterAdminUrl: options.ingesterAdminUrl } : {}),
    userOf,
  });
  registerDestinationRoutes(app, {
    ...(options.ingesterAdminUrl ? { ingesterAdminUrl: options.ingesterAdminUrl } : {}),
    userOf,
  });
  app.post('/api/namespaces/:ns/webhookintegrations/:name/send', async (req) => {
    const { ns, name } = req.params as Params;
    const body = objectBody(req);
    if (typeof body.payload !== 'string')
      throw new HttpError(400, 'invalid_body', 'payload: a string (the JSON to send)');
    return sendTestEvent(userOf(req), ns, name, body.payload, body.dryRun === true, options.ingestUrl);
  });
  app.post('/api/namespaces/:ns/webhookintegrations/:name/curl', async (req) => {
    const { ns, name } = req.params as Params;
    const body = objectBody(req);
    if (typeof body.payload !== 'string')
      throw new HttpError(400, 'invalid_body', 'payload: a string (the JSON to send)');
    return testEventCurl(userOf(req), ns, name, body.payload);
  });
  app.post('/api/namespaces/:ns/webhookintegrations/:name/mapping-tests', async (req) => {
    const { ns, name } = req.params as Params;
    const user = userOf(req);
    const run = mappingRuns.acquire(await userNameOf(req, user));
    if (isRefusal(run)) throw HttpError.of(run);
    try {
      const obj = await user.get(ns, 'webhookintegrations', name);
      const mapping = (obj.spec as { mapping?: MappingSpec } | undefined)?.mapping;
      if (!mapping) throw new HttpError(409, 'no_mapping', 'the integration has no spec.mapping');
      return { results: await runTests(mapping, mappingWorkers) };
    } finally {
      run.release();
    }
  });

  const address = await app.listen({ host: options.host, port: options.port });
  const port = (app.server.address() as { port: number }).port;
  if (options.allowedHosts) allowedHosts = new Set(options.allowedHosts.map((h) => h.toLowerCase()));
  else if (options.mode === 'kubeconfig') allowedHosts = allowedLocalHosts(port);
  const base = options.mode === 'kubeconfig' ? `http://127.0.0.1:${port}` : address;
  return {
    url: options.mode === 'kubeconfig' ? `${base}/?token=${oneTime.value}` : base,
    port,
    close: async () => {
      await app.close();
      await mappingWorkers.close();
    },
  };
}
