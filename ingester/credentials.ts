/**
 * Credential verifiers. Every comparison of secret material is constant-time: we compare SHA-256
 * digests of equal length with timingSafeEqual. Slow salted hashes (scrypt, for user-chosen
 * passwords) run off the event loop, and successful checks are cached so a busy sender does not
 * pay the hash on every request.
 */
import { createHash, scrypt as scryptCallback, timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { RouteCredential } from '../api/route.js';

export const sha256 = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();
export const sha256Hex = (value: string): string => createHash('sha256').update(value, 'utf8').digest('hex');

export function digestsEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

interface ScryptParams {
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
  const params = { N: 2 ** Number(ln), r: Number(r), p: Number(p), salt: Buffer.from(salt, 'base64'), hash: Buffer.from(hash, 'base64') };
  if (params.N < 2 || params.N > 2 ** 20 || params.r < 1 || params.p < 1 || params.hash.length < 16) {
    throw new Error('scrypt verifier parameters out of range (ln 1..20, r >= 1, p >= 1, hash >= 16 bytes)');
  }
  return params;
}

function scryptAsync(password: string, params: ScryptParams): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const maxmem = 128 * params.N * params.r * 2 + 1024 * 1024;
    scryptCallback(password, params.salt, params.hash.length, { N: params.N, r: params.r, p: params.p, maxmem }, (err, key) =>
      err ? reject(err) : resolve(key),
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

/** A credential prepared for checking: digests computed once when the route table is built. */
export class CompiledCredential {
  readonly usernameDigest: Buffer;
  private readonly secretDigest?: Buffer;
  private readonly scryptParams?: ScryptParams;
  private readonly scryptId?: string;
  readonly notBefore: number;
  readonly notAfter: number;
  /** SHA-256 of the secret when it is known (sha256 or plain verifiers): lets API keys be found in O(1). */
  readonly secretDigestHex?: string;

  constructor(cred: RouteCredential) {
    this.usernameDigest = sha256(cred.username);
    const s = cred.secret;
    if ('sha256' in s) {
      this.secretDigest = Buffer.from(s.sha256, 'hex');
    } else if ('plain' in s) {
      this.secretDigest = sha256(s.plain);
    } else {
      this.scryptParams = parseScrypt(s.scrypt);
      this.scryptId = s.scrypt;
    }
    this.secretDigestHex = this.secretDigest?.toString('hex');
    this.notBefore = cred.notBefore ? Date.parse(cred.notBefore) : -Infinity;
    this.notAfter = cred.notAfter ? Date.parse(cred.notAfter) : Infinity;
  }

  get isSlow(): boolean {
    return this.scryptParams !== undefined;
  }

  validAt(nowMs: number): boolean {
    return nowMs >= this.notBefore && nowMs <= this.notAfter;
  }

  /** Fast path for digest verifiers; callers use verifySlow for scrypt. */
  verifyFast(usernameDigest: Buffer, secretDigest: Buffer): boolean {
    // Evaluate both comparisons whatever the first says, so timing does not reveal which failed.
    const userOk = digestsEqual(this.usernameDigest, usernameDigest);
    const secretOk = this.secretDigest !== undefined && digestsEqual(this.secretDigest, secretDigest);
    return userOk && secretOk;
  }

  async verifySlow(usernameDigest: Buffer, password: string, cache: VerifiedCache): Promise<boolean> {
    if (!this.scryptParams || !this.scryptId) return false;
    if (!digestsEqual(this.usernameDigest, usernameDigest)) return false;
    const cacheKey = sha256Hex(`${this.scryptId}\0${password}`);
    if (cache.has(cacheKey)) return true;
    const ok = await verifyScrypt(this.scryptParams, password);
    if (ok) cache.set(cacheKey, true);
    return ok;
  }
}

/** Successful slow-hash checks, keyed by a digest of verifier and password (never the password). */
export type VerifiedCache = LRUCache<string, true>;

export const newVerifiedCache = (max = 10_000, ttlMs = 15 * 60_000): VerifiedCache => new LRUCache<string, true>({ max, ttl: ttlMs });
