/**
 * What a resource should produce, decided from cached state only (no writes): the Ready state,
 * the route to publish (or none), the credentials Secret data, and when to look again.
 */
import type { V1Secret } from '@kubernetes/client-node';
import {
  checkMapping,
  DEFAULT_MAPPING_LIMITS,
  type ExpressionRunner,
  type MappingSpec,
} from '../api/mapping/engine.js';
import {
  ROUTE_API_VERSION,
  ROUTE_SECRET_KEY,
  RouteValidationError,
  validateRoute,
  type Route,
  type RouteCredential,
} from '../api/route.js';
import { ROTATE_ANNOTATION, type ApiKey, type IntakeResource, type WebhookIntegration } from '../api/v1alpha1/types.js';
import { sha256Hex } from '../api/verifiers.js';
import { teamDestinationName } from '../api/destination-document.js';
import { DEFAULT_TENANT_LIMITS, mergeTenantLimitDefaults, type RouteLimits } from '../api/limits.js';
import type { ConditionState, ReadyState } from './conditions.js';
import {
  apiKeyLimits,
  namespaceLimits,
  webhookLimits,
  type NamespaceEffectiveLimits,
  type ResolvedLimits,
} from './limits.js';
import {
  basicAuthorization,
  generateApiKey,
  generatePassword,
  sha256Verifier,
  type ScryptVerifiers,
} from './credentials.js';
import { parseDuration } from '../common/duration.js';
import {
  credentialsSecretName,
  integrationNameOf,
  isValidIntegrationName,
  ROTATED_FOR_ANNOTATION,
  toRouteName,
} from './naming.js';
import { includesBasic, includesSignature } from '../api/signatures.js';
import { planSigning } from './signing.js';

export { ROTATED_FOR_ANNOTATION };

export interface Plan {
  ready: ReadyState;
  route?: Route;
  /** Data of the operator-generated credentials Secret (absent with secretRef or when nothing is published). */
  credentials?: { name: string; data: Record<string, string>; rotatedFor: string };
  status: Record<string, string>;
  requeueAfterMs?: number;
  /** The limits the new route carries (status.effectiveLimits); absent when no new route is published. */
  effectiveLimits?: RouteLimits;
  /** The Throttled condition, with the effective limits. */
  throttled?: ConditionState;
  /** Kubernetes Events worth emitting besides the Ready transition. */
  notices: Array<{ type: 'Normal' | 'Warning'; reason: string; message: string }>;
}

export interface PlanContext {
  publicBaseUrl: string;
  defaultMaxSeries: number;
  now: Date;
  /** The cached WebhookIntegrations that claim this one's integration name (more do no harm), for name conflicts. */
  webhooks: readonly WebhookIntegration[];
  /** The operator's credentials Secret for this resource, from the cache. */
  existingCredentials?: V1Secret;
  /** The route this resource currently publishes, from the cache. */
  existingRoute?: Route;
  /** Reads a Secret the user referenced (not cached: it carries no label of ours). */
  readSecret: (namespace: string, name: string) => Promise<V1Secret | undefined>;
  scrypt: ScryptVerifiers;
  /** Destination names the ingesters are configured with (--destinations); spec.destinations must name these or ... */
  destinations: readonly string[];
  /** ... the names of the namespace's own Destinations (which win over a platform destination of the same name). */
  teamDestinations?: readonly string[];
  /** Of those, the ones published to the ingesters (the others are delivered nothing: Ready=False says why). */
  publishedTeamDestinations?: readonly string[];
  /** Where tenants' expressions run their tests (worker processes, stopped at their limits); absent: here. */
  mappingRunner?: ExpressionRunner;
  /** The namespace's limits (cluster defaults and its IntakeQuotas); absent: the built-in defaults with defaultMaxSeries. */
  limits?: NamespaceEffectiveLimits;
}

