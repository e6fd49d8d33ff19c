/**
 * The routing table: what the ingester knows about published integrations and API keys. It is
 * immutable once built; a reload builds a new table and swaps one reference, so a request sees
 * either the old table or the new one, never a mix.
 */
import {
  compileMapping,
  MappingError,
  type CompiledMapping,
  type ExpressionRunner,
  type MappingLimits,
} from '../../api/mapping/engine.js';
import { defaultOverLimitStatus, type OverLimitStatus, type RouteLimits } from '../../api/limits.js';
import type { AuthenticationMode, Route, RouteKind } from '../../api/route.js';
import { setImmediate } from 'node:timers/promises';
import { CompiledRules } from '../../api/routing-rules.js';
import { sha256, sha256Base64 } from '../../api/verifiers.js';
import { CompiledCredential, type VerifiedCache } from './credentials.js';
import { compileSignature, type CompiledSignature } from './signing-secrets.js';

export interface RouteEntry {
  readonly kind: RouteKind;
  readonly name: string;
  readonly namespace: string;
  readonly suspended: boolean;
  readonly maxSeries?: number;
  /** The route's effective limits as published (absent fields: the ingester's defaults; limits/tenant-limiter.ts). */
  readonly limits: RouteLimits;
  /** The status of a refusal over a limit (429, or 503 for senders that retry only 5xx). */
  readonly overLimitStatus: OverLimitStatus;
  readonly credentials: readonly CompiledCredential[];
  /** WebhookIntegration: Basic credentials, a signature, or both (basic for an ApiKey). */
  readonly mode: AuthenticationMode;
  /** Present when the mode includes signature: checked over the body before it is parsed. */
  readonly signature?: CompiledSignature;
  /** The payload mapping, compiled when the table is built (never per request). */
  readonly mapping?: CompiledMapping;
  /** WebhookIntegration: the destinations its events are delivered to (named, else the defaults). */
  readonly destinations: readonly string[];
  /** WebhookIntegration with routing rules: they decide per event, `destinations` being where unmatched events go. */
  readonly rules?: CompiledRules;
}

/** What the table needs of a configured destination (destinations/settings.ts DestinationSettings). */
export interface KnownDestination {
  readonly name: string;
  /** Integrations that name no destinations are delivered to every default destination. */
  readonly default: boolean;
}

/** An integration's destinations: the ones it names, else every default destination. */
export function destinationsFor(named: readonly string[] | undefined, all: readonly KnownDestination[]): string[] {
  if (named && named.length > 0) return [...named];
  return all.filter((d) => d.default).map((d) => d.name);
}

export interface SkippedRoute {
  source: string;
  reason: string;
}

export interface RouteInput {
  /** Where the document came from (file position or Secret name), for logs. */
  source: string;
  route: Route;
}

export interface BuildOptions {
  allowPlaintext: boolean;
  mappingLimits?: MappingLimits;
  mappingRunner?: ExpressionRunner;
  destinations?: readonly KnownDestination[];
  /**
   * Entries compiled by earlier builds with these same options, by route object: a route the
   * source hands over again unchanged (the same object) is not compiled again. Only the
   * compiled form is shared; each table keeps its own maps and remembers no header.
   */
  compiled?: WeakMap<Route, RouteEntry>;
}

/** Routes compiled between two turns of the event loop in buildInSteps (about 20-50 ms on a busy core). */
const BUILD_STEP = 500;

/** At most this many remembered Authorization headers per table (rememberHeader); then it starts over. */
const KNOWN_HEADERS_KEPT = 10_000;

export class RouteTable {
  /** Whether any integration is checked with a slow hash (scrypt). */
  readonly hasSlowCredentials: boolean;
  /**
   * Authorization headers that verified against a fast (digest) credential of an integration, by
   * the SHA-256 of the integration's name and the header (never the header itself): the only
   * mutable part of a table, and it starts empty with every reload. See knownHeader.
   */
  private readonly knownHeaders = new Map<string, { entry: RouteEntry; credential: CompiledCredential }>();

