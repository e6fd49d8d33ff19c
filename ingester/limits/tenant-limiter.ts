/**
 * Per-tenant limits on the request path (docs/design.md "Per-tenant limits"): events per
 * integration and per namespace, data points per API key and per namespace, mapping CPU time per
 * namespace. Each limit is cluster-wide and enforced here at limit / N, N the ready replicas.
 *
 * A request is refused whole, never in part: the tokens of every bucket it needs are checked
 * first and taken only if all have them. The buckets survive route reloads (keyed by scope and
 * name), so a reload elsewhere in the cluster does not refill anyone's bucket.
 *
 * The hot path is one Map look-up by the route entry and two bucket checks.
 */
import type { Counter } from 'prom-client';
import {
  DEFAULT_TENANT_LIMITS,
  type NamespaceLimits,
  type OverLimitStatus,
  type TenantLimitDefaults,
} from '../../api/limits.js';
import {
  rateLimited,
  type LimitDetails,
  type LimitError,
  type LimitResource,
  type LimitScope,
} from '../core/errors.js';
import type { RouteEntry } from '../routing/route-table.js';
import { DEFAULT_MAPPING_LIMITS } from '../../api/mapping/mapping-model.js';
import { TokenBucket } from './token-bucket.js';
import { flatCopy } from '../../common/flat-string.js';

/** How a refusal names the field that raises the limit: Kubernetes resources, or the standalone file. */
export type LimitsMode = 'kubernetes' | 'file';

export interface TenantLimiterOptions {
  defaults?: TenantLimitDefaults;
  mode: LimitsMode;
  eventsRefused?: Counter<'integration' | 'namespace' | 'reason' | 'scope'>;
  pointsRefused?: Counter<'namespace' | 'reason' | 'scope'>;
  /**
   * What one evaluation of a custom expression may cost at worst, CPU ms (mapping.timeoutMs): the
   * namespace reserves it before the evaluation is queued (reserveMappingCpu). Default 500.
   */
  mappingReserveMs?: number;
  /** Monotonic milliseconds. */
  now?: () => number;
}

const limitKey = (scope: LimitScope, resource: LimitResource, namespace: string, name: string): string =>
  `${scope}\0${resource}\0${namespace}\0${name}`;

/** One limit: its cluster-wide values, what it limits, and the bucket holding this replica's share. */
class Limit {
  readonly bucket: TokenBucket;
  /** Its key in TenantLimiter.limits (limitFor): kept for every route, so a flat copy. */
  readonly key: string;
  /**
   * Refusals already built, by what varies between them (status, count, Retry-After, replicas):
   * a sender far over its limit gets the same answer thousands of times a second. Small: cleared
   * when it grows past REFUSALS_KEPT and whenever the limit changes.
   */
  refusals?: Map<string, LimitError>;
  constructor(
    readonly scope: LimitScope,
    readonly resource: LimitResource,
    readonly namespace: string,
    readonly name: string,
    public perSecond: number,
    public burst: number,
    replicas: number,
    nowMs: number,
  ) {
    this.bucket = new TokenBucket(perSecond / replicas, burst / replicas, nowMs);
    this.key = flatCopy(limitKey(scope, resource, namespace, name));
  }

  configure(perSecond: number, burst: number, replicas: number, nowMs: number): void {
    this.perSecond = perSecond;
    this.burst = burst;
    this.refusals?.clear();
    this.bucket.configure(perSecond / replicas, burst / replicas, nowMs);
  }
}

/** The limits one route's requests are checked against: resolved at its first request, dropped when they change. */
interface Gate {
  readonly own: Limit;
  readonly namespace: Limit;
  /** CPU of the namespace (its mapping and its routing rules); only for integrations with either. */
  readonly cpu?: Limit;
  readonly maxSeries: number;
  readonly overLimitStatus: OverLimitStatus;
}