const limitsOf = (ctx: PlanContext): NamespaceEffectiveLimits =>
  ctx.limits ??
  namespaceLimits(mergeTenantLimitDefaults(DEFAULT_TENANT_LIMITS, { apiKey: { maxSeries: ctx.defaultMaxSeries } }), []);

/** A newly planned route carries the resolved limits; a route kept as it was (the spec is not servable) keeps its own. */
function applyLimits(plan: Plan, resolved: ResolvedLimits, ctx: PlanContext): Plan {
  if (!plan.route || plan.route === ctx.existingRoute) return plan;
  plan.route.limits = resolved.route;
  plan.effectiveLimits = resolved.route;
  plan.throttled = throttledState(resolved);
  return plan;
}

/**
 * The operator does not see the ingesters' refusals, so Throttled says what it can know: True when
 * spec.limits asks for more than the namespace's quota allows (the sender will be refused earlier
 * than its owner expects). Whether requests are refused right now: intake_events_refused_total.
 */
export function throttledState(resolved: ResolvedLimits): ConditionState {
  const r = resolved.route;
  const rate =
    r.eventsPerSecond !== undefined
      ? `${r.eventsPerSecond} events/s, burst ${r.eventsBurst}`
      : `${r.dataPointsPerSecond} data points/s, burst ${r.dataPointsBurst}, ${r.maxSeries} series`;
  const inEffect = `in effect: ${rate}, over the limit answered ${r.overLimitStatus} (status.effectiveLimits)`;
  if (resolved.clamped.length > 0)
    return {
      status: 'True',
      reason: 'Clamped',
      message: `spec.limits asks for more than the namespace allows: ${resolved.clamped.join('; ')}; ${inEffect}`,
    };
  return { status: 'False', reason: 'WithinQuota', message: inEffect };
}

/** The longest Basic username a route carries (route.schema.json, credentials[].username). */
const MAX_USERNAME_CHARS = 253;

const decode = (secret: V1Secret | undefined, key: string): string | undefined => {
  const v = secret?.data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
};

const notReady = (reason: ReadyState['reason'], message: string, status: Record<string, string> = {}): Plan => ({
  ready: { status: 'False', reason, message },
  status,
  notices: [],
});