  /** Namespaces that publish an API key: the identity a key `<namespace>_<random>` names. */
  private readonly apiKeyNamespaces = new Set<string>();
  /** API key usernames (by SHA-256, hex) and the identity they name: their namespace(s), sorted, comma-joined. */
  private readonly apiKeyUsernames = new Map<string, string>();

  /** Use build or buildInSteps (TableBuilder). */
  constructor(
    private readonly webhooks: ReadonlyMap<string, RouteEntry>,
    private readonly apiKeys: ReadonlyMap<string, { entry: RouteEntry; credential: CompiledCredential }>,
  ) {
    this.hasSlowCredentials = [...webhooks.values()].some((e) => e.credentials.some((c) => c.isSlow));
    const namespacesByUsername = new Map<string, Set<string>>();
    for (const { entry, credential } of apiKeys.values()) {
      this.apiKeyNamespaces.add(entry.namespace);
      const username = credential.usernameDigest.toString('hex');
      const namespaces = namespacesByUsername.get(username) ?? new Set<string>();
      namespacesByUsername.set(username, namespaces.add(entry.namespace));
    }
    for (const [username, namespaces] of namespacesByUsername)
      this.apiKeyUsernames.set(username, [...namespaces].sort().join(','));
  }

  static empty(): RouteTable {
    return new RouteTable(new Map(), new Map());
  }

  /**
   * Builds a table from validated routes. A route that cannot be used (an integration name taken
   * twice, an API key verified by a slow hash) is skipped and reported, never fatal.
   */
  static build(inputs: readonly RouteInput[], options: BuildOptions): { table: RouteTable; skipped: SkippedRoute[] } {
    const builder = new TableBuilder(options);
    for (const input of inputs) builder.add(input);
    return builder.finish();
  }

  /**
   * The same as build, giving the event loop a turn every `step` routes: with 20,000 routes the
   * process keeps answering /healthz (and refusing ingest requests with 503) while it builds.
   */
  static async buildInSteps(
    inputs: readonly RouteInput[],
    options: BuildOptions,
    step = BUILD_STEP,
  ): Promise<{ table: RouteTable; skipped: SkippedRoute[] }> {
    const builder = new TableBuilder(options);
    for (let i = 0; i < inputs.length; i++) {
      if (i > 0 && i % step === 0) await setImmediate();
      builder.add(inputs[i] as RouteInput);
    }
    return builder.finish();
  }

  /** Every route in the table once (for the per-tenant limiter). */
  *entries(): IterableIterator<RouteEntry> {
    yield* this.webhooks.values();
    yield* new Set([...this.apiKeys.values()].map((v) => v.entry));
  }

  get size(): { webhooks: number; apiKeys: number } {
    return { webhooks: this.webhooks.size, apiKeys: new Set([...this.apiKeys.values()].map((v) => v.entry)).size };
  }

  /** Whether checking credentials for this integration may run a slow hash (scrypt). */
  isSlowToVerify(name: string): boolean {
    return this.webhooks.get(name)?.credentials.some((c) => c.isSlow) ?? false;
  }

  /** The integration published under `name` (for replaying dead-lettered payloads). */
  webhook(name: string): RouteEntry | undefined {
    return this.webhooks.get(name);
  }

  /** Checks Basic credentials against an integration. Unknown name and wrong password look the same. */
  async authenticateWebhook(
    name: string,
    username: string,
    password: string,
    cache: VerifiedCache,
    nowMs = Date.now(),
    headerKey?: string,
    /** Slow credentials only from the cache of recent successes, never hashed now (a suspect address: auth/auth-throttle.ts). */
    cachedOnly = false,
  ): Promise<RouteEntry | undefined> {
    const entry = this.webhooks.get(name);
    const usernameDigest = sha256(username);
    const passwordDigest = sha256(password);
    if (!entry) return undefined;
    for (const credential of entry.credentials) {
      if (!credential.validAt(nowMs)) continue;
      const ok = credential.isSlow
        ? await credential.verifySlow(usernameDigest, password, cache, cachedOnly)
        : credential.verifyFast(usernameDigest, passwordDigest);
      if (!ok) continue;
      if (headerKey !== undefined && !credential.isSlow) this.rememberHeader(headerKey, entry, credential);
      return entry;
    }
    return undefined;
  }

