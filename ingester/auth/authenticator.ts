/**
 * The authentication step of both ingest endpoints, run in onRequest before any body is read.
 *
 * Three properties hold whatever the verifier (ingester hardening):
 * - an address blocked for an integration (auth/auth-throttle.ts: the guard counts per address
 *   and integration) never gets past this step for it, even with the right credentials, and even
 *   when it became blocked while its own check was running; the same address's valid credentials
 *   for another integration are never refused by the guard;
 * - guesses sent at once cannot outrun the throttle: a check that may run a slow hash (scrypt) is
 *   charged as a failure before it runs, and refunded only if it succeeds;
 * - a failed check takes the same time whether the integration, the username or only the password
 *   was wrong, or nothing was sent: every 401 is answered no sooner than `failureDelayMs` after
 *   the check began, or a quarter longer than recent scrypt checks took if that is more (a loaded
 *   machine hashes slower than the configured floor assumes).
 *
 * A signed integration (docs/signatures.md) is checked in two places: `webhook` (onRequest) reads
 * its signature headers and refuses a missing signature or a stale timestamp before the body is
 * read; `verifySignature` (the handler's first step) checks the signature over the body's bytes
 * before anything parses them. Both fail as a wrong password does: the same 401, the same floor,
 * counted by the throttle. Every refusal is thrown by `fail`, as an AuthRefusal carrying its reason.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyRequest } from 'fastify';
import { hashScrypt, sameSecret } from '../../api/verifiers.js';
import { parseBasicAuth, soleHeader } from './basic-auth.js';
import { KnownSenders } from './known-senders.js';
import { metricsTarget, webhookTarget, type AuthThrottle, type GuardTarget } from './auth-throttle.js';
import type { VerifiedCache } from '../routing/credentials.js';
import { includesBasic } from '../../api/signatures.js';
import {
  AuthRefusal,
  authThrottled,
  suspended,
  unauthorized,
  unauthorizedApiKey,
  type AuthFailureReason,
} from '../core/errors.js';
import { readSignedHeaders, signatureMatches, type SignedHeaders } from './signature-check.js';
import type { Endpoint, IngesterMetrics } from '../core/ingester-metrics.js';
import type { RouteEntry, RouteTable } from '../routing/route-table.js';

export interface AuthenticatorOptions {
  routes: () => RouteTable;
  throttle: AuthThrottle;
  metrics: IngesterMetrics;
  verified: VerifiedCache;
  /** Least time before a 401 for wrong credentials is answered (0: no floor, failures answer at once). */
  failureDelayMs: number;
}

/** What onRequest established for a webhook request. */
export interface WebhookAuthentication {
  entry: RouteEntry;
  /** A signed integration's headers: the request is not authenticated until verifySignature checks them against the body. */
  signed?: SignedHeaders;
  /**
   * No credential has been checked yet (mode `signature`): the body is read before the sender is
   * known, so it is charged to the budgets for unauthenticated bodies, never to the tenant's.
   */
  unauthenticated?: boolean;
}

export class Authenticator {
  /** Recent duration of slow checks: the largest, decaying by 5% per check. */
  private slowCheckMs = 0;
  private calibrated = false;
  /** Addresses whose signatures held recently, per integration: their bodies get a lane of their own. */
  readonly knownSenders = new KnownSenders();
  /** Per connection (its socket), the last Authorization header and its key: headerKeyOf. */
  private readonly lastHeaders = new WeakMap<object, { name: string; header: string; key: string }>();

  constructor(private readonly options: AuthenticatorOptions) {}

  /**
   * Seeds the floor with one check at the operator's parameters, so that failures soon after
   * startup already wait as long as a scrypt check takes on this machine. Only once some route
   * has a scrypt credential: without one there is no slow check to hide, and a scrypt check
   * briefly takes 32 MiB of memory.
   */
  private calibrate(table: RouteTable): void {
    if (this.calibrated || this.options.failureDelayMs === 0 || !table.hasSlowCredentials) return;
    this.calibrated = true;
    const started = performance.now();
    hashScrypt('calibration', Buffer.alloc(16)).then(
      () => (this.slowCheckMs = Math.max(this.slowCheckMs, performance.now() - started)),
      () => {},
    );
  }

  /**
   * The integration named in the URL: its Basic credentials (modes basic, basic+signature) and its
   * signature headers (signature, basic+signature). Answers, resolves, or throws the refusal
   * (synchronously or as a rejection: callers await it). A sender whose exact Authorization
   * header verified before (knownBasic) is answered without a promise, as most requests are.
   */
  webhook(req: FastifyRequest, name: string): WebhookAuthentication | Promise<WebhookAuthentication> {
    const startedMs = performance.now();
    const table = this.options.routes();
    const published = table.webhook(name);
    // An unknown name has no pair of its own in the guard (nothing to guess there): its failures
    // count against the address alone, and it is refused as a wrong password is, by the Basic check.
    const target = published ? webhookTarget(name) : undefined;
    this.refuseBlocked(req, target);
    if (!includesBasic(published?.mode ?? 'basic'))
      return this.afterBasic(req, published as RouteEntry, false, startedMs, target);
    const known = this.knownBasic(req, table, name);
    if (known) return this.afterBasic(req, known, true, startedMs, target);
    return this.basic(req, table, name, target, startedMs).then((entry) =>
      this.afterBasic(req, entry, true, startedMs, target),
    );
  }

