/** The console's request checks (console/server/security.ts): token, Host, same-origin writes. */
import {
  allowedLocalHosts,
  CONTENT_SECURITY_POLICY,
  cookieValue,
  isSameOriginWrite,
  OneTimeToken,
  sessionCookieName,
  Sessions,
} from '../../../console/server/security.js';

describe('OneTimeToken', () => {
  it('is accepted once, then never again', () => {
    const token = new OneTimeToken();
    expect(token.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(token.redeem('wrong')).toBe(false);
    // The page is served for a fresh token; only the page's sign-in spends it.
    expect(token.isFresh(token.value)).toBe(true);
    expect(token.isFresh(token.value)).toBe(true);
    expect(token.redeem(token.value)).toBe(true);
    expect(token.isFresh(token.value)).toBe(false);
    expect(token.redeem(token.value)).toBe(false);
  });
});

describe('allowedLocalHosts', () => {
  it('names loopback with the console port only', () => {
    const hosts = allowedLocalHosts(9090);
    expect([...hosts]).toEqual(['127.0.0.1:9090', 'localhost:9090', '[::1]:9090']);
    expect(hosts.has('attacker.example:9090')).toBe(false);
    expect(hosts.has('127.0.0.1:9091')).toBe(false);
  });
});

describe('isSameOriginWrite', () => {
  const host = '127.0.0.1:9090';
  it('takes a JSON write from the same origin, or one that names no origin (curl)', () => {
    expect(isSameOriginWrite({ 'content-type': 'application/json', origin: 'http://127.0.0.1:9090' }, host)).toBe(true);
    expect(
      isSameOriginWrite({ 'content-type': 'application/json; charset=utf-8', 'sec-fetch-site': 'same-origin' }, host),
    ).toBe(true);
    expect(isSameOriginWrite({ 'content-type': 'application/json' }, host)).toBe(true);
  });
  it('refuses what a cross-site page or form can send', () => {
    expect(isSameOriginWrite({ 'content-type': 'application/x-www-form-urlencoded' }, host)).toBe(false);
    expect(isSameOriginWrite({ 'content-type': 'text/plain' }, host)).toBe(false);
    expect(isSameOriginWrite({}, host)).toBe(false);
    expect(isSameOriginWrite({ 'content-type': 'application/json', origin: 'http://evil.example' }, host)).toBe(false);
    expect(isSameOriginWrite({ 'content-type': 'application/json', origin: 'http://127.0.0.1:9091' }, host)).toBe(
      false,
    );
    expect(isSameOriginWrite({ 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' }, host)).toBe(false);
    expect(isSameOriginWrite({ 'content-type': 'application/json', 'sec-fetch-site': 'same-site' }, host)).toBe(false);
  });
});

describe('Sessions', () => {
  it('finds a session by its cookie value and its secret together, until deleted', () => {
    const sessions = new Sessions(60_000);
    const { id, secret } = sessions.create({ user: 'alice', kubeToken: 't' });
    expect(id).not.toBe(secret);
    expect(sessions.get(id, secret)).toEqual({ user: 'alice', kubeToken: 't' });
    expect(sessions.has(id)).toBe(true);
    sessions.delete(id);
    expect(sessions.get(id, secret)).toBeUndefined();
    expect(sessions.has(id)).toBe(false);
  });

  it('finds nothing with the cookie alone (what any server on another port receives), or a wrong secret', () => {
    const sessions = new Sessions(60_000);
    const a = sessions.create({ user: 'kubeconfig' });
    const b = sessions.create({ user: 'kubeconfig' });
    expect(sessions.get(a.id, undefined)).toBeUndefined();
    expect(sessions.get(a.id, '')).toBeUndefined();
    expect(sessions.get(a.id, b.secret)).toBeUndefined();
    expect(sessions.get(a.id, a.id)).toBeUndefined();
    expect(sessions.get(undefined, a.secret)).toBeUndefined();
    expect(sessions.get('nope', a.secret)).toBeUndefined();
  });
});

describe('sessionCookieName', () => {
  it('carries the port of the Host, so two consoles on one host keep their own cookies', () => {
    expect(sessionCookieName('127.0.0.1:9090')).toBe('intake_console_9090');
    expect(sessionCookieName('localhost:9091')).toBe('intake_console_9091');
    expect(sessionCookieName('[::1]:9090')).toBe('intake_console_9090');
    expect(sessionCookieName('console.example.com')).toBe('intake_console');
  });
});

describe('cookieValue and the CSP', () => {
  it('reads one cookie among several', () => {
    expect(cookieValue('a=1; intake_console=abc=; b=2', 'intake_console')).toBe('abc=');
    expect(cookieValue(undefined, 'intake_console')).toBeUndefined();
  });
  it('allows no inline script or style', () => {
    expect(CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
    expect(CONTENT_SECURITY_POLICY).toContain("style-src 'self'");
    expect(CONTENT_SECURITY_POLICY).not.toContain('unsafe');
    expect(CONTENT_SECURITY_POLICY).toContain("frame-ancestors 'none'");
  });
});

describe('Sessions per user', () => {
  it("keeps at most perUser sessions of one user: a new one ends that user's oldest, never another user's", () => {
    const sessions = new Sessions(60_000, 100, 2);
    const bob = sessions.create({ user: 'bob', kubeToken: 'b' });
    const a1 = sessions.create({ user: 'alice', kubeToken: 'a' });
    const a2 = sessions.create({ user: 'alice', kubeToken: 'a' });
    const a3 = sessions.create({ user: 'alice', kubeToken: 'a' });
    expect(sessions.get(a1.id, a1.secret)).toBeUndefined();
    expect(sessions.get(a2.id, a2.secret)).toBeDefined();
    expect(sessions.get(a3.id, a3.secret)).toBeDefined();
    expect(sessions.countOf('alice')).toBe(2);
    expect(sessions.get(bob.id, bob.secret)).toEqual({ user: 'bob', kubeToken: 'b' });
    // Alice signing out of one frees a place: her next sign-in ends nothing.
    sessions.delete(a2.id);
    const a4 = sessions.create({ user: 'alice', kubeToken: 'a' });
    expect(sessions.get(a3.id, a3.secret)).toBeDefined();
    expect(sessions.get(a4.id, a4.secret)).toBeDefined();
  });

  it("a full console ends the sessions of identities holding many: ending another user's one session takes as many identities as the console keeps sessions", () => {
    const sessions = new Sessions(60_000, 100, 5);
    const alice = sessions.create({ user: 'alice' });
    const bob = sessions.create({ user: 'bob' });
    // Someone with 97 identities signs in with each, five times round, and more: 485 sign-ins.
    for (let round = 0; round < 5; round++) for (let i = 0; i < 97; i++) sessions.create({ user: `sa-${i}` });
    // Alice and Bob, one idle session each, kept theirs: every sign-in past the 100th ended one of
    // an identity holding more (its own first, once it held some).
    expect(sessions.get(alice.id, alice.secret)).toEqual({ user: 'alice' });
    expect(sessions.get(bob.id, bob.secret)).toEqual({ user: 'bob' });
    let held = 0;
    for (let i = 0; i < 97; i++) held += sessions.countOf(`sa-${i}`);
    expect(held).toBe(98);
  });

  it('a full console: the one signing in ends its own idlest session first; ties end the idlest identity', async () => {
    const tick = () => new Promise((r) => setTimeout(r, 10));
    const sessions = new Sessions(60_000, 3, 5);
    const a = sessions.create({ user: 'a' });
    await tick();
    const b = sessions.create({ user: 'b' });
    await tick();
    const c1 = sessions.create({ user: 'c' });
    await tick();
    // Full, and c signs in again: its own session goes, not a's or b's (older, idle).
    const c2 = sessions.create({ user: 'c' });
    expect([a, b, c1, c2].map((k) => sessions.has(k.id))).toEqual([true, true, false, true]);
    // a uses its session; then a new identity comes: one session each, so the idlest goes (b's).
    await tick();
    expect(sessions.get(a.id, a.secret)).toBeDefined();
    await tick();
    sessions.create({ user: 'd' });
    expect([a, b, c2].map((k) => sessions.has(k.id))).toEqual([true, false, true]);
  });

  it('forgets expired sessions in the count', async () => {
    const sessions = new Sessions(50, 100, 2);
    sessions.create({ user: 'alice' });
    sessions.create({ user: 'alice' });
    await new Promise((r) => setTimeout(r, 120));
    expect(sessions.countOf('alice')).toBe(0);
  });
});
