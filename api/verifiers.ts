/**
 * Credential verifiers of the route contract (api/route.schema.json): SHA-256 digests for
 * generated high-entropy secrets, scrypt PHC strings for user-chosen passwords. The operator
 * produces them, the ingester checks against them; both import them from here. Every comparison
 * of secret material is constant-time, and scrypt runs off the event loop.
 */
import { hash, scrypt as scryptCallback, timingSafeEqual } from 'node:crypto';

// crypto.hash, the one-shot digest (a string is hashed as UTF-8): about half the cost of a Hash
// object for the short values hashed on every request (credentials, event ids).
export const sha256 = (value: string): Buffer => hash('sha256', value, 'buffer');
export const sha256Hex = (value: string): string => hash('sha256', value, 'hex');
export const sha256Base64 = (value: string): string => hash('sha256', value, 'base64');

export function digestsEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Whether `digest` equals the bytes of `buf` from `offset` on: every byte compared whatever the
 * first differing one (constant time), and nothing allocated, since it runs on the request path
 * (a view of the range, as digestsEqual would need, costs more than the comparison).
 */
export function digestEqualsAt(buf: Buffer, offset: number, digest: Buffer): boolean {
  if (offset < 0 || buf.length < offset + digest.length) return false;
  let diff = 0;
  for (let i = 0; i < digest.length; i++) diff |= (buf[offset + i] as number) ^ (digest[i] as number);
  return diff === 0;
}

/**
 * Whether two strings are equal, in time that depends on their length only (every character is
 * compared, nothing allocated: it runs on the request path), so a comparison never says how much
 * of a secret matched.
 */
export function sameSecret(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

export interface ScryptParams {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

const PHC_SCRYPT = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;

export function parseScrypt(phc: string): ScryptParams {
  const m = PHC_SCRYPT.exec(phc);
  if (!m) throw new Error('scrypt verifier is not a PHC string $scrypt$ln=..,r=..,p=..$salt$hash');
  const [, ln, r, p, salt, hash] = m as unknown as [string, string, string, string, string, string];
  const params = {
    N: 2 ** Number(ln),
    r: Number(r),
    p: Number(p),
    salt: Buffer.from(salt, 'base64'),
    hash: Buffer.from(hash, 'base64'),
  };
  if (params.N < 2 || params.N > 2 ** 20 || params.r < 1 || params.p < 1 || params.hash.length < 16) {
    throw new Error('scrypt verifier parameters out of range (ln 1..20, r >= 1, p >= 1, hash >= 16 bytes)');
  }
  return params;
}

function scryptAsync(password: string, params: ScryptParams): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const maxmem = 128 * params.N * params.r * 2 + 1024 * 1024;
    scryptCallback(
      password,
      params.salt,
      params.hash.length,
      { N: params.N, r: params.r, p: params.p, maxmem },
      (err, key) => (err ? reject(err) : resolve(key)),
    );
  });
}

/** Checks a password against a PHC scrypt string, off the event loop. */
export async function verifyScrypt(phc: string | ScryptParams, password: string): Promise<boolean> {
  const params = typeof phc === 'string' ? parseScrypt(phc) : phc;
  return digestsEqual(await scryptAsync(password, params), params.hash);
}

/** Produces a PHC scrypt string for a password (used by the operator and by tests). */
export async function hashScrypt(password: string, salt: Buffer, ln = 15, r = 8, p = 1): Promise<string> {
  const hash = await scryptAsync(password, { N: 2 ** ln, r, p, salt, hash: Buffer.alloc(32) });
  return `$scrypt$ln=${ln},r=${r},p=${p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}