/** A namespace's limits (the smallest its routes publish) and which of its buckets its routes use. */
interface NamespaceState {
  limits: NamespaceLimits;
  events: boolean;
  dataPoints: boolean;
  cpu: boolean;
}

const MAX_RETRY_AFTER_SECONDS = 3600;
const REFUSALS_KEPT = 32;

/**
 * A route's own limit (its integration's events, its API key's data points) is created at the
 * route's first request, not for every route of the table: most of 20,000 routes are quiet, and a
 * limit with its bucket, key and gate was about 400 bytes of heap each (docs/benchmarks.md). A
 * limit not held stands for what an untouched bucket holds, a full one at the route's current
 * values, so creating it at the first request, just before that request reserves, admits exactly
 * what the eager one admitted. The one change that leaves an untouched bucket short of full is a
 * larger bucket (fewer ready replicas, a larger burst): then the limit is created first with the
 * values it had, as the eager one would have been, and changed like any other (holdUnheld).
 * The namespaces' limits (a few hundred) are created when their routes are placed.
 */
export class TenantLimiter {
  private readonly defaults: TenantLimitDefaults;
  private readonly now: () => number;
  private readonly mappingReserveMs: number;
  private limits = new Map<string, Limit>();
  /** Gates resolved so far (gate): a cache, emptied or trimmed whenever the limits it points to change. */
  private gates = new Map<RouteEntry, Gate>();
  /** The routes of each namespace: what an update of one route re-resolves (the namespace's limits are theirs together). */
  private byNamespace = new Map<string, Set<RouteEntry>>();
  /** Each namespace's limits, resolved in sync and update. */
  private namespaces = new Map<string, NamespaceState>();
  private replicaCount = 1;

  constructor(private readonly options: TenantLimiterOptions) {
    this.defaults = options.defaults ?? DEFAULT_TENANT_LIMITS;
    this.now = options.now ?? (() => performance.now());
    this.mappingReserveMs = options.mappingReserveMs ?? DEFAULT_MAPPING_LIMITS.timeoutMs;
  }

  get replicas(): number {
    return this.replicaCount;
  }

  /** Routes whose own limit is held now (created at a first request, or kept with tokens spent): for tests. */
  get heldRouteLimits(): number {
    let held = 0;
    for (const limit of this.limits.values()) if (limit.scope !== 'namespace') held++;
    return held;
  }

  /** Each namespace's limits in force (cluster-wide values, not this replica's share): for the limits gauge. */
  *namespaceLimits(): Generator<{ namespace: string; resource: LimitResource; perSecond: number }> {
    for (const limit of this.limits.values())
      if (limit.scope === 'namespace')
        yield { namespace: limit.namespace, resource: limit.resource, perSecond: limit.perSecond };
  }

  /** Ready replicas sharing the cluster-wide limits (from EndpointSlices; 1 standalone). */
  setReplicas(n: number): void {
    const replicas = Math.max(1, Math.floor(n));
    if (replicas === this.replicaCount) return;
    const nowMs = this.now();
    // Fewer replicas make every bucket larger: an untouched one is then no longer full.
    if (replicas < this.replicaCount) this.holdUnheld(nowMs);
    this.replicaCount = replicas;
    for (const limit of this.limits.values()) limit.configure(limit.perSecond, limit.burst, replicas, nowMs);
  }

  /** Resolves every route's limits for a new routing table; buckets of routes that remain keep their tokens. */
  sync(entries: Iterable<RouteEntry>): void {
    const list = [...entries];
    const before = this.byNamespace;
    const previous = this.limits;
    // The routes placed before whose own limit is not held: full buckets at their values then.
    const unheld = new Map<string, RouteEntry>();
    if (before.size > 0)
      for (const routes of before.values())
        for (const entry of routes) {
          const key = this.ownKey(entry);
          if (!previous.has(key)) unheld.set(key, entry);
        }
    this.limits = new Map();
    this.gates = new Map();
    this.byNamespace = new Map();
    this.namespaces = new Map();
    for (const entry of list) this.routesOf(entry.namespace).add(entry);
    for (const namespace of this.byNamespace.keys()) this.resolveNamespace(namespace, previous);
    if (previous.size > 0 || unheld.size > 0)
      for (const entry of list) this.carryOwnLimit(entry, previous, unheld.get(this.ownKey(entry)));
  }

