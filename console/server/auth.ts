/**
 * Who is asking. A request's session is its cookie together with its secret in X-Intake-Session
 * (never the cookie alone, security.ts); in token mode a bearer token an authenticating proxy put
 * in Authorization counts as one. Each user's Kubernetes client comes from kube.ts, so RBAC decides
 * what they see. Signing in is endpoints/session.ts; what a request needs to get that far, guard.ts.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isRefusal, LoginThrottle, DEFAULT_LOGIN_THROTTLE } from './bounds.js';
import { HttpError } from './http-error.js';
import { Identities, KubeError, type UserClient } from './kube.js';
import { CONSOLE_DEFAULTS, type ConsoleOptions } from './options.js';
import { cookieValue, OneTimeToken, SESSION_HEADER, sessionCookieName, Sessions, type Session } from './security.js';

export class ConsoleAuth {
  readonly identities: Identities;
  readonly sessions: Sessions;
  readonly logins: LoginThrottle;
  /** Kubeconfig mode: the token of the printed URL, spent by the first sign-in. */
  readonly oneTime = new OneTimeToken();

  constructor(private readonly options: ConsoleOptions) {
    this.identities = new Identities(options.kubeConfig, options.mode);
    this.sessions = new Sessions(
      options.sessionTtlMs ?? CONSOLE_DEFAULTS.sessionTtlMs,
      10_000,
      options.maxSessionsPerUser ?? CONSOLE_DEFAULTS.maxSessionsPerUser,
    );
    this.logins = new LoginThrottle(options.loginThrottle ?? DEFAULT_LOGIN_THROTTLE);
  }

  cookieOf(req: FastifyRequest): string | undefined {
    return cookieValue(req.headers.cookie, sessionCookieName(String(req.headers.host ?? '')));
  }

  /** Token mode: the bearer token an authenticating proxy (or anyone) put in Authorization. */
  bearerOf(req: FastifyRequest): string | undefined {
    if (this.options.mode !== 'token') return undefined;
    return /^Bearer\s+(\S+)$/i.exec(String(req.headers.authorization ?? ''))?.[1];
  }

  /** The session behind this request, or undefined; in token mode a proxy's bearer token counts as one. */
  sessionOf(req: FastifyRequest): Session | undefined {
    const bearer = this.bearerOf(req);
    if (bearer) return { kubeToken: bearer, user: this.identities.forToken(bearer).confirmedName ?? '' };
    const secret = req.headers[SESSION_HEADER];
    return this.sessions.get(this.cookieOf(req), typeof secret === 'string' ? secret : undefined);
  }

  /** The signed-in user's Kubernetes client; 401 without a session. */
  userOf(req: FastifyRequest): UserClient {
    const session = this.sessionOf(req);
    if (!session) throw new HttpError(401, 'not_signed_in', 'sign in first');
    return this.clientOf(session);
  }

  clientOf(session: Session): UserClient {
    return session.kubeToken ? this.identities.forToken(session.kubeToken) : this.identities.kubeconfigUser();
  }

  /** Whom the per-user bounds count this request against: the session's user, or who the proxy's token is. */
  async userNameOf(req: FastifyRequest, client: UserClient): Promise<string> {
    if (this.options.mode === 'kubeconfig') return 'kubeconfig';
    const known = this.sessionOf(req)?.user;
    return known || client.userName();
  }

  /**
   * A bearer token the console has not seen yet is checked once, before the request, and throttled
   * like a sign-in: otherwise any path would answer whether a guessed token is valid.
   */
  async checkBearer(req: FastifyRequest, bearer: string): Promise<HttpError | undefined> {
    const client = this.identities.forToken(bearer);
    if (client.confirmedName !== undefined) return undefined;
    // A page's first requests come together: one check for all of them, counted once.
    if (client.asking)
      return client.userName().then(
        () => undefined,
        (err: unknown) => new HttpError(KubeError.from(err).status, 'token_refused', KubeError.from(err).message),
      );
    const check = this.logins.beginCheck(req.ip);
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
  }

  /** A new session: its cookie set on the reply, its secret returned for the page to keep. */
  startSession(req: FastifyRequest, reply: FastifyReply, session: Session): string {
    const keys = this.sessions.create(session);
    reply.header('set-cookie', this.cookie(String(req.headers.host ?? ''), keys.id));
    return keys.secret;
  }

  /** Ends the request's session (if it proved one) and clears its cookie. */
  endSession(req: FastifyRequest, reply: FastifyReply): void {
    if (this.sessionOf(req)) this.sessions.delete(this.cookieOf(req));
    reply.header('set-cookie', this.cookie(String(req.headers.host ?? ''), '', 0));
  }

  private cookie(host: string, value: string, maxAge?: number): string {
    const secure = this.options.secureCookie ? '; Secure' : '';
    const age = maxAge === undefined ? '' : `; Max-Age=${maxAge}`;
    return `${sessionCookieName(host)}=${value}; Path=/; HttpOnly; SameSite=Strict${secure}${age}`;
  }
}
