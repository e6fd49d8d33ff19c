/**
 * The routing table: what the ingester knows about published integrations and API keys. A new set
 * of routes (the file reloaded, the first list of route Secrets) builds a new table, swapped in by
 * one reference, so a request sees either the old table or the new one, never a mix. A change to
 * single routes (a route Secret updated, created or deleted) is applied in place, synchronously,
 * to that route's entries only (apply): a request sees each route before or after its change.
 */
import { namespaceOfDestination } from '../../api/destination-document.js';
import {
  MappingError,
  type CompiledMapping,
  type ExpressionRunner,
  type MappingLimits,
} from '../../api/mapping/mapping-model.js';
import { mappingEngine } from '../../api/mapping/mapping-engine-loader.js';
import { defaultOverLimitStatus, type OverLimitStatus, type RouteLimits } from '../../api/limits.js';
import type { AuthenticationMode, Route, RouteKind } from '../../api/route.js';
import { setImmediate } from 'node:timers/promises';
import { CompiledRules } from '../../api/routing-rules.js';
import { DEFAULT_INSPECT_REQUESTS } from '../../api/inspector.js';
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
  /** WebhookIntegration with the event inspector enabled: how many of its last requests are kept. */
  readonly inspectRequests?: number;
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

/**
 * A change to one route document (Kubernetes mode: one Secret), by its source: the route it holds
 * now, or none when the document was deleted or cannot be parsed (then it is in `unparsable`).
 */
export interface RouteChange {
  source: string;
  input?: RouteInput;
}

/** What RouteTable.apply did: the entries it took out and put in, and the changes it could not use. */
export interface AppliedChanges {
  removed: RouteEntry[];
  added: RouteEntry[];
  skipped: SkippedRoute[];
}

/** Routes compiled between two turns of the event loop in buildInSteps (about 20-50 ms on a busy core). */
const BUILD_STEP = 500;

/** At most this many remembered Authorization headers per table (rememberHeader); then it starts over. */
const KNOWN_HEADERS_KEPT = 10_000;

/** The namespaces whose API keys share one Basic username (apiKeyIdentity). */
interface UsernameNamespaces {
  /** One namespace per key credential with this username (a namespace may repeat). */
  readonly namespaces: string[];
  /** The identity: the distinct namespaces, sorted, comma-joined. */
  identity: string;
}

export class RouteTable {
  private readonly webhooks = new Map<string, RouteEntry>();
  private readonly apiKeys = new Map<string, { entry: RouteEntry; credential: CompiledCredential }>();
  /** The entry each source (file position, Secret) placed in the table: what an update replaces. */
  private readonly bySource = new Map<string, RouteEntry>();
  /**
   * Authorization headers that verified against a fast (digest) credential of an integration, by
   * the SHA-256 of the integration's name and the header (never the header itself); a header is
   * honoured only while the entry it verified against is still the one published. See knownHeader.
   */
  private readonly knownHeaders = new Map<string, { entry: RouteEntry; credential: CompiledCredential }>();
  /** API keys published per namespace: the identity a key `<namespace>_<random>` names. */
  private readonly apiKeyNamespaces = new Map<string, number>();
  /** By API key username (SHA-256, hex): the identity it names. */
  private readonly apiKeyUsernames = new Map<string, UsernameNamespaces>();
  private apiKeyEntries = 0;
  private slowWebhooks = 0;
  /** Integrations with the event inspector enabled (the delivery path asks nothing while there are none). */
  private inspectedWebhooks = 0;
  /**
   * Routes skipped because another route had published their integration name or API key first:
   * while there are any, a change is applied by a full build, so that a freed name goes to the
   * route the source lists first, as it would after a restart.
   */
  private conflicts = 0;

  /** Use build or buildInSteps. */
  private constructor(private readonly options: BuildOptions) {}

  static empty(): RouteTable {
    return new RouteTable({ allowPlaintext: false });
  }

