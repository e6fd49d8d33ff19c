/**
 * Who may drive the console. Locally: only the browser tab that opened the URL `intake console`
 * printed, only under the Host names 127.0.0.1:<port> / localhost:<port> / [::1]:<port> (DNS
 * rebinding), and writes only from the console's own pages (CSRF). In token mode: a session made
 * from a Kubernetes token the user pasted, or the bearer token an authenticating proxy puts in
 * every request.
 *
 * A session is two values, and a request needs both: a cookie, and a secret the page keeps in its
 * sessionStorage and sends in the `X-Intake-Session` header. Browsers do not isolate cookies by
 * port, so every other server on 127.0.0.1 (or localhost) the user visits receives the cookie;
 * storage is per origin, port included, so only the console's own pages can read the secret. The
 * cookie alone is worth nothing (it lets the page itself load); its name carries the port, so two
 * consoles on one machine do not overwrite each other's.
 */
import { randomBytes } from 'node:crypto';
import { sameSecret } from '../../api/verifiers.js';
import { LRUCache } from 'lru-cache';

/** The request header carrying a session's secret (an origin-bound value: never a cookie). */
export const SESSION_HEADER = 'x-intake-session';

/** The session cookie's name for this Host: intake_console_<port>, or intake_console without a port. */
export function sessionCookieName(host: string): string {
  const port = /:(\d{1,5})$/.exec(host)?.[1];
  return port ? `intake_console_${port}` : 'intake_console';
}

export const randomToken = (): string => randomBytes(32).toString('base64url');

/** Constant-time comparison of two tokens of any length. */
export const sameToken = sameSecret;

/** The Host header values a local console answers to: loopback names with its own port. */
export function allowedLocalHosts(port: number): Set<string> {
  return new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
}

/**
 * Whether a state-changing request comes from the console's own page: a JSON body (a cross-site
 * form cannot send one without a CORS preflight, which the console never answers), and when the
 * browser says where the request comes from (Origin, Sec-Fetch-Site), that it is this origin.
 */
export function isSameOriginWrite(headers: Record<string, string | string[] | undefined>, host: string): boolean {
  const contentType = String(headers['content-type'] ?? '');
  if (!/^application\/json\b/i.test(contentType)) return false;
  const site = headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return false;
  const origin = headers.origin;
  if (origin !== undefined && origin !== `http://${host}` && origin !== `https://${host}`) return false;
  return true;
}

export interface Session {
  /** Token mode: the user's Kubernetes bearer token. Kubeconfig mode: none (the kubeconfig is the identity). */
  kubeToken?: string;
  user: string;
}

/** Sessions one user may hold at once (each sign-in is one; a browser's tabs share theirs). */
export const DEFAULT_SESSIONS_PER_USER = 5;

/** A new session's two halves: the cookie's value and the secret the page sends in X-Intake-Session. */
export interface SessionKeys {
  id: string;
  secret: string;
}

/**
 * Sessions by their cookie value, bounded, each expiring after `ttlMs` of no use. A session is
 * found only with its secret too: a cookie another server learned gets nothing.
 *
 * One user (Session.user) holds at most `perUser` sessions: a new one past that ends that user's
 * own oldest, never another user's, so signing in over and over cannot push everyone else out of
 * the `max` the console keeps.
 *
 * When the console holds `max` sessions (many identities, each at its share: a few thousand
 * service accounts someone controls), a new one does not simply end the least recently used
 * session, which would be some other user's live one: expired sessions go first; then, if the
 * user signing in holds any, that user's own least recently used; else the least recently used
 * session of the identity holding the most (ties: the one idle longest). Someone holding many
 * identities at their share therefore ends its own sessions before a user with one or two.
 */
export class Sessions {
  private readonly sessions: LRUCache<string, Session & { secret: string }>;
  /** Each user's session ids, oldest first (ids that expired are dropped when next looked at). */
  private readonly byUser = new Map<string, string[]>();