  /**
   * Single routes changed (RouteTable.apply): resolves again only the namespaces they are in,
   * since a namespace's limits are the smallest its routes publish. A route updated in place (the
   * same kind, namespace and name) keeps its bucket's tokens, as in sync.
   */
  update(removed: readonly RouteEntry[], added: readonly RouteEntry[]): void {
    const previous = new Map<string, Limit>();
    const take = (key: string): void => {
      const limit = this.limits.get(key);
      if (limit) previous.set(key, limit);
      this.limits.delete(key);
    };
    const namespaces = new Set<string>();
    const unheld = new Map<string, RouteEntry>();
    for (const entry of removed) {
      this.gates.delete(entry);
      this.routesOf(entry.namespace).delete(entry);
      namespaces.add(entry.namespace);
      const key = this.ownKey(entry);
      if (!this.limits.has(key)) unheld.set(key, entry);
      take(key);
    }
    for (const entry of added) {
      this.routesOf(entry.namespace).add(entry);
      namespaces.add(entry.namespace);
      take(this.ownKey(entry));
    }
    for (const namespace of namespaces) {
      for (const resource of ['events', 'dataPoints', 'mappingCpuMillis'] as const)
        take(limitKey('namespace', resource, namespace, namespace));
      for (const entry of this.byNamespace.get(namespace) ?? []) this.gates.delete(entry);
      this.resolveNamespace(namespace, previous);
    }
    for (const entry of added) this.carryOwnLimit(entry, previous, unheld.get(this.ownKey(entry)));
  }

  private routesOf(namespace: string): Set<RouteEntry> {
    let routes = this.byNamespace.get(namespace);
    if (!routes) this.byNamespace.set(namespace, (routes = new Set()));
    return routes;
  }

  /** A namespace's limits from its routes, and the namespace's buckets they use (from `previous`, tokens kept, or new). */
  private resolveNamespace(namespace: string, previous: ReadonlyMap<string, Limit>): void {
    const routes = this.byNamespace.get(namespace);
    if (!routes || routes.size === 0) {
      this.byNamespace.delete(namespace);
      this.namespaces.delete(namespace);
      return;
    }
    let limits: NamespaceLimits | undefined;
    let [events, dataPoints, cpu] = [false, false, false];
    for (const entry of routes) {
      limits = smallest(limits, this.namespaceLimitsOf(entry));
      if (entry.kind === 'WebhookIntegration') {
        events = true;
        if (entry.mapping || entry.rules) cpu = true;
      } else dataPoints = true;
    }
    const ns = limits as NamespaceLimits;
    this.namespaces.set(namespace, { limits: ns, events, dataPoints, cpu });
    if (events) this.limit(previous, 'namespace', 'events', namespace, namespace, ns.eventsPerSecond, ns.eventsBurst);
    if (dataPoints)
      this.limit(previous, 'namespace', 'dataPoints', namespace, namespace, ns.dataPointsPerSecond, ns.dataPointsBurst);
    if (cpu)
      this.limit(
        previous,
        'namespace',
        'mappingCpuMillis',
        namespace,
        namespace,
        ns.mappingCpuMillisPerSecond,
        ns.mappingCpuBurstMillis,
      );
  }