export async function planWebhook(wi: WebhookIntegration, ctx: PlanContext): Promise<Plan> {
  const name = integrationNameOf(wi);
  if (!isValidIntegrationName(name))
    return notReady('InvalidSpec', `integration name ${JSON.stringify(name)} is not valid; set spec.name`);
  const url = `${ctx.publicBaseUrl}/events/webhook_${name}`;
  let graceMs: number;
  try {
    graceMs = parseDuration(wi.spec?.credentials?.rotationGracePeriod);
  } catch (err) {
    return notReady('InvalidSpec', (err as Error).message, { integrationName: name });
  }
  const holder = nameHolder(name, ctx.webhooks);
  if (holder && holder.metadata.uid !== wi.metadata.uid) {
    return notReady(
      'NameConflict',
      `integration name ${name} is already used by ${holder.metadata.namespace}/${holder.metadata.name}`,
      { integrationName: name },
    );
  }
  const ref = wi.spec?.credentials?.secretRef?.name;
  const mapping = wi.spec?.mapping;
  if (mapping) {
    const problem = await checkMapping(mapping, DEFAULT_MAPPING_LIMITS, ctx.mappingRunner);
    if (problem)
      return invalidMapping(problem, ctx, {
        integrationName: name,
        url,
        credentialsSecret: ref ?? credentialsSecretName(wi),
      });
  }
  const destinations = wi.spec?.destinations ?? [];
  const rules = wi.spec?.rules ?? [];
  const team = ctx.teamDestinations ?? [];
  const unknown =
    unknownDestinations(destinations, ctx.destinations, team) ??
    rules
      .map((r, i) => {
        const problem = unknownDestinations(r.destinations ?? [], ctx.destinations, team);
        return problem && `rules[${i}]${r.name !== undefined ? ` (rule ${r.name})` : ''}.destinations: ${problem}`;
      })
      .find((p) => p !== undefined);
  const published = ctx.publishedTeamDestinations ?? team;
  const unpublished = [...destinations, ...rules.flatMap((r) => r.destinations ?? [])].find(
    (n) => team.includes(n) && !published.includes(n),
  );
  if (!unknown && unpublished !== undefined)
    return keepPublished(
      'DestinationNotReady',
      `the namespace's Destination ${unpublished} is not published (its Ready condition says why): its events would be delivered nowhere`,
      ctx,
      { integrationName: name, url, credentialsSecret: ref ?? credentialsSecretName(wi) },
    );
  if (unknown)
    return keepPublished(
      'UnknownDestination',
      unknown.startsWith('rules[') ? `spec.${unknown}` : `spec.destinations: ${unknown}`,
      ctx,
      {
        integrationName: name,
        url,
        credentialsSecret: ref ?? credentialsSecretName(wi),
      },
    );
  const mode = wi.spec?.authentication?.mode ?? 'basic';
  let plan = includesBasic(mode)
    ? await planWebhookCredentials(wi, ctx, name, url, ref, graceMs)
    : finish(wi, name, url, credentialsSecretName(wi), [], ctx, undefined, []);
  if (plan.route && includesSignature(mode)) plan = await withSignature(plan, wi, ctx, url);
  if (plan.route && mapping) plan.route.mapping = routeMapping(mapping);
  // The route names a team's own destination `<namespace>/<name>`, a platform one by its name.
  const resolve = (named: readonly string[]): string[] =>
    named.map((n) => (team.includes(n) ? teamDestinationName(wi.metadata.namespace as string, n) : n));
  if (plan.route && destinations.length > 0) plan.route.destinations = resolve(destinations);
  if (plan.route && rules.length > 0)
    plan.route.rules = rules.map((r) => (r.destinations ? { ...r, destinations: resolve(r.destinations) } : r));
  if (plan.route && wi.spec?.inspect?.enabled === true) plan.route.inspect = { ...wi.spec.inspect };
  return publishable(applyLimits(plan, webhookLimits(wi, limitsOf(ctx)), ctx), { integrationName: name, url });
}

/**
 * The route must pass the contract every ingester checks (api/route.ts validateRoute) before it is
 * written. The CRDs refuse what the route schema refuses (test/unit/operator/crd-route-schema.test.ts),
 * but a value can still get through: an object stored before its CRD was tightened, or what a
 * referenced Secret holds. Such a spec is Ready=False/InvalidSpec naming the field, as the other
 * specs that cannot be served, and the route is not published; otherwise the controller's write
 * would throw on every resync and the status would never say why.
 */
function publishable(plan: Plan, status: Record<string, string>): Plan {
  if (!plan.route) return plan;
  try {
    validateRoute(plan.route);
    return plan;
  } catch (err) {
    if (!(err instanceof RouteValidationError)) throw err;
    return notReady('InvalidSpec', `cannot be published: ${err.problems.map(inSpecTerms).join('; ')}`, status);
  }
}

/** A problem in the route's terms ("/authentication/signature/prefix must match ..."), in the spec's where it has them. */
const inSpecTerms = (problem: string): string =>
  problem.replace(
    /^\/(authentication|mapping|destinations|rules|limits|inspect)(\S*)/,
    (_m, field: string, rest: string) => `spec.${field}${rest.replace(/\//g, '.')}`,
  );

/**
 * Adds the signature to a planned route (modes signature and basic+signature): its settings and
 * secrets, the generated secret into the credentials Secret. A signature that cannot be published
 * (a missing referenced Secret, a bad setting) leaves the integration not Ready, as a missing password does.
 */
