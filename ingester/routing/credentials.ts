/**
 * Credentials as the ingester checks them: digests computed once when the route table is built,
 * and a cache of successful slow-hash checks so a busy sender does not pay scrypt on every request.
 */
import type { LRUCache } from 'lru-cache';
import type { RouteCredential } from '../../api/route.js';
import {
  digestEqualsAt,
  digestsEqual,
  parseScrypt,
  sha256,
  sha256Hex,
  verifyScrypt,
  type ScryptParams,
} from '../../api/verifiers.js';
import { growingLru } from '../../common/growing-lru.js';

const DIGEST_BYTES = 32;

/**
 * A credential prepared for checking: digests computed once when the route table is built.
 *
 * With 20,000 routes what each credential keeps counts: both digests live in one 64-byte Buffer
 * taken from Node's shared pool of small buffers (a hash's own result has an ArrayBuffer of its
 * own, and each Buffer object is about 100 bytes of heap), and an absent validity bound is
 * undefined rather than an infinity (a double in a field is a heap number of its own).
 */
export class CompiledCredential {
  /** SHA-256 of the username, then (sha256 and plain verifiers) the secret's. */
  private readonly digests: Buffer;
  private readonly scryptParams?: ScryptParams;
  private readonly scryptId?: string;
  readonly notBefore?: number;
  readonly notAfter?: number;

  constructor(cred: RouteCredential) {
    const username = sha256(cred.username);
    const s = cred.secret;
    if ('sha256' in s) {
      this.digests = Buffer.concat([username, Buffer.from(s.sha256, 'hex')]);
    } else if ('plain' in s) {
      this.digests = Buffer.concat([username, sha256(s.plain)]);
    } else {
      this.digests = Buffer.from(username);
      this.scryptParams = parseScrypt(s.scrypt);
      this.scryptId = s.scrypt;
    }
    if (cred.notBefore) this.notBefore = Date.parse(cred.notBefore);
    if (cred.notAfter) this.notAfter = Date.parse(cred.notAfter);
  }

  get usernameDigest(): Buffer {
    return this.digests.subarray(0, DIGEST_BYTES);
  }

  private get secretDigest(): Buffer | undefined {
    return this.digests.length > DIGEST_BYTES ? this.digests.subarray(DIGEST_BYTES) : undefined;
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
    return (
      (this.notBefore === undefined || nowMs >= this.notBefore) &&
      (this.notAfter === undefined || nowMs <= this.notAfter)
    );
  }

  /** Fast path for digest verifiers; callers use verifySlow for scrypt. */
  verifyFast(usernameDigest: Buffer, secretDigest: Buffer): boolean {
    // Evaluate both comparisons whatever the first says, so timing does not reveal which failed;
    // in place in the one buffer (digestEqualsAt), since a view per digest would be allocated per request.
    const userOk = usernameDigest.length === DIGEST_BYTES && digestEqualsAt(this.digests, 0, usernameDigest);
    const secretOk =
      this.digests.length === 2 * DIGEST_BYTES &&
      secretDigest.length === DIGEST_BYTES &&
      digestEqualsAt(this.digests, DIGEST_BYTES, secretDigest);
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