  /**
   * Builds a table from validated routes. A route that cannot be used (an integration name taken
   * twice, an API key verified by a slow hash) is skipped and reported, never fatal.
   */
  static build(inputs: readonly RouteInput[], options: BuildOptions): { table: RouteTable; skipped: SkippedRoute[] } {
    const table = new RouteTable(options);
    const skipped: SkippedRoute[] = [];
    for (const input of inputs) table.add(input, skipped);
    return { table, skipped };
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
    const table = new RouteTable(options);
    const skipped: SkippedRoute[] = [];
    for (let i = 0; i < inputs.length; i++) {
      if (i > 0 && i % step === 0) await setImmediate();
      table.add(inputs[i] as RouteInput, skipped);
    }
    return { table, skipped };
  }

  /**
   * Applies changes to single routes in place: each one takes out the entry its source had placed
   * and puts in the new one, and nothing else in the table is touched, so an update costs the
   * same with 10 routes or 20,000. Synchronous: a request sees a route before or after its change.
   * Undefined when a change cannot be applied alone (an integration name or API key published by
   * another route, or routes waiting for a name that was taken): build the whole table instead.
   */
  apply(changes: readonly RouteChange[]): AppliedChanges | undefined {
    if (this.conflicts > 0) return undefined;
    const applied: AppliedChanges = { removed: [], added: [], skipped: [] };
    for (const { source, input } of changes) {
      const old = this.bySource.get(source);
      const compiled = input ? this.compileInput(input) : undefined;
      const entry = compiled && 'entry' in compiled ? compiled.entry : undefined;
      if (entry && this.takenByAnother(entry, old)) return undefined;
      if (old) {
        this.unplace(old);
        this.bySource.delete(source);
        applied.removed.push(old);
      }
      if (entry) {
        this.place(entry);
        this.bySource.set(source, entry);
        applied.added.push(entry);
      }
      if (compiled && 'skipped' in compiled) applied.skipped.push(compiled.skipped);
    }
    return applied;
  }

  /** Every route in the table once (for the per-tenant limiter). */
  *entries(): IterableIterator<RouteEntry> {
    yield* this.bySource.values();
  }

  /** Whether any integration enables the event inspector. */
  get inspects(): boolean {
    return this.inspectedWebhooks > 0;
  }

  get size(): { webhooks: number; apiKeys: number } {
    return { webhooks: this.webhooks.size, apiKeys: this.apiKeyEntries };
  }