  /**
   * A placed route's own limit after a reload: the one it had (tokens kept, new values), or, when
   * none was held and the route had smaller values before (`before`), the full bucket it had then,
   * changed to the new values as a held one is; otherwise none (a full bucket, created when needed).
   */
  private carryOwnLimit(entry: RouteEntry, previous: ReadonlyMap<string, Limit>, before: RouteEntry | undefined): void {
    const key = this.ownKey(entry);
    if (previous.has(key)) {
      this.ownLimit(entry, previous);
      return;
    }
    if (!before) return;
    const [was, now] = [this.ownValues(before), this.ownValues(entry)];
    if (was.perSecond === now.perSecond && was.burst === now.burst) return;
    const held = new Map([[key, this.newOwnLimit(before, this.now())]]);
    this.ownLimit(entry, held);
  }

  /**
   * Creates the own limit of every placed route that has none, full at its values: before a
   * change that makes buckets larger, which an untouched bucket does not fill at once.
   */
  private holdUnheld(nowMs: number): void {
    for (const routes of this.byNamespace.values())
      for (const entry of routes) {
        const key = this.ownKey(entry);
        if (!this.limits.has(key)) this.limits.set(key, this.newOwnLimit(entry, nowMs));
      }
  }

  /** The key of a route's own limit. */
  private ownKey(entry: RouteEntry): string {
    return entry.kind === 'WebhookIntegration'
      ? limitKey('integration', 'events', entry.namespace, entry.name)
      : limitKey('apikey', 'dataPoints', entry.namespace, entry.name);
  }

  /** A route's own rate and burst (cluster-wide): its limits, else the ingester's defaults. */
  private ownValues(entry: RouteEntry): { perSecond: number; burst: number } {
    const l = entry.limits;
    if (entry.kind === 'WebhookIntegration') {
      const d = this.defaults.integration;
      return { perSecond: l.eventsPerSecond ?? d.eventsPerSecond, burst: l.eventsBurst ?? d.eventsBurst };
    }
    const d = this.defaults.apiKey;
    return { perSecond: l.dataPointsPerSecond ?? d.dataPointsPerSecond, burst: l.dataPointsBurst ?? d.dataPointsBurst };
  }

  private newOwnLimit(entry: RouteEntry, nowMs: number): Limit {
    const { perSecond, burst } = this.ownValues(entry);
    const [scope, resource] =
      entry.kind === 'WebhookIntegration' ? (['integration', 'events'] as const) : (['apikey', 'dataPoints'] as const);
    return new Limit(scope, resource, entry.namespace, entry.name, perSecond, burst, this.replicaCount, nowMs);
  }

  /** The route's own limit: held already, else from `previous` (values updated, tokens kept), else new and full. */
  private ownLimit(entry: RouteEntry, previous: ReadonlyMap<string, Limit>): Limit {
    const { perSecond, burst } = this.ownValues(entry);
    return entry.kind === 'WebhookIntegration'
      ? this.limit(previous, 'integration', 'events', entry.namespace, entry.name, perSecond, burst)
      : this.limit(previous, 'apikey', 'dataPoints', entry.namespace, entry.name, perSecond, burst);
  }

  /**
   * Before the body is read: refuses a route whose bucket (or namespace's) is already empty, or
   * whose namespace cannot pay for its mapping: for a custom expression, its worst case
   * (reserveMappingCpu would refuse); for a preset, a debt. A sender far over its limit costs little.
   * A refusal here counts one item (the body, and so the count, is not known yet).
   */
  admitRequest(entry: RouteEntry): void {
    const refusal = this.refusalFor(entry);
    if (refusal) throw refusal;
  }

  /**
   * admitRequest without the throw: the refusal to answer (already counted), or undefined when the
   * request may read its body. For the hot path of a sender far over its limit, where a thrown
   * error and the framework's error route cost a measurable share of each refusal; the answer
   * is the same object admitRequest would throw.
   */
  refusalFor(entry: RouteEntry): LimitError | undefined {
    const gate = this.gate(entry);
    const nowMs = this.now();
    const wait = Math.max(gate.own.bucket.waitMs(1, nowMs), gate.namespace.bucket.waitMs(1, nowMs));
    if (wait > 0) return this.refusal(entry, gate, this.slower(gate, 1, nowMs), 1, wait);
    if (gate.cpu) {
      const cpuWait = entry.mapping?.isolated
        ? gate.cpu.bucket.waitMs(this.mappingReserveMs, nowMs)
        : gate.cpu.bucket.debtMs(nowMs);
      if (cpuWait > 0) return this.refusal(entry, gate, gate.cpu, 1, cpuWait);
    }
    return undefined;
  }

