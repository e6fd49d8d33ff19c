import { randomBytes } from 'node:crypto';
import type { Route } from '../../../../api/route.js';
import { digestEqualsAt, hashScrypt, sha256, sha256Hex } from '../../../../api/verifiers.js';
import { CompiledCredential, newVerifiedCache } from '../../../../ingester/routing/credentials.js';
import { parseBasicAuth, soleHeader } from '../../../../ingester/auth/basic-auth.js';
import { RouteTable, type RouteEntry } from '../../../../ingester/routing/route-table.js';

const webhook = (
  name: string,
  secret: Route['credentials'][number]['secret'],
  extra: Partial<Route['credentials'][number]> = {},
): Route => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace: 'ns',
  credentials: [{ username: 'u', secret, ...extra }],
});
const build = (routes: Route[], allowPlaintext = true) =>
  RouteTable.build(
    routes.map((route, i) => ({ source: `#${i}`, route })),
    { allowPlaintext },
  );

describe('RouteTable authentication', () => {
  it('verifies sha256 verifiers', async () => {
    const { table } = build([webhook('a', { sha256: sha256Hex('secret') })]);
    expect(await table.authenticateWebhook('a', 'u', 'secret', newVerifiedCache())).toBeDefined();
    expect(await table.authenticateWebhook('a', 'u', 'Secret', newVerifiedCache())).toBeUndefined();
  });

  it('verifies scrypt verifiers and caches a success', async () => {
    const phc = await hashScrypt('pw', randomBytes(16), 10);
    const { table } = build([webhook('a', { scrypt: phc })]);
    const cache = newVerifiedCache();
    expect(await table.authenticateWebhook('a', 'u', 'wrong', cache)).toBeUndefined();
    expect(cache.size).toBe(0);
    expect(await table.authenticateWebhook('a', 'u', 'pw', cache)).toBeDefined();
    expect(cache.size).toBe(1);
    expect(await table.authenticateWebhook('a', 'u', 'pw', cache)).toBeDefined();
  });

  it('honours validity windows (rotation grace period)', async () => {
    const { table } = build([webhook('a', { plain: 'old' }, { notAfter: '2026-01-01T00:00:00Z' })]);
    const before = Date.parse('2025-12-31T23:59:59Z');
    const after = Date.parse('2026-01-01T00:00:01Z');
    expect(await table.authenticateWebhook('a', 'u', 'old', newVerifiedCache(), before)).toBeDefined();
    expect(await table.authenticateWebhook('a', 'u', 'old', newVerifiedCache(), after)).toBeUndefined();
  });

  it('remembers an Authorization header that verified (by digest), never one that failed, and only while its credential is valid', async () => {
    const { table } = build([
      webhook('a', { sha256: sha256Hex('secret') }, { notAfter: '2026-01-01T00:00:00Z' }),
      webhook('b', { sha256: sha256Hex('secret') }),
    ]);
    const before = Date.parse('2025-12-31T23:59:59Z');
    const wrong = table.headerKey('a', 'Basic dTpTZWNyZXQ=');
    expect(await table.authenticateWebhook('a', 'u', 'Secret', newVerifiedCache(), before, wrong)).toBeUndefined();
    expect(table.knownHeader(wrong, before)).toBeUndefined();
    const right = table.headerKey('a', 'Basic dTpzZWNyZXQ=');
    expect(table.knownHeader(right, before)).toBeUndefined();
    const entry = await table.authenticateWebhook('a', 'u', 'secret', newVerifiedCache(), before, right);
    expect(table.knownHeader(right, before)).toBe(entry);
    // The same header sent to another integration is another key; past notAfter, no longer known.
    expect(table.headerKey('b', 'Basic dTpzZWNyZXQ=')).not.toBe(right);
    expect(table.knownHeader(right, Date.parse('2026-01-01T00:00:01Z'))).toBeUndefined();
    // A reload is a new table: it remembers nothing.
    expect(build([webhook('a', { sha256: sha256Hex('secret') })]).table.knownHeader(right, before)).toBeUndefined();
  });

  it('does not remember headers checked by a slow hash (the throttle and its cache handle those)', async () => {
    const phc = await hashScrypt('pw', randomBytes(16), 10);
    const { table } = build([webhook('a', { scrypt: phc })]);
    const key = table.headerKey('a', 'Basic dTpwdw==');
    expect(await table.authenticateWebhook('a', 'u', 'pw', newVerifiedCache(), Date.now(), key)).toBeDefined();
    expect(table.knownHeader(key)).toBeUndefined();
  });

  it('skips plaintext routes outside standalone mode, and a second route for a taken name', () => {
    expect(build([webhook('a', { plain: 'x' })], false).skipped[0]?.reason).toMatch(/plaintext/);
    const { skipped, table } = build([webhook('a', { plain: 'x' }), webhook('a', { plain: 'y' })]);
    expect(skipped).toHaveLength(1);
    expect(table.size.webhooks).toBe(1);
  });

  it('finds API keys by digest and refuses scrypt-verified keys', async () => {
    const key: Route = {
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'ApiKey',
      name: 'k',
      namespace: 'ns',
      credentials: [{ username: 'ns', secret: { sha256: sha256Hex('ns_abc') } }],
    };
    const { table } = build([key]);
    expect(table.authenticateApiKey('ns_abc', undefined)?.namespace).toBe('ns');
    expect(table.authenticateApiKey('ns_abc', 'ns')).toBeDefined();
    expect(table.authenticateApiKey('ns_abc', 'other')).toBeUndefined();
    const slow = {
      ...key,
      credentials: [{ username: 'ns', secret: { scrypt: await hashScrypt('k', randomBytes(16), 10) } }],
    };
    expect(build([slow]).skipped[0]?.reason).toMatch(/sha256/);
  });
});

