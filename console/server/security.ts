/**
 * Who may drive the console. Locally: only the browser that opened the URL `intake console`
 * printed (its one-time token is exchanged for a session cookie), only under the Host names
 * 127.0.0.1:<port> / localhost:<port> / [::1]:<port> (DNS rebinding), and writes only from the
 * console's own pages (CSRF). In token mode: a session made from a Kubernetes token the user
 * pasted, or the bearer token an authenticating proxy puts in every request.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';

export const SESSION_COOKIE = 'intake_console';

export const randomToken = (): string => randomBytes(32).toString('base64url');

/** Constant-time comparison of two tokens of any length. */
export function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

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

/** Sessions by their cookie value, bounded, each expiring after `ttlMs` of no use. */
export class Sessions {
  private readonly sessions: LRUCache<string, Session>;

  constructor(ttlMs: number, max = 10_000) {
    this.sessions = new LRUCache({ max, ttl: ttlMs, updateAgeOnGet: true });
  }

  create(session: Session): string {
    const id = randomToken();
    this.sessions.set(id, session);
    return id;
  }

  get(id: string | undefined): Session | undefined {
    return id ? this.sessions.get(id) : undefined;
  }

  delete(id: string | undefined): void {
    if (id) this.sessions.delete(id);
  }
}

/** The URL's one-time token: accepted once, then never again (the session cookie replaces it). */
export class OneTimeToken {
  private used = false;

  constructor(readonly value: string = randomToken()) {}

  redeem(candidate: string): boolean {
    if (this.used || !sameToken(candidate, this.value)) return false;
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