  /** After validation: takes `count` events (or data points) from the route's and the namespace's buckets, or refuses the whole request. */
  take(entry: RouteEntry, count: number): void {
    const gate = this.gate(entry);
    const nowMs = this.now();
    const wait = Math.max(gate.own.bucket.waitMs(count, nowMs), gate.namespace.bucket.waitMs(count, nowMs));
    if (wait > 0) throw this.refusal(entry, gate, this.slower(gate, count, nowMs), count, wait);
    gate.own.bucket.take(count);
    gate.namespace.bucket.take(count);
  }

  /**
   * Gives back the `count` tokens take() took for a request that was then refused after all (the
   * hand-off's store, or its namespace's share of it, was full; a series cap): what was never
   * accepted spends no rate, so the sender's retry once the store recovers is not refused 429 for
   * it. Synchronous and at most up to each bucket's size, so concurrent requests can neither lose
   * tokens nor gain more than the burst.
   */
  giveBack(entry: RouteEntry, count: number): void {
    const gate = this.gate(entry);
    const nowMs = this.now();
    gate.own.bucket.giveBack(count, nowMs);
    gate.namespace.bucket.giveBack(count, nowMs);
  }

  /**
   * Charges the CPU milliseconds one preset's evaluation used to the namespace (it may go into
   * debt). Presets run on the request thread, one at a time between other requests' steps, and
   * are ours: their cost is bounded by the body, so charging afterwards overshoots by at most one
   * evaluation per request in flight. A custom expression reserves first (reserveMappingCpu).
   */
  chargeMappingCpu(entry: RouteEntry, cpuMs: number): void {
    this.gate(entry).cpu?.bucket.take(cpuMs);
  }

  /**
   * Before a custom expression's evaluation is queued: takes its worst case (mapping.timeoutMs of
   * CPU time) from the namespace's mapping CPU bucket, or throws the refusal (MAPPING_CPU_LIMITED,
   * 429 or 503 with Retry-After) when the bucket cannot cover it. A namespace therefore has at
   * most burst / timeout evaluations waiting or running, and never spends more than its budget:
   * what it was refused it never ran. Returns `settle`, to call once with the CPU time the
   * evaluation really used (the rest is given back; a little more, the grace the worker is given
   * past its limit, is taken).
   */
  reserveMappingCpu(entry: RouteEntry): (usedMs: number) => void {
    const gate = this.gate(entry);
    const cpu = gate.cpu;
    if (!cpu) return () => undefined;
    const reserved = this.mappingReserveMs;
    const wait = cpu.bucket.waitMs(reserved, this.now());
    if (wait > 0) throw this.refusal(entry, gate, cpu, 1, wait);
    cpu.bucket.take(reserved);
    let settled = false;
    return (usedMs) => {
      if (settled) return;
      settled = true;
      cpu.bucket.settle(reserved, usedMs, this.now());
    };
  }

  /**
   * Charges the CPU milliseconds the integration's routing rules took for part of a request
   * (routing/rule-decisions.ts) to the namespace's CPU budget, the one its mapping spends, and
   * answers the refusal (counted) once that leaves the namespace in debt: the request then stops
   * evaluating and is refused, so a namespace runs at most one slice past its budget per request.
   */
  chargeRulesCpu(entry: RouteEntry, cpuMs: number): LimitError | undefined {
    const gate = this.gate(entry);
    const cpu = gate.cpu;
    if (!cpu) return undefined;
    const nowMs = this.now();
    // Refilled first, so the charge is counted against what the bucket holds now.
    cpu.bucket.debtMs(nowMs);
    cpu.bucket.take(cpuMs);
    const debt = cpu.bucket.debtMs(nowMs);
    return debt > 0 ? this.refusal(entry, gate, cpu, 1, debt) : undefined;
  }

