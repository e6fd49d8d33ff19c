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
 * Credentials' digests are written one after the other into slabs of this size, and a credential
 * keeps its slab and offset: a Buffer of its own (a view, even of a pooled one) is an object of
 * about 100 bytes of heap, as much again as the digests, for each of 20,000 routes. A slab lives
 * while any credential in it does, as a slice of Node's own buffer pool did: so it is small. One
 * live credential can keep its whole slab alive after every other credential in it was rotated or
 * removed; at 4 KiB (64 credentials, one Buffer object each) that is at most 4 KiB a credential,
 * where a 64 KiB slab would let a tenant that rotates its passwords in a loop pin 64 KiB for each
 * credential written beside its own.
 */
const SLAB_BYTES = 4 * 1024;
let slab = Buffer.alloc(0);
let slabUsed = 0;

/** Copies `parts` one after the other into the current slab (a new one when it is full). */
function intoSlab(...parts: Buffer[]): { slab: Buffer; at: number; length: number } {
  const length = parts.reduce((n, p) => n + p.length, 0);
  if (slabUsed + length > slab.length) {
    slab = Buffer.alloc(Math.max(SLAB_BYTES, length));
    slabUsed = 0;
  }
  const at = slabUsed;
  for (const part of parts) slabUsed += part.copy(slab, slabUsed);
  return { slab, at, length };
}

/**
 * A credential prepared for checking: digests computed once when the route table is built.
 *
 * With 20,000 routes what each credential keeps counts: both digests live in a shared slab
 * (intoSlab), and an absent validity bound is undefined rather than an infinity (a double in a
 * field is a heap number of its own).
 */
export class CompiledCredential {
  /** The slab holding the SHA-256 of the username, then (sha256 and plain verifiers) the secret's. */
  private readonly slab: Buffer;
  /** Where in the slab. */
  private readonly at: number;
  /** Bytes of digests in the slab: DIGEST_BYTES (the username's only: scrypt), else twice that. */
  private readonly digestBytes: number;
  private readonly scryptParams?: ScryptParams;
  private readonly scryptId?: string;
  readonly notBefore?: number;
  readonly notAfter?: number;

  constructor(cred: RouteCredential) {
    const username = sha256(cred.username);
    const s = cred.secret;
    let placed: { slab: Buffer; at: number; length: number };
    if ('sha256' in s) {
      placed = intoSlab(username, Buffer.from(s.sha256, 'hex'));
    } else if ('plain' in s) {
      placed = intoSlab(username, sha256(s.plain));
    } else {
      placed = intoSlab(username);
      this.scryptParams = parseScrypt(s.scrypt);
      this.scryptId = s.scrypt;
    }
    this.slab = placed.slab;
    this.at = placed.at;
    this.digestBytes = placed.length;
    if (cred.notBefore) this.notBefore = Date.parse(cred.notBefore);
    if (cred.notAfter) this.notAfter = Date.parse(cred.notAfter);
  }

  get usernameDigest(): Buffer {
    return this.slab.subarray(this.at, this.at + DIGEST_BYTES);
  }

  /**
   * SHA-256 of the secret when it is known (sha256 or plain verifiers), in hex: lets API keys be
   * found in O(1). Computed when asked (the table asks once per API key), not kept per credential.
   */
  get secretDigestHex(): string | undefined {
    return this.digestBytes > DIGEST_BYTES
      ? this.slab.toString('hex', this.at + DIGEST_BYTES, this.at + this.digestBytes)
      : undefined;
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
    const userOk = usernameDigest.length === DIGEST_BYTES && digestEqualsAt(this.slab, this.at, usernameDigest);
    const secretOk =
      this.digestBytes === 2 * DIGEST_BYTES &&
      secretDigest.length === DIGEST_BYTES &&
      digestEqualsAt(this.slab, this.at + DIGEST_BYTES, secretDigest);
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