describe('parseBasicAuth', () => {
  const enc = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;
  it('splits at the first colon, so passwords may contain colons', () => {
    expect(parseBasicAuth(enc('user:pa:ss'))).toEqual({ username: 'user', password: 'pa:ss' });
  });
  it('accepts any case of the scheme', () => {
    expect(parseBasicAuth(`bAsIc ${Buffer.from('a:b').toString('base64')}`)).toEqual({ username: 'a', password: 'b' });
  });
  it.each([[undefined], [''], ['Basic'], ['Bearer abc'], [enc('nocolon')], ['Basic @@@'], [[enc('a:b'), enc('c:d')]]])(
    'refuses %p',
    (h) => {
      expect(parseBasicAuth(h as string | string[] | undefined)).toBeUndefined();
    },
  );
});

describe('soleHeader', () => {
  it('returns the one value, any case of the name', () => {
    expect(soleHeader(['Host', 'x', 'AUTHORIZATION', 'Basic a'], 'authorization')).toBe('Basic a');
  });
  it('refuses a repeated header and reports a missing one as undefined', () => {
    expect(soleHeader(['Authorization', 'Basic a', 'authorization', 'Basic b'], 'authorization')).toBeUndefined();
    expect(soleHeader(['Host', 'x'], 'authorization')).toBeUndefined();
  });
});