  /** The series cap for a write with this API key: the key's, at most the namespace's. */
  maxSeries(entry: RouteEntry): number {
    return this.gate(entry).maxSeries;
  }

  /**
   * The route's gate, resolved at its first request. A route of an older table (a request that
   * began before a reload) resolves alone, against the limits in force: its own limit is the one
   * its current version holds, if any, so it never creates one with the values it had before.
   */
  private gate(entry: RouteEntry): Gate {
    let gate = this.gates.get(entry);
    if (!gate) {
      const placed = this.byNamespace.get(entry.namespace)?.has(entry) ?? false;
      const ns = placed ? this.namespaces.get(entry.namespace)?.limits : undefined;
      gate = this.gateOf(entry, ns ?? this.namespaceLimitsOf(entry), placed ? entry : this.currentVersion(entry));
      this.gates.set(entry, gate);
    }
    return gate;
  }

  /** The placed route with the same kind, namespace and name as `entry`, else `entry` itself. */
  private currentVersion(entry: RouteEntry): RouteEntry {
    for (const placed of this.byNamespace.get(entry.namespace) ?? [])
      if (placed.kind === entry.kind && placed.name === entry.name) return placed;
    return entry;
  }

  /** The namespace limits a route publishes (the defaults themselves when it publishes none: no copy per route). */
  private namespaceLimitsOf(entry: RouteEntry): NamespaceLimits {
    const own = entry.limits.namespace;
    return own ? { ...this.defaults.namespace, ...own } : this.defaults.namespace;
  }

  /** The gate of `entry`; its own limit is `owner`'s (the entry itself, or its current version), created full if none is held. */
  private gateOf(entry: RouteEntry, ns: NamespaceLimits, owner: RouteEntry): Gate {
    const held = this.limits;
    const own = this.ownLimit(owner, held);
    if (entry.kind === 'WebhookIntegration') {
      return {
        own,
        namespace: this.limit(
          held,
          'namespace',
          'events',
          entry.namespace,
          entry.namespace,
          ns.eventsPerSecond,
          ns.eventsBurst,
        ),
        ...(entry.mapping || entry.rules
          ? {
              cpu: this.limit(
                held,
                'namespace',
                'mappingCpuMillis',
                entry.namespace,
                entry.namespace,
                ns.mappingCpuMillisPerSecond,
                ns.mappingCpuBurstMillis,
              ),
            }
          : {}),
        maxSeries: ns.maxSeries,
        overLimitStatus: entry.overLimitStatus,
      };
    }
    return {
      own,
      namespace: this.limit(
        held,
        'namespace',
        'dataPoints',
        entry.namespace,
        entry.namespace,
        ns.dataPointsPerSecond,
        ns.dataPointsBurst,
      ),
      maxSeries: Math.min(entry.limits.maxSeries ?? ns.maxSeries, ns.maxSeries),
      overLimitStatus: entry.overLimitStatus,
    };
  }

  /** The limit under this key from the previous set (reconfigured, tokens kept) or a new, full one. */
  private limit(
    previous: ReadonlyMap<string, Limit>,
    scope: LimitScope,
    resource: LimitResource,
    namespace: string,
    name: string,
    perSecond: number,
    burst: number,
  ): Limit {
    const key = limitKey(scope, resource, namespace, name);
    let limit = this.limits.get(key);
    if (limit) return limit;
    const nowMs = this.now();
    limit = previous.get(key);
    if (limit) limit.configure(perSecond, burst, this.replicaCount, nowMs);
    else limit = new Limit(scope, resource, namespace, name, perSecond, burst, this.replicaCount, nowMs);
    // The limit's own key: one flat string made once, not a tree of concatenated pieces per sync.
    this.limits.set(limit.key, limit);
    return limit;
  }