async function withSignature(plan: Plan, wi: WebhookIntegration, ctx: PlanContext, url: string): Promise<Plan> {
  const auth = wi.spec?.authentication ?? {};
  const mode = auth.mode ?? 'basic';
  const status = { integrationName: plan.status.integrationName as string, url };
  if (!auth.signature)
    return notReady('InvalidSpec', `spec.authentication.signature is required with mode ${mode}`, status);
  const signing = await planSigning(wi, auth.signature, {
    now: ctx.now,
    ...(ctx.existingCredentials ? { existingCredentials: ctx.existingCredentials } : {}),
    ...(ctx.existingRoute?.authentication?.signature ? { published: ctx.existingRoute.authentication.signature } : {}),
    readSecret: ctx.readSecret,
  });
  if (!signing.ok) return notReady(signing.reason, signing.message, status);
  (plan.route as Route).authentication = { mode, signature: signing.signature };
  plan.notices.push(...signing.notices);
  if (signing.generated !== undefined) {
    const name = credentialsSecretName(wi);
    plan.credentials ??= { name, data: { url }, rotatedFor: wi.metadata.annotations?.[ROTATE_ANNOTATION] ?? '' };
    plan.credentials.data.signingSecret = signing.generated;
    plan.status.credentialsSecret = name;
  } else if (!includesBasic(mode)) plan.status.credentialsSecret = auth.signature.secretRef?.name as string;
  // Look again just after a signing secret's grace period ends, to drop it.
  const expiries = signing.signature.secrets
    .map((s) => (s.notAfter ? Date.parse(s.notAfter) - ctx.now.getTime() : Infinity))
    .filter((ms) => ms > 0 && ms < Infinity);
  if (expiries.length > 0)
    plan.requeueAfterMs = Math.min(plan.requeueAfterMs ?? Infinity, Math.min(...expiries) + 1000);
  return plan;
}

/**
 * Names that are neither the platform's (configured in the ingesters) nor the namespace's own
 * Destinations, described with both; undefined when all resolve.
 */
export function unknownDestinations(
  named: readonly string[],
  configured: readonly string[],
  team: readonly string[] = [],
): string | undefined {
  const unknown = named.filter((n) => !configured.includes(n) && !team.includes(n));
  if (unknown.length === 0) return undefined;
  const own = team.length > 0 ? `; the namespace's: ${team.join(', ')}` : '';
  return `unknown destination${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (configured: ${configured.length > 0 ? configured.join(', ') : 'none'}${own})`;
}

/**
 * A mapping that does not compile or fails its tests is not published: Ready=False with the
 * JSONata error or the first difference, and the route already published (if any) stays as it is.
 */
function invalidMapping(problem: string, ctx: PlanContext, status: Record<string, string>): Plan {
  return keepPublished('InvalidMapping', `spec.mapping: ${problem}`, ctx, status);
}

/** Ready=False for a spec the ingesters cannot serve; the route already published (if any) stays as it is. */
function keepPublished(
  reason: ReadyState['reason'],
  message: string,
  ctx: PlanContext,
  status: Record<string, string>,
): Plan {
  const plan = notReady(
    reason,
    message,
    ctx.existingRoute ? status : { integrationName: status.integrationName as string, url: status.url as string },
  );
  if (ctx.existingRoute) plan.route = ctx.existingRoute;
  return plan;
}

/** The route carries what the ingester evaluates; the tests stay in the resource. */
const routeMapping = (m: MappingSpec): MappingSpec =>
  m.preset !== undefined ? { preset: m.preset } : { expression: m.expression as string };