describe('RouteTable.build with compiled entries of earlier builds', () => {
  it('compiles a route handed over again once, a new route object anew, and each table starts afresh', async () => {
    const compiled = new WeakMap<Route, RouteEntry>();
    const a = webhook('a', { sha256: sha256Hex('secret') });
    const b = webhook('b', { sha256: sha256Hex('other') });
    const first = RouteTable.build([{ source: '#a', route: a }], { allowPlaintext: false, compiled });
    const second = RouteTable.build(
      [
        { source: '#a', route: a },
        { source: '#b', route: b },
      ],
      { allowPlaintext: false, compiled },
    );
    expect(second.table.webhook('a')).toBe(first.table.webhook('a'));
    expect(compiled.get(b)).toBe(second.table.webhook('b'));
    // A changed Secret parses to a new route object: compiled from it, not from the old one.
    const changed = webhook('a', { sha256: sha256Hex('rotated') });
    const third = RouteTable.build([{ source: '#a', route: changed }], { allowPlaintext: false, compiled });
    expect(third.table.webhook('a')).not.toBe(first.table.webhook('a'));
    expect(await third.table.authenticateWebhook('a', 'u', 'rotated', newVerifiedCache())).toBeDefined();
    expect(await third.table.authenticateWebhook('a', 'u', 'secret', newVerifiedCache())).toBeUndefined();
    // A header remembered by one table is not known to the next (knownHeader is per table).
    const key = first.table.headerKey('a', 'Basic x');
    await first.table.authenticateWebhook('a', 'u', 'secret', newVerifiedCache(), Date.now(), key);
    expect(first.table.knownHeader(key)).toBeDefined();
    expect(second.table.knownHeader(key)).toBeUndefined();
  });
});

describe('RouteTable.apiKeyIdentity (what the brute-force guard keys a metrics attempt by)', () => {
  const apiKey = (namespace: string, username: string, key: string): Route => ({
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'ApiKey',
    name: 'k',
    namespace,
    credentials: [{ username, secret: { sha256: sha256Hex(key) } }],
  });
  const { table } = build([
    apiKey('team-a', 'team-a', 'team-a_1111'),
    apiKey('team-b', 'shared', 'team-b_2222'),
    apiKey('team-c', 'shared', 'team-c_3333'),
  ]);

  it('names the namespace a key names, right or wrong, when that namespace publishes a key', () => {
    expect(table.apiKeyIdentity('team-a_1111', undefined)).toBe('team-a');
    expect(table.apiKeyIdentity('team-a_wrong', undefined)).toBe('team-a');
    expect(table.apiKeyIdentity('team-b_', undefined)).toBe('team-b');
  });

  it('names nothing for a key naming no published namespace, or none at all', () => {
    expect(table.apiKeyIdentity('nobody_1111', undefined)).toBeUndefined();
    expect(table.apiKeyIdentity('no-underscore', undefined)).toBeUndefined();
    expect(table.apiKeyIdentity('_team-a', undefined)).toBeUndefined();
    expect(table.apiKeyIdentity('', undefined)).toBeUndefined();
  });

  it("with Basic, names the username's namespace whatever the key; a username shared by namespaces names them together", () => {
    expect(table.apiKeyIdentity('anything', 'team-a')).toBe('team-a');
    expect(table.apiKeyIdentity('team-a_1111', 'shared')).toBe('team-b,team-c');
    expect(table.apiKeyIdentity('team-a_1111', 'nobody')).toBeUndefined();
  });
});