  /** Of the route's and the namespace's limit, the one that holds the request back longer. */
  private slower(gate: Gate, count: number, nowMs: number): Limit {
    return gate.namespace.bucket.waitMs(count, nowMs) > gate.own.bucket.waitMs(count, nowMs)
      ? gate.namespace
      : gate.own;
  }

  /** The refusal for `count` items over `limit`, counted; built once while nothing in it changes. */
  private refusal(entry: RouteEntry, gate: Gate, limit: Limit, count: number, waitMs: number): LimitError {
    const retryAfterSeconds = Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil(waitMs / 1000)));
    const reason = limit.resource === 'mappingCpuMillis' ? 'mapping_cpu' : 'rate_limited';
    if (entry.kind === 'WebhookIntegration')
      this.options.eventsRefused?.inc(
        { integration: entry.name, namespace: entry.namespace, reason, scope: limit.scope },
        count,
      );
    else this.options.pointsRefused?.inc({ namespace: entry.namespace, reason, scope: limit.scope }, count);
    const key = `${gate.overLimitStatus} ${count} ${retryAfterSeconds} ${this.replicaCount}`;
    const known = limit.refusals?.get(key);
    if (known) return known;
    const details: LimitDetails = {
      scope: limit.scope,
      namespace: limit.namespace,
      name: limit.name,
      resource: limit.resource,
      perSecond: limit.perSecond,
      burst: limit.burst,
      replicas: this.replicaCount,
      requested: count,
      retryAfterSeconds,
      field: fieldFor(limit, entry, this.options.mode),
    };
    const refusal = rateLimited(gate.overLimitStatus, details);
    // Created at the first refusal: most of thousands of routes are never refused.
    limit.refusals ??= new Map();
    if (limit.refusals.size >= REFUSALS_KEPT) limit.refusals.clear();
    limit.refusals.set(key, refusal);
    return refusal;
  }
}

/** Field by field, the smaller of two namespace limits (routes of one namespace that disagree). */
function smallest(a: NamespaceLimits | undefined, b: NamespaceLimits): NamespaceLimits {
  if (!a || a === b) return b;
  let out: NamespaceLimits | undefined;
  for (const key of Object.keys(b) as Array<keyof NamespaceLimits>)
    if (b[key] < (out ?? a)[key]) (out ??= { ...a })[key] = b[key];
  return out ?? a;
}

const RATE_FIELD: Record<LimitResource, string> = {
  events: 'eventsPerSecond',
  dataPoints: 'dataPointsPerSecond',
  mappingCpuMillis: 'mappingCpuMillisPerSecond',
};

/** The setting that raises this limit, as the body's `limit.field` names it. */
export function fieldFor(
  limit: { scope: LimitScope; resource: LimitResource },
  entry: Pick<RouteEntry, 'kind' | 'name' | 'namespace'>,
  mode: LimitsMode,
): string {
  const field = RATE_FIELD[limit.resource];
  if (mode === 'file') {
    if (limit.scope === 'namespace') return `routes[].limits.namespace.${field} (or tenantLimits.namespace.${field})`;
    return `routes[].limits.${field} of ${entry.kind} ${entry.name} (or tenantLimits.${limit.scope === 'integration' ? 'integration' : 'apiKey'}.${field})`;
  }
  if (limit.scope === 'namespace')
    return `IntakeQuota spec.namespace.${field} in namespace ${entry.namespace} (cluster admins)`;
  const quota = limit.scope === 'integration' ? 'integration' : 'apiKey';
  return `spec.limits.${field} of ${entry.kind} ${entry.name} in namespace ${entry.namespace} (at most IntakeQuota spec.${quota}.${field})`;
}