  /** Past the Basic check (or without one): an unsigned integration is accepted, a signed one's headers are read. */
  private afterBasic(
    req: FastifyRequest,
    entry: RouteEntry,
    basicChecked: boolean,
    startedMs: number,
    target: GuardTarget,
  ): WebhookAuthentication | Promise<never> {
    if (!entry.signature) return { entry: this.accept(req, entry) };
    const signed = readSignedHeaders(entry.signature.rule, req.raw.rawHeaders, Date.now());
    if (typeof signed === 'string') return this.fail(req, 'events', signed, startedMs, target);
    return basicChecked ? { entry, signed } : { entry, signed, unauthenticated: true };
  }

  /**
   * The first step of `basic`, alone: the integration, if this exact Authorization header verified
   * against one of its fast credentials before (RouteTable.knownHeader); else undefined, and the
   * full check decides.
   */
  private knownBasic(req: FastifyRequest, table: RouteTable, name: string): RouteEntry | undefined {
    if (table.isSlowToVerify(name)) return undefined;
    const header = soleHeader(req.raw.rawHeaders, 'authorization');
    return header === undefined ? undefined : table.knownHeader(this.headerKeyOf(req, table, name, header));
  }

  /** The signature over the body's exact bytes, before anything parses them; resolves to the route or throws. */
  async verifySignature(
    req: FastifyRequest,
    entry: RouteEntry,
    signed: SignedHeaders,
    body: Buffer,
  ): Promise<RouteEntry> {
    const startedMs = performance.now();
    if (!signatureMatches(entry.signature!, signed, body, Date.now()))
      return this.fail(req, 'events', 'signature_invalid', startedMs, webhookTarget(entry.name));
    const accepted = this.accept(req, entry);
    this.knownSenders.remember(req.ip, entry.name);
    return accepted;
  }

  /**
   * A signed integration's body that never arrived whole before its signature could be checked
   * (too slow, timed out, abandoned): counted against the address and integration as a failed
   * login is, so a sender that holds uploads open without ever proving itself ends up blocked.
   */
  async chargeIncompleteBody(req: FastifyRequest, entry: RouteEntry): Promise<void> {
    this.options.metrics.authFailures.inc({ endpoint: 'events', reason: 'body_incomplete' });
    await this.options.throttle.recordFailure(req.ip, webhookTarget(entry.name));
  }

  /**
   * Basic credentials against the integration; resolves to its route or throws. An integration
   * whose credentials are all digests (no scrypt, so the throttle charges nothing up front) first
   * looks the exact header up among those that verified before (RouteTable.knownHeader): a hit
   * is a success, anything else takes the full check below, so failures keep their path and floor.
   */
  private async basic(
    req: FastifyRequest,
    table: RouteTable,
    name: string,
    target: GuardTarget,
    startedMs: number,
  ): Promise<RouteEntry> {
    const header = soleHeader(req.raw.rawHeaders, 'authorization');
    const charged = table.isSlowToVerify(name);
    const headerKey = header === undefined || charged ? undefined : this.headerKeyOf(req, table, name, header);
    if (headerKey !== undefined) {
      const known = table.knownHeader(headerKey);
      if (known) return known;
    }
    const creds = parseBasicAuth(header);
    if (!creds) return this.fail(req, 'events', 'missing', startedMs, target);
    this.calibrate(table);
    const { throttle } = this.options;
    // A suspect address (too many failures across integrations) may start no slow check again
    // for an integration it already tried: only a credential verified recently, from the cache,
    // is accepted there (auth-throttle.ts maySlowCheck).
    let cachedOnly = false;
    if (charged) {
      const maySlowCheck = throttle.maySlowCheck(req.ip, target as string);
      await throttle.recordFailure(req.ip, target);
      const blocked = throttle.blockedFor(req.ip, target);
      if (blocked > 0) throw authThrottled(blocked);
      cachedOnly = !maySlowCheck;
    }
    const checkStartedMs = performance.now();
    const entry = await table.authenticateWebhook(
      name,
      creds.username,
      creds.password,
      this.options.verified,
      Date.now(),
      headerKey,
      cachedOnly,
    );
    if (charged && !cachedOnly)
      this.slowCheckMs = Math.max(performance.now() - checkStartedMs, this.slowCheckMs * 0.95);
    if (!entry) return this.fail(req, 'events', 'invalid', startedMs, target, charged);
    if (charged) await throttle.refund(req.ip, target);
    return entry;
  }