describe('CompiledCredential (both digests in one pooled buffer, absent bounds undefined)', () => {
  it('needs the username and the secret both, for sha256 and plain verifiers alike', () => {
    for (const secret of [{ sha256: sha256Hex('pw') }, { plain: 'pw' }]) {
      const c = new CompiledCredential({ username: 'u', secret });
      expect(c.verifyFast(sha256('u'), sha256('pw'))).toBe(true);
      expect(c.verifyFast(sha256('u'), sha256('other'))).toBe(false);
      expect(c.verifyFast(sha256('v'), sha256('pw'))).toBe(false);
      // A digest of another length (a truncated or longer value) never matches a prefix.
      expect(c.verifyFast(sha256('u'), sha256('pw').subarray(0, 16))).toBe(false);
      expect(c.verifyFast(sha256('u').subarray(0, 16), sha256('pw'))).toBe(false);
      expect(c.verifyFast(sha256('u'), Buffer.concat([sha256('pw'), Buffer.alloc(1)]))).toBe(false);
      expect(c.usernameDigest.equals(sha256('u'))).toBe(true);
      expect(c.secretDigestHex).toBe(sha256Hex('pw'));
    }
  });

  it('has no fast digest for a scrypt verifier', async () => {
    const scrypt = await hashScrypt('pw', randomBytes(16), 10);
    const c = new CompiledCredential({ username: 'u', secret: { scrypt } });
    expect(c.isSlow).toBe(true);
    expect(c.secretDigestHex).toBeUndefined();
    expect(c.verifyFast(sha256('u'), sha256('pw'))).toBe(false);
    expect(c.usernameDigest.equals(sha256('u'))).toBe(true);
  });

  it('is valid always without bounds, and from notBefore to notAfter with either', () => {
    const secret = { plain: 'pw' };
    expect(new CompiledCredential({ username: 'u', secret }).validAt(0)).toBe(true);
    const from = new CompiledCredential({ username: 'u', secret, notBefore: '2026-01-01T00:00:00Z' });
    expect(from.validAt(Date.parse('2025-12-31T23:59:59Z'))).toBe(false);
    expect(from.validAt(Date.parse('2026-01-01T00:00:00Z'))).toBe(true);
    const until = new CompiledCredential({ username: 'u', secret, notAfter: '2026-01-01T00:00:00Z' });
    expect(until.validAt(Date.parse('2026-01-01T00:00:00Z'))).toBe(true);
    expect(until.validAt(Date.parse('2026-01-01T00:00:01Z'))).toBe(false);
  });
});

describe('digestEqualsAt', () => {
  it('compares a digest with the bytes at an offset, and nothing past the buffer', () => {
    const both = Buffer.concat([sha256('u'), sha256('pw')]);
    expect(digestEqualsAt(both, 0, sha256('u'))).toBe(true);
    expect(digestEqualsAt(both, 32, sha256('pw'))).toBe(true);
    expect(digestEqualsAt(both, 32, sha256('u'))).toBe(false);
    expect(digestEqualsAt(both, 33, sha256('pw'))).toBe(false);
    expect(digestEqualsAt(both, -1, sha256('u'))).toBe(false);
    const lastByte = Buffer.from(sha256('pw'));
    lastByte[31] = (lastByte[31] as number) ^ 1;
    expect(digestEqualsAt(both, 32, lastByte)).toBe(false);
  });
});

describe('CompiledCredential digests in shared slabs', () => {
  it("keeps every credential its own digests across slabs: each verifies its own password and no neighbour's", () => {
    // 64 bytes each: 64 to a 4 KiB slab, so 3,000 credentials fill 47 slabs; check around the edges.
    const creds = Array.from(
      { length: 3000 },
      (_, i) => new CompiledCredential({ username: `user-${i}`, secret: { sha256: sha256Hex(`pw-${i}`) } }),
    );
    for (const i of [0, 1, 63, 64, 65, 127, 128, 1023, 1024, 2999]) {
      const cred = creds[i] as CompiledCredential;
      expect(cred.verifyFast(sha256(`user-${i}`), sha256(`pw-${i}`))).toBe(true);
      expect(cred.verifyFast(sha256(`user-${i}`), sha256(`pw-${i + 1}`))).toBe(false);
      expect(cred.verifyFast(sha256(`user-${i + 1}`), sha256(`pw-${i}`))).toBe(false);
      expect(cred.secretDigestHex).toBe(sha256Hex(`pw-${i}`));
      expect(cred.usernameDigest.equals(sha256(`user-${i}`))).toBe(true);
    }
  });

  it('holds only the username digest for a scrypt verifier: no secret digest, never verified fast', async () => {
    const cred = new CompiledCredential({
      username: 'u',
      secret: { scrypt: await hashScrypt('pw', randomBytes(16), 10) },
    });
    expect(cred.secretDigestHex).toBeUndefined();
    expect(cred.usernameDigest.equals(sha256('u'))).toBe(true);
    expect(cred.verifyFast(sha256('u'), Buffer.alloc(32))).toBe(false);
  });
});
