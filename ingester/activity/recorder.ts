/**
 * Activity per published integration and API key on this replica (api/activity.ts), served on
 * the admin port as `GET /status/activity` and merged across replicas by the operator into
 * `status.activity`.
 *
 * Bounded whatever the number of senders: a record exists only for a route in the current table
 * (sync() drops the rest at each reload), and refusals that name no published route (an unknown
 * integration, an API key that matches none) share one record per endpoint.
 *
 * On the request path (http/listener.ts, once per answered request): one Map look-up by the
 * route entry and a few array writes (the clock is read by a timer, not per request).
 *
 * Everything a sender controls is stored inert (common/sender-text.ts) and cut to MAX_REFUSAL_TEXT,
 * so the report, status.activity and whatever prints them hold no control characters. A refusal
 * before authentication keeps only the sender's address (refusedUnauthenticated): anyone can make
 * one, so it never carries text of the sender's into what a tenant reads.
 */
import { MAX_REFUSAL_TEXT, type ActivityReport, type ReportedActivity } from '../../api/activity.js';
import { flatCopy } from '../../common/flat-string.js';
import { inertText } from '../../common/sender-text.js';
import type { IntakeError } from '../core/errors.js';
import type { RouteEntry } from '../routing/route-table.js';
import { refusalReason } from './reasons.js';
import { TargetActivity } from './target-activity.js';
import { coarseNow } from '../../common/coarse-clock.js';

export type ActivityEndpoint = 'events' | 'metrics';

const DEAD_LETTER_HEADER = 'x-intake-dead-letter-id';

const idOf = (entry: RouteEntry): string => `${entry.kind}/${entry.namespace}/${entry.name}`;

/**
 * A route's place in the recorder; its record is created at its first request, not for every
 * route of the table: most of 20,000 routes are quiet, and an empty record is about 250 bytes.
 */
interface Slot {
  entry: RouteEntry;
  activity?: TargetActivity;
}

export class ActivityRecorder {
  private byEntry = new Map<RouteEntry, Slot>();
  private byId = new Map<string, Slot>();
  private readonly unattributed = { events: new TargetActivity(), metrics: new TargetActivity() };

  /** `now`: the wall clock; by default read by a timer every 250 ms rather than per request. */
  constructor(private readonly now: () => number = coarseNow) {}

  /** A new routing table: keep the records of routes still published (by kind, namespace and name), drop the rest. */
  sync(entries: Iterable<RouteEntry>): void {
    const byEntry = new Map<RouteEntry, Slot>();
    const byId = new Map<string, Slot>();
    for (const entry of entries) {
      // Kept for every route: one flat string, not a tree of concatenated pieces.
      const id = flatCopy(idOf(entry));
      const slot = { entry, activity: byId.get(id)?.activity ?? this.byId.get(id)?.activity };
      byEntry.set(entry, slot);
      byId.set(id, slot);
    }
    this.byEntry = byEntry;
    this.byId = byId;
  }

  /**
   * Single routes changed (RouteTable.apply): a route updated in place (the same kind, namespace
   * and name) keeps its record; a deleted one loses it; the others are not touched.
   */
  update(removed: readonly RouteEntry[], added: readonly RouteEntry[]): void {
    const addedIds = new Set<string>();
    for (const entry of added) {
      const id = flatCopy(idOf(entry));
      const slot = { entry, activity: this.byId.get(id)?.activity };
      this.byEntry.set(entry, slot);
      this.byId.set(id, slot);
      addedIds.add(id);
    }
    for (const entry of removed) {
      this.byEntry.delete(entry);
      const id = idOf(entry);
      if (!addedIds.has(id)) this.byId.delete(id);
    }
  }

  /** The record of a route, or of its endpoint's unattributed bucket. */
  private recordOf(entry: RouteEntry | null | undefined, endpoint: ActivityEndpoint): TargetActivity {
    if (!entry) return this.unattributed[endpoint];
    return this.recordOfRoute(entry) ?? this.unattributed[endpoint];
  }

  /** The record of a published route, created at its first use; undefined for a route no longer published. */
  private recordOfRoute(entry: RouteEntry): TargetActivity | undefined {
    // An entry of the table a reload just replaced: found by name (rare, so the string is fine).
    const slot = this.byEntry.get(entry) ?? this.byId.get(idOf(entry));
    if (!slot) return undefined;
    return (slot.activity ??= new TargetActivity());
  }

  accepted(entry: RouteEntry, count: number): void {
    this.recordOfRoute(entry)?.accepted(this.now(), count);
  }

  /** Accepted events a routing rule dropped (counted in accepted too). */
  droppedByRule(entry: RouteEntry, count: number): void {
    this.recordOfRoute(entry)?.droppedByRule(this.now(), count);
  }

  /**
   * A refused request that had proved its credentials: what was answered, and who sent it with
   * the User-Agent it claimed; never credentials, never the body.
   */
  refused(
    entry: RouteEntry | null | undefined,
    endpoint: ActivityEndpoint,
    err: IntakeError,
    remoteAddress: string,
    userAgent: string | undefined,
  ): void {
    const first = err.fieldErrors?.[0];
    this.recordOf(entry, endpoint).refused(this.now(), {
      status: err.statusCode,
      code: err.code,
      reason: refusalReason(err),
      message: inertText(
        first ? `${err.message} (${first.field || 'body'}: ${first.message})` : err.message,
        MAX_REFUSAL_TEXT,
      ),
      remoteAddress: inertText(remoteAddress, MAX_REFUSAL_TEXT),
      userAgent: inertText(userAgent, MAX_REFUSAL_TEXT),
      deadLetterId: err.headers?.[DEAD_LETTER_HEADER],
    });
  }

  /**
   * A request refused before it proved any credentials: counted, and kept as its address and
   * reason only (no User-Agent, no message), apart from the authenticated refusals.
   */
  refusedUnauthenticated(
    entry: RouteEntry | null | undefined,
    endpoint: ActivityEndpoint,
    err: IntakeError,
    remoteAddress: string,
  ): void {
    this.recordOf(entry, endpoint).refusedUnauthenticated(
      this.now(),
      err.statusCode,
      err.code,
      refusalReason(err),
      inertText(remoteAddress, MAX_REFUSAL_TEXT),
    );
  }

  report(): ActivityReport {
    const nowMs = this.now();
    const webhookIntegrations: ReportedActivity[] = [];
    const apiKeys: ReportedActivity[] = [];
    for (const { entry, activity } of this.byId.values()) {
      if (!activity?.active) continue;
      const reported = { name: entry.name, namespace: entry.namespace, ...activity.snapshot(nowMs) };
      (entry.kind === 'WebhookIntegration' ? webhookIntegrations : apiKeys).push(reported);
    }
    return {
      time: new Date(nowMs).toISOString(),
      webhookIntegrations,
      apiKeys,
      unattributed: {
        webhookIntegrations: this.unattributed.events.snapshot(nowMs),
        apiKeys: this.unattributed.metrics.snapshot(nowMs),
      },
    };
  }
}