  /** The key of an Authorization header sent to integration `name`: a digest, so the header is never kept. */
  headerKey(name: string, header: string): string {
    return sha256Base64(`${name}\0${header}`);
  }

  /**
   * The integration, if this exact Authorization header (by headerKey) verified against one of its
   * fast credentials before and that credential is still valid now: a repeat sender's Basic check
   * is one digest and a look-up instead of decoding the header and two digests. Only successes
   * are remembered, so a wrong or unknown header always takes the full check (and the failure
   * floor); a reload builds a new table, which remembers nothing.
   */
  knownHeader(headerKey: string, nowMs = Date.now()): RouteEntry | undefined {
    const known = this.knownHeaders.get(headerKey);
    return known && known.credential.validAt(nowMs) ? known.entry : undefined;
  }

  private rememberHeader(headerKey: string, entry: RouteEntry, credential: CompiledCredential): void {
    if (this.knownHeaders.size >= KNOWN_HEADERS_KEPT) this.knownHeaders.clear();
    this.knownHeaders.set(headerKey, { entry, credential });
  }

  /**
   * Whom an API key attempt is for, as the brute-force guard keys it (auth/auth-throttle.ts), known
   * before and whatever the key's check says: with Basic, the namespace whose keys have that
   * username (several namespaces sharing a username share one identity); with header `apiKey`,
   * the namespace the key names (`<namespace>_<random>`, as the operator generates it) when that
   * namespace publishes a key. Undefined when it names nothing published: counted against the
   * address alone, as an unknown integration name is. Never the key itself.
   */
  apiKeyIdentity(key: string, username: string | undefined): string | undefined {
    if (username !== undefined) return this.apiKeyUsernames.get(sha256(username).toString('hex'));
    const cut = key.indexOf('_');
    const namespace = cut > 0 ? key.slice(0, cut) : undefined;
    return namespace !== undefined && this.apiKeyNamespaces.has(namespace) ? namespace : undefined;
  }

  /** Finds the API key in O(1) by its digest; with Basic credentials the username must match too. */
  authenticateApiKey(key: string, username: string | undefined, nowMs = Date.now()): RouteEntry | undefined {
    const keyDigest = sha256(key);
    const found = this.apiKeys.get(keyDigest.toString('hex'));
    if (!found || !found.credential.validAt(nowMs)) return undefined;
    if (username !== undefined && !found.credential.verifyFast(sha256(username), keyDigest)) return undefined;
    return found.entry;
  }
}

/** Adds routes one at a time (RouteTable.build, RouteTable.buildInSteps). */
class TableBuilder {
  private readonly destinations: readonly KnownDestination[];
  private readonly webhooks = new Map<string, RouteEntry>();
  private readonly apiKeys = new Map<string, { entry: RouteEntry; credential: CompiledCredential }>();
  private readonly skipped: SkippedRoute[] = [];

  constructor(private readonly options: BuildOptions) {
    this.destinations = options.destinations ?? [];
  }