async function planWebhookCredentials(
  wi: WebhookIntegration,
  ctx: PlanContext,
  name: string,
  url: string,
  ref: string | undefined,
  graceMs: number,
): Promise<Plan> {
  const ns = wi.metadata.namespace as string;
  if (ref) {
    const secret = await ctx.readSecret(ns, ref);
    if (!secret)
      return notReady('SecretNotFound', `Secret ${ns}/${ref} named in spec.credentials.secretRef does not exist`, {
        integrationName: name,
        url,
      });
    const password = decode(secret, 'password');
    if (!password)
      return notReady('SecretInvalid', `Secret ${ns}/${ref} has no password key`, { integrationName: name, url });
    const username = decode(secret, 'username') || wi.spec?.credentials?.username || name;
    if (username.includes(':'))
      return notReady('SecretInvalid', `the username in Secret ${ns}/${ref} contains a colon`, {
        integrationName: name,
        url,
      });
    if (username.length > MAX_USERNAME_CHARS)
      return notReady(
        'SecretInvalid',
        `the username in Secret ${ns}/${ref} is longer than ${MAX_USERNAME_CHARS} characters`,
        { integrationName: name, url },
      );
    const published = ctx.existingRoute?.credentials[0]?.secret;
    const secretVerifier = await ctx.scrypt.verifierFor(
      `${ns}/${wi.metadata.name}`,
      password,
      published && 'scrypt' in published ? published.scrypt : undefined,
    );
    return finish(wi, name, url, ref, [{ username, secret: secretVerifier }], ctx, undefined, []);
  }
  const username = wi.spec?.credentials?.username ?? name;
  const secretName = credentialsSecretName(wi);
  const { current, previous, notices } = resolveGenerated(wi, ctx, 'password', generatePassword);
  const credentials = [
    { username, secret: sha256Verifier(current) },
    ...carriedOver(ctx, current, previous, username, graceMs),
  ];
  const data = { username, password: current, url, authorization: basicAuthorization(username, current) };
  return finish(
    wi,
    name,
    url,
    secretName,
    credentials,
    ctx,
    { name: secretName, data, rotatedFor: wi.metadata.annotations?.[ROTATE_ANNOTATION] ?? '' },
    notices,
  );
}

export async function planApiKey(key: ApiKey, ctx: PlanContext): Promise<Plan> {
  const ns = key.metadata.namespace as string;
  const url = `${ctx.publicBaseUrl}/v1/integrations/metrics`;
  const username = key.spec?.username ?? ns;
  let graceMs: number;
  try {
    graceMs = parseDuration(key.spec?.rotationGracePeriod);
  } catch (err) {
    return notReady('InvalidSpec', (err as Error).message, { username });
  }
  const secretName = credentialsSecretName(key);
  const { current, previous, notices } = resolveGenerated(key, ctx, 'apiKey', () => generateApiKey(ns));
  const credentials = [
    { username, secret: sha256Verifier(current) },
    ...carriedOver(ctx, current, previous, username, graceMs),
  ];
  const data = { apiKey: current, username, url, authorization: basicAuthorization(username, current) };
  const plan = finish(
    key,
    toRouteName(key.metadata.name ?? '') || 'key',
    url,
    secretName,
    credentials,
    ctx,
    { name: secretName, data, rotatedFor: key.metadata.annotations?.[ROTATE_ANNOTATION] ?? '' },
    notices,
  );
  plan.status = { username, url, credentialsSecret: secretName };
  return publishable(applyLimits(plan, apiKeyLimits(key, limitsOf(ctx)), ctx), { username, url });
}

function finish(
  obj: IntakeResource,
  routeName: string,
  url: string,
  credentialsSecret: string,
  credentials: RouteCredential[],
  ctx: PlanContext,
  generated: Plan['credentials'],
  notices: Plan['notices'],
): Plan {
  const suspended = obj.spec?.suspend ?? false;
  const route: Route = {
    apiVersion: ROUTE_API_VERSION,
    kind: obj.kind,
    name: routeName,
    namespace: obj.metadata.namespace as string,
    credentials,
  };
  if (suspended) route.suspended = true;
  const ready: ReadyState = suspended
    ? { status: 'False', reason: 'Suspended', message: 'spec.suspend is true: senders get 403; credentials are kept' }
    : { status: 'True', reason: 'Published', message: `accepting requests at ${url}` };
  const expiries = credentials
    .map((c) => (c.notAfter ? Date.parse(c.notAfter) - ctx.now.getTime() : Infinity))
    .filter((ms) => ms > 0 && ms < Infinity);
  const plan: Plan = { ready, route, status: { url, credentialsSecret }, notices };
  if (obj.kind === 'WebhookIntegration') plan.status.integrationName = routeName;
  if (generated) plan.credentials = generated;
  // Look again just after the earliest grace period ends, to drop the expired credential.
  if (expiries.length > 0) plan.requeueAfterMs = Math.min(...expiries) + 1000;
  return plan;
}