  constructor(
    ttlMs: number,
    readonly max = 10_000,
    readonly perUser = DEFAULT_SESSIONS_PER_USER,
  ) {
    this.sessions = new LRUCache({
      // One more than kept: create() makes room itself, so the cache's own eviction (the least
      // recently used session, whoever's) never chooses.
      max: max + 1,
      ttl: ttlMs,
      updateAgeOnGet: true,
      dispose: (value, id) => this.forget(value.user, id),
    });
  }

  create(session: Session): SessionKeys {
    const live = (this.byUser.get(session.user) ?? []).filter((id) => this.sessions.has(id));
    while (live.length >= this.perUser) this.sessions.delete(live.shift() as string);
    if (this.sessions.size >= this.max) this.makeRoom(session.user, live);
    const keys = { id: randomToken(), secret: randomToken() };
    live.push(keys.id);
    this.byUser.set(session.user, live);
    this.sessions.set(keys.id, { ...session, secret: keys.secret });
    return keys;
  }

  /** The console is full: ends one session, whose as the class comment says. */
  private makeRoom(user: string, own: string[]): void {
    this.sessions.purgeStale();
    if (this.sessions.size < this.max) return;
    if (own.length > 0) {
      const id = this.idlest(own);
      own.splice(own.indexOf(id), 1);
      this.sessions.delete(id);
      return;
    }
    let victim: string | undefined;
    let victimCount = 0;
    let victimIdleTtl = Infinity;
    for (const ids of this.byUser.values()) {
      const idlest = this.idlest(ids);
      const ttl = this.sessions.getRemainingTTL(idlest);
      if (ids.length > victimCount || (ids.length === victimCount && ttl < victimIdleTtl)) {
        [victim, victimCount, victimIdleTtl] = [idlest, ids.length, ttl];
      }
    }
    if (victim !== undefined) this.sessions.delete(victim);
  }

  /** Of these session ids, the one used least recently (the least time left to live, since use renews it). */
  private idlest(ids: readonly string[]): string {
    let idlest = ids[0] as string;
    for (const id of ids) if (this.sessions.getRemainingTTL(id) < this.sessions.getRemainingTTL(idlest)) idlest = id;
    return idlest;
  }

  /** The sessions `user` holds now. */
  countOf(user: string): number {
    return (this.byUser.get(user) ?? []).filter((id) => this.sessions.has(id)).length;
  }

  private forget(user: string, id: string): void {
    const ids = this.byUser.get(user);
    if (!ids) return;
    const left = ids.filter((x) => x !== id);
    if (left.length > 0) this.byUser.set(user, left);
    else this.byUser.delete(user);
  }

  /** The session of this cookie value, if `secret` is its secret; otherwise undefined. */
  get(id: string | undefined, secret: string | undefined): Session | undefined {
    if (!id || !secret) return undefined;
    const found = this.sessions.peek(id);
    if (!found || !sameToken(secret, found.secret)) return undefined;
    const { secret: _secret, ...session } = this.sessions.get(id) as Session & { secret: string };
    return session;
  }

  /** Whether this cookie value names a live session: enough to load the page, nothing more. */
  has(id: string | undefined): boolean {
    return !!id && this.sessions.has(id);
  }

  delete(id: string | undefined): void {
    if (id) this.sessions.delete(id);
  }
}

/** The URL's one-time token: accepted once, then never again (the session replaces it). */
export class OneTimeToken {
  private used = false;

  constructor(readonly value: string = randomToken()) {}

  /** Whether `candidate` is the token and not spent yet; does not spend it. */
  isFresh(candidate: string): boolean {
    return !this.used && sameToken(candidate, this.value);
  }

  redeem(candidate: string): boolean {
    if (!this.isFresh(candidate)) return false;
    this.used = true;
    return true;
  }
}

export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return undefined;
}

/** The console's Content-Security-Policy: its own scripts and styles only, nothing inline, no framing. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');