  add({ source, route }: RouteInput): void {
    const { options, skipped } = this;
    const problem = unusable(route, options.allowPlaintext) ?? unknownDestination(route, this.destinations);
    if (problem) {
      skipped.push({ source, reason: problem });
      return;
    }
    let entry: RouteEntry;
    try {
      const known = options.compiled?.get(route);
      entry = known ?? compile(route, options.mappingLimits, this.destinations, options.mappingRunner);
      if (!known) options.compiled?.set(route, entry);
    } catch (err) {
      skipped.push({
        source,
        reason: err instanceof MappingError ? `mapping: ${err.describe()}` : (err as Error).message,
      });
      return;
    }
    if (entry.kind === 'WebhookIntegration') {
      if (this.webhooks.has(entry.name)) {
        skipped.push({ source, reason: `integration name ${entry.name} is already published` });
        return;
      }
      this.webhooks.set(entry.name, entry);
      return;
    }
    const keys = entry.credentials.map((c) => c.secretDigestHex as string);
    if (keys.some((key) => this.apiKeys.has(key))) {
      skipped.push({
        source,
        reason: `API key of ${entry.namespace}/${entry.name} is already published by another route`,
      });
      return;
    }
    entry.credentials.forEach((credential, i) => this.apiKeys.set(keys[i] as string, { entry, credential }));
  }

  finish(): { table: RouteTable; skipped: SkippedRoute[] } {
    return { table: new RouteTable(this.webhooks, this.apiKeys), skipped: this.skipped };
  }
}

function unusable(route: Route, allowPlaintext: boolean): string | undefined {
  if (!allowPlaintext && route.credentials.some((c) => 'plain' in c.secret)) {
    return 'plaintext secrets are only allowed in standalone mode';
  }
  if (route.kind === 'ApiKey' && route.credentials.some((c) => 'scrypt' in c.secret)) {
    return 'an API key must be verified by sha256 (or plain in standalone mode): it is looked up by digest';
  }
  return undefined;
}

/**
 * A route naming a destination this ingester does not have, in its destinations or in a routing
 * rule (then naming the rule); undefined when every name is known.
 */
export function unknownDestination(route: Route, destinations: readonly KnownDestination[]): string | undefined {
  const problem = (named: readonly string[]): string | undefined => {
    const unknown = named.filter((name) => !destinations.some((d) => d.name === name));
    if (unknown.length === 0) return undefined;
    const known = destinations.map((d) => d.name);
    return `unknown destination${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (configured: ${known.length > 0 ? known.join(', ') : 'none'})`;
  };
  const own = problem(route.destinations ?? []);
  if (own) return own;
  for (const [i, rule] of (route.rules ?? []).entries()) {
    const inRule = problem(rule.destinations ?? []);
    if (inRule) return `rules[${i}]${rule.name !== undefined ? ` (rule ${rule.name})` : ''}: ${inRule}`;
  }
  return undefined;
}

/** What thousands of entries hold alike is held once: no destinations, no limits of their own. */
const NONE: readonly string[] = Object.freeze([]);
const NO_LIMITS: RouteLimits = Object.freeze({});
const shared = (names: string[]): readonly string[] => (names.length === 0 ? NONE : names);

function compile(
  route: Route,
  mappingLimits: MappingLimits | undefined,
  destinations: readonly KnownDestination[],
  runner?: ExpressionRunner,
): RouteEntry {
  let entry: RouteEntry = {
    destinations:
      route.kind === 'WebhookIntegration' ? shared(destinationsFor(route.destinations, destinations)) : NONE,
    kind: route.kind,
    name: route.name,
    namespace: route.namespace,
    suspended: route.suspended ?? false,
    credentials: route.credentials.map((c) => new CompiledCredential(c)),
    mode: route.authentication?.mode ?? 'basic',
    limits: route.limits ?? NO_LIMITS,
    overLimitStatus:
      route.limits?.overLimitStatus ??
      defaultOverLimitStatus(route.kind === 'WebhookIntegration' ? route.mapping : undefined),
  };
  if (route.rules && route.rules.length > 0 && route.kind === 'WebhookIntegration')
    entry = { ...entry, rules: new CompiledRules(route.rules, entry.destinations) };
  if (route.mapping && route.kind === 'WebhookIntegration')
    entry = { ...entry, mapping: compileMapping(route.mapping, mappingLimits, runner) };
  if (route.authentication?.signature && route.authentication.mode !== 'basic')
    entry = { ...entry, signature: compileSignature(route.authentication.signature) };
  return route.limits?.maxSeries !== undefined ? { ...entry, maxSeries: route.limits.maxSeries } : entry;
}
