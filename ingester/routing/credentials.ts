/**
 * Credentials as the ingester checks them: digests computed once when the route table is built,
 * and a cache of successful slow-hash checks so a busy sender does not pay scrypt on every request.
 */
import type { LRUCache } from 'lru-cache';
import type { RouteCredential } from '../../api/route.js';
import { digestsEqual, parseScrypt, sha256, sha256Hex, verifyScrypt, type ScryptParams } from '../../api/verifiers.js';
import { growingLru } from '../../common/growing-lru.js';

/**
 * A digest copied into Node's shared pool of small buffers (as Buffer.from(hex) already is): a
 * hash's own result has an ArrayBuffer of its own, about 170 bytes of heap and native memory
 * beside the 32 bytes, which with 20,000 routes is 3 MiB kept for nothing.
 */
const pooled = (digest: Buffer): Buffer => Buffer.from(digest);

/** A credential prepared for checking: digests computed once when the route table is built. */
export class CompiledCredential {
  readonly usernameDigest: Buffer;
  private readonly secretDigest?: Buffer;
  private readonly scryptParams?: ScryptParams;
  private readonly scryptId?: string;
  readonly notBefore: number;
  readonly notAfter: number;

  constructor(cred: RouteCredential) {
    this.usernameDigest = pooled(sha256(cred.username));
    const s = cred.secret;
    if ('sha256' in s) {
      this.secretDigest = Buffer.from(s.sha256, 'hex');
    } else if ('plain' in s) {
      this.secretDigest = pooled(sha256(s.plain));
    } else {
      this.scryptParams = parseScrypt(s.scrypt);
      this.scryptId = s.scrypt;
    }
    this.notBefore = cred.notBefore ? Date.parse(cred.notBefore) : -Infinity;
    this.notAfter = cred.notAfter ? Date.parse(cred.notAfter) : Infinity;
  }

  /**
   * SHA-256 of the secret when it is known (sha256 or plain verifiers), in hex: lets API keys be
   * found in O(1). Computed when asked (the table asks once per API key), not kept per credential.
   */
  get secretDigestHex(): string | undefined {
    return this.secretDigest?.toString('hex');
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

  async verifySlow(
    usernameDigest: Buffer,
    password: string,
    cache: VerifiedCache,
    cachedOnly = false,
  ): Promise<boolean> {
    if (!this.scryptParams || !this.scryptId) return false;
    if (!digestsEqual(this.usernameDigest, usernameDigest)) return false;
    const cacheKey = sha256Hex(`${this.scryptId}\0${password}`);
    if (cache.has(cacheKey)) return true;
    if (cachedOnly) return false;
    const ok = await verifyScrypt(this.scryptParams, password);
    if (ok) cache.set(cacheKey, true);
    return ok;
  }
}

/** Successful slow-hash checks, keyed by a digest of verifier and password (never the password). */
export type VerifiedCache = LRUCache<string, true>;

export const newVerifiedCache = (max = 10_000, ttlMs = 15 * 60_000): VerifiedCache =>
  growingLru<string, true>(max, { ttl: ttlMs });