/**
 * The current generated secret: kept from the credentials Secret; new when there is none, when the
 * rotate annotation changed, or when the Secret's value no longer matches what was published.
 */
function resolveGenerated(
  obj: IntakeResource,
  ctx: PlanContext,
  field: string,
  generate: () => string,
): { current: string; previous?: string; notices: Plan['notices'] } {
  const existing = decode(ctx.existingCredentials, field);
  const rotate = obj.metadata.annotations?.[ROTATE_ANNOTATION] ?? '';
  const rotatedFor = ctx.existingCredentials?.metadata?.annotations?.[ROTATED_FOR_ANNOTATION] ?? '';
  const secretName = credentialsSecretName(obj);
  if (!existing) {
    const notices: Plan['notices'] = ctx.existingRoute
      ? [
          {
            type: 'Warning',
            reason: 'CredentialsRegenerated',
            message: `credentials Secret ${secretName} was missing; new credentials were generated`,
          },
        ]
      : [];
    return { current: generate(), notices };
  }
  const published = ctx.existingRoute?.credentials.find((c) => !c.notAfter)?.secret;
  if (published && 'sha256' in published && published.sha256 !== sha256Hex(existing)) {
    return {
      current: generate(),
      notices: [
        {
          type: 'Warning',
          reason: 'CredentialsRegenerated',
          message: `the ${field} in Secret ${secretName} was edited; new credentials were generated (use spec.credentials.secretRef to choose a password)`,
        },
      ],
    };
  }
  if (rotate !== rotatedFor) {
    return {
      current: generate(),
      previous: existing,
      notices: [{ type: 'Normal', reason: 'Rotated', message: `new credentials written to Secret ${secretName}` }],
    };
  }
  return { current: existing, notices: [] };
}

/** Credentials still inside a rotation grace period, plus the one just rotated out. */
function carriedOver(
  ctx: PlanContext,
  current: string,
  previous: string | undefined,
  username: string,
  graceMs: number,
): RouteCredential[] {
  const now = ctx.now.getTime();
  const currentDigest = sha256Hex(current);
  const kept = (ctx.existingRoute?.credentials ?? []).filter(
    (c) => c.notAfter && Date.parse(c.notAfter) > now && !('sha256' in c.secret && c.secret.sha256 === currentDigest),
  );
  if (previous !== undefined && graceMs > 0) {
    kept.unshift({ username, secret: sha256Verifier(previous), notAfter: new Date(now + graceMs).toISOString() });
  }
  return kept.slice(0, 7);
}

/** The oldest WebhookIntegration not being deleted that claims the name. */
export function nameHolder(name: string, webhooks: readonly WebhookIntegration[]): WebhookIntegration | undefined {
  let holder: WebhookIntegration | undefined;
  for (const wi of webhooks) {
    if (wi.metadata.deletionTimestamp || integrationNameOf(wi) !== name) continue;
    if (!holder || olderThan(wi, holder)) holder = wi;
  }
  return holder;
}

function olderThan(a: WebhookIntegration, b: WebhookIntegration): boolean {
  const ta = new Date(a.metadata.creationTimestamp ?? 0).getTime();
  const tb = new Date(b.metadata.creationTimestamp ?? 0).getTime();
  if (ta !== tb) return ta < tb;
  return `${a.metadata.namespace}/${a.metadata.name}` < `${b.metadata.namespace}/${b.metadata.name}`;
}

export function routeFromSecret(secret: V1Secret | undefined): Route | undefined {
  const raw = decode(secret, ROUTE_SECRET_KEY);
  if (!raw) return undefined;
  try {
    return JSON.parse(raw) as Route;
  } catch {
    return undefined;
  }
}