  /** Whether any integration is checked with a slow hash (scrypt). */
  get hasSlowCredentials(): boolean {
    return this.slowWebhooks > 0;
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
   * floor); an update of the integration (a rotated password) makes what it remembered void.
   */
  knownHeader(headerKey: string, nowMs = Date.now()): RouteEntry | undefined {
    const known = this.knownHeaders.get(headerKey);
    if (!known || this.webhooks.get(known.entry.name) !== known.entry) return undefined;
    return known.credential.validAt(nowMs) ? known.entry : undefined;
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
    if (username !== undefined) return this.apiKeyUsernames.get(sha256(username).toString('hex'))?.identity;
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

  /** Checks and compiles one route (reusing an entry compiled before for the same route object). */
  private compileInput({ source, route }: RouteInput): { entry: RouteEntry } | { skipped: SkippedRoute } {
    const { options } = this;
    const problem = unusable(route, options.allowPlaintext) ?? unknownDestination(route, options.destinations ?? []);
    if (problem) return { skipped: { source, reason: problem } };
    try {
      const known = options.compiled?.get(route);
      const entry = known ?? compile(route, options.mappingLimits, options.destinations ?? [], options.mappingRunner);
      if (!known) options.compiled?.set(route, entry);
      return { entry };
    } catch (err) {
      return {
        skipped: {
          source,
          reason: err instanceof MappingError ? `mapping: ${err.describe()}` : (err as Error).message,
        },
      };
    }
  }

  /** A full build's step: the route placed, or skipped with its reason. */
  private add(input: RouteInput, skipped: SkippedRoute[]): void {
    const compiled = this.compileInput(input);
    if ('skipped' in compiled) {
      skipped.push(compiled.skipped);
      return;
    }
    const { entry } = compiled;
    if (this.takenByAnother(entry, undefined)) {
      this.conflicts++;
      skipped.push({
        source: input.source,
        reason:
          entry.kind === 'WebhookIntegration'
            ? `integration name ${entry.name} is already published`
            : `API key of ${entry.namespace}/${entry.name} is already published by another route`,
      });
      return;
    }
    this.place(entry);
    this.bySource.set(input.source, entry);
  }

  /** Whether another entry than `own` holds the entry's integration name or one of its API keys. */
  private takenByAnother(entry: RouteEntry, own: RouteEntry | undefined): boolean {
    if (entry.kind === 'WebhookIntegration') {
      const holder = this.webhooks.get(entry.name);
      return holder !== undefined && holder !== own;
    }
    return entry.credentials.some((c) => {
      const holder = this.apiKeys.get(c.secretDigestHex as string);
      return holder !== undefined && holder.entry !== own;
    });
  }

  private place(entry: RouteEntry): void {
    if (entry.kind === 'WebhookIntegration') {
      this.webhooks.set(entry.name, entry);
      if (entry.credentials.some((c) => c.isSlow)) this.slowWebhooks++;
      if (entry.inspectRequests !== undefined) this.inspectedWebhooks++;
      return;
    }
    this.apiKeyEntries++;
    for (const credential of entry.credentials) {
      this.apiKeys.set(credential.secretDigestHex as string, { entry, credential });
      this.apiKeyNamespaces.set(entry.namespace, (this.apiKeyNamespaces.get(entry.namespace) ?? 0) + 1);
      const username = credential.usernameDigest.toString('hex');
      const known = this.apiKeyUsernames.get(username);
      if (known) {
        known.namespaces.push(entry.namespace);
        known.identity = identityOf(known.namespaces);
      } else this.apiKeyUsernames.set(username, { namespaces: [entry.namespace], identity: entry.namespace });
    }
  }

  private unplace(entry: RouteEntry): void {
    if (entry.kind === 'WebhookIntegration') {
      if (this.webhooks.get(entry.name) !== entry) return;
      this.webhooks.delete(entry.name);
      if (entry.credentials.some((c) => c.isSlow)) this.slowWebhooks--;
      if (entry.inspectRequests !== undefined) this.inspectedWebhooks--;
      return;
    }
    this.apiKeyEntries--;
    for (const credential of entry.credentials) {
      const key = credential.secretDigestHex as string;
      if (this.apiKeys.get(key)?.entry === entry) this.apiKeys.delete(key);
      const count = (this.apiKeyNamespaces.get(entry.namespace) ?? 1) - 1;
      if (count > 0) this.apiKeyNamespaces.set(entry.namespace, count);
      else this.apiKeyNamespaces.delete(entry.namespace);
      const username = credential.usernameDigest.toString('hex');
      const known = this.apiKeyUsernames.get(username);
      if (!known) continue;
      known.namespaces.splice(known.namespaces.indexOf(entry.namespace), 1);
      if (known.namespaces.length === 0) this.apiKeyUsernames.delete(username);
      else known.identity = identityOf(known.namespaces);
    }
  }
}

/** The distinct namespaces, sorted, comma-joined. */
const identityOf = (namespaces: readonly string[]): string => [...new Set(namespaces)].sort().join(',');

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
 * A route naming a platform destination this ingester does not have, or another namespace's
 * destination, in its destinations or in a routing rule (then naming the rule); undefined when
 * every name is known.
 */
export function unknownDestination(route: Route, destinations: readonly KnownDestination[]): string | undefined {
  const problem = (named: readonly string[]): string | undefined => {
    const foreign = named.filter((name) => {
      const owner = namespaceOfDestination(name);
      return owner !== undefined && owner !== route.namespace;
    });
    if (foreign.length > 0) return `destinations of another namespace: ${foreign.join(', ')}`;
    // The namespace's own destinations come and go while running (Destination resources): an
    // event for one this replica does not have yet waits for it (outbox) or is not taken (bus).
    const unknown = named.filter(
      (name) => namespaceOfDestination(name) === undefined && !destinations.some((d) => d.name === name),
    );
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
    entry = { ...entry, mapping: mappingEngine().compileMapping(route.mapping, mappingLimits, runner) };
  if (route.authentication?.signature && route.authentication.mode !== 'basic')
    entry = { ...entry, signature: compileSignature(route.authentication.signature) };
  if (route.inspect?.enabled === true && route.kind === 'WebhookIntegration')
    entry = { ...entry, inspectRequests: route.inspect.requests ?? DEFAULT_INSPECT_REQUESTS };
  return route.limits?.maxSeries !== undefined ? { ...entry, maxSeries: route.limits.maxSeries } : entry;
}
