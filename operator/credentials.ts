/** Generating secrets and the verifiers the route carries for them. */
import { randomBytes } from 'node:crypto';
import type { SecretVerifier } from '../api/route.js';
import { hashScrypt, sha256Hex, verifyScrypt } from '../api/verifiers.js';
import { growingLru } from '../common/growing-lru.js';

/** 32 random bytes (256 bits), URL-safe so it survives being pasted into a URL's userinfo. */
export const generatePassword = (): string => randomBytes(32).toString('base64url');

/** `<namespace>_<40 hex digits>`: 160 random bits after the underscore. */
export const generateApiKey = (namespace: string): string => `${namespace}_${randomBytes(20).toString('hex')}`;

export const basicAuthorization = (username: string, password: string): string =>
  `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

export const sha256Verifier = (secret: string): SecretVerifier => ({ sha256: sha256Hex(secret) });

/**
 * User-provided passwords get a slow salted hash. A fresh salt each time would rewrite the route
 * on every reconcile, so the verifier for a (resource, password) pair is remembered.
 */
export class ScryptVerifiers {
  private readonly cache = growingLru<string, string>(10_000);

  constructor(private readonly cost = 14) {}

  /** `published` is the verifier already in the route: kept if it still matches (after a restart). */
  async verifierFor(owner: string, password: string, published?: string): Promise<SecretVerifier> {
    const key = sha256Hex(`${owner}\0${password}`);
    let phc = this.cache.get(key);
    if (!phc && published && (await verifyScrypt(published, password).catch(() => false))) phc = published;
    phc ??= await hashScrypt(password, randomBytes(16), this.cost);
    this.cache.set(key, phc);
    return { scrypt: phc };
  }
}