  /**
   * RouteTable.headerKey, remembered per connection for the last header it carried: a keep-alive
   * sender repeats the same Authorization header on every request, and its digest was the largest
   * part of a known sender's check. The header is kept only as long as its connection, never in a
   * table; it is compared in constant time, since a proxy's connection may carry several senders'.
   */
  private headerKeyOf(req: FastifyRequest, table: RouteTable, name: string, header: string): string {
    const socket = req.raw.socket as object | null | undefined;
    const last = socket ? this.lastHeaders.get(socket) : undefined;
    if (last !== undefined && last.name === name && sameSecret(last.header, header)) return last.key;
    const key = table.headerKey(name, header);
    if (socket) this.lastHeaders.set(socket, { name, header, key });
    return key;
  }

  /**
   * `apiKey: <key>` header, or Basic `<username>:<key>`; resolves to the key's route or throws.
   * Failures are charged to the address and the identity the attempt names (the key's namespace,
   * or its username's: RouteTable.apiKeyIdentity), so wrong keys for one tenant from a shared
   * egress never block another tenant's key; one naming nothing published, to the address alone.
   */
  async apiKey(req: FastifyRequest): Promise<RouteEntry> {
    const startedMs = performance.now();
    const table = this.options.routes();
    const header = req.headers.apikey;
    if (header !== undefined) {
      if (typeof header !== 'string' || header === '')
        return this.fail(req, 'metrics', 'missing', startedMs, undefined);
      const key = header.trim();
      const target = identityTarget(table.apiKeyIdentity(key, undefined));
      this.refuseBlocked(req, target);
      // A key naming no identity has no pair to block it: from a suspect address it is not even
      // looked up, so a key chosen without the `<namespace>_` prefix cannot be guessed there
      // without bound. Its answer is a suspect's failure, the same as a wrong key's.
      if (target === undefined && this.options.throttle.suspectFor(req.ip) > 0)
        return this.fail(req, 'metrics', 'invalid', startedMs, undefined);
      const entry = table.authenticateApiKey(key, undefined);
      if (!entry) return this.fail(req, 'metrics', 'invalid', startedMs, target);
      return this.accept(req, entry, target);
    }
    const creds = parseBasicAuth(soleHeader(req.raw.rawHeaders, 'authorization'));
    if (!creds) return this.fail(req, 'metrics', 'missing', startedMs, undefined);
    const target = identityTarget(table.apiKeyIdentity(creds.password, creds.username));
    this.refuseBlocked(req, target);
    const entry = table.authenticateApiKey(creds.password, creds.username);
    if (!entry) return this.fail(req, 'metrics', 'invalid', startedMs, target);
    return this.accept(req, entry, target);
  }

  /** The pair (address, target) is blocked: 429 whatever the request carries. */
  private refuseBlocked(req: FastifyRequest, target: GuardTarget): void {
    const wait = this.options.throttle.blockedFor(req.ip, target);
    if (wait > 0) throw authThrottled(wait);
  }

  /**
   * Right credentials: still refused if the pair got blocked meanwhile, or the route is suspended.
   * Either way the request proved them: its refusal is the tenant's to read (activity).
   */
  private accept(req: FastifyRequest, entry: RouteEntry, target: GuardTarget = webhookTarget(entry.name)): RouteEntry {
    req.authenticated = true;
    this.refuseBlocked(req, target);
    if (entry.suspended)
      throw suspended(entry.kind, entry.kind === 'ApiKey' ? `${entry.namespace}/${entry.name}` : entry.name);
    return entry;
  }

  /**
   * Every authentication refusal: counted, charged to the address and target, held to the floor, thrown with
   * its reason. Missing credentials too: a signed integration cannot tell "no credentials" before
   * it has waited, so an unknown name answered at once would say that it does not exist (a
   * client that sends credentials only after a 401 challenge waits the floor once per request).
   */
  private async fail(
    req: FastifyRequest,
    endpoint: Endpoint,
    reason: AuthFailureReason,
    startedMs: number,
    target: GuardTarget,
    alreadyCharged = false,
  ): Promise<never> {
    this.options.metrics.authFailures.inc({ endpoint, reason });
    const blocked = alreadyCharged
      ? this.options.throttle.answerBlockedFor(req.ip, target)
      : await this.options.throttle.recordFailure(req.ip, target);
    if (this.options.failureDelayMs > 0) {
      const wait = Math.max(this.options.failureDelayMs, this.slowCheckMs * 1.25) - (performance.now() - startedMs);
      if (wait > 0) await sleep(wait);
    }
    if (blocked > 0) throw new AuthRefusal(reason, authThrottled(blocked));
    throw new AuthRefusal(reason, endpoint === 'events' ? unauthorized() : unauthorizedApiKey());
  }
}

const identityTarget = (identity: string | undefined): GuardTarget =>
  identity === undefined ? undefined : metricsTarget(identity);
