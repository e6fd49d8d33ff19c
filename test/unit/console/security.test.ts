/** The console's request checks (console/server/security.ts): token, Host, same-origin writes. */
import {
  allowedLocalHosts,
  CONTENT_SECURITY_POLICY,
  cookieValue,
  isSameOriginWrite,
  OneTimeToken,
  Sessions,
} from '../../../console/server/security.js';

describe('OneTimeToken', () => {
  it('is accepted once, then never again', () => {
    const token = new OneTimeToken();
    expect(token.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(token.redeem('wrong')).toBe(false);
    expect(token.redeem(token.value)).toBe(true);
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
  it('finds a session by its id until deleted, and nothing for an unknown id', () => {
    const sessions = new Sessions(60_000);
    const id = sessions.create({ user: 'alice', kubeToken: 't' });
    expect(sessions.get(id)).toEqual({ user: 'alice', kubeToken: 't' });
    expect(sessions.get('nope')).toBeUndefined();
    expect(sessions.get(undefined)).toBeUndefined();
    sessions.delete(id);
    expect(sessions.get(id)).toBeUndefined();
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
