/**
 * The Alertmanager destination. Each event updates its alert state in the durable store first,
 * then the resulting alerts are POSTed to every configured Alertmanager (an HA set is never load
 * balanced: each instance must see every alert), in batches of at most 256 as Prometheus sends
 * them. A delivery counts when at least one Alertmanager took it; the others catch up at the next
 * re-send. Firing alerts are re-sent every resendInterval by one replica (a lease in the store),
 * because Alertmanager keeps alerts in memory and forgets them when it restarts.
 *
 * Bounded: at most maxAlertsPerNamespace states per namespace and maxAlerts in all. An event that
 * would start a new alert past a cap is refused: nothing is kept or sent for it, it is counted
 * (intake_destination_alerts_refused_total) and logged at most once per interval; alerts already
 * kept still update and resolve (refusing the newest rather than evicting a firing alert, which
 * Alertmanager would then lose without a resolve). A new state reserves its place (AlertSlots)
 * before it is written, and gives it back if the write does not happen, so on one replica the
 * caps are exact, also while a re-send round recounts the states. The re-send reads the states a page of
 * MAX_ALERTS_PER_POST at a time and posts each page before reading the next, so its memory and
 * its time on the event loop do not grow with the number of alerts.
 */
import type { Logger } from 'pino';
import type { NormalisedEvent } from '../../core/event.js';
import { LogLimiter } from '../../core/log-limiter.js';
import { LRUCache } from 'lru-cache';
import type { AlertCounts, AlertStore, Versioned } from './alert-store.js';
import {
  alertKey,
  alertsOf,
  applyEvent,
  expire,
  isSpent,
  type AlertState,
  type PostableAlert,
  type Timing,
} from './alerts.js';
import type { Destination, QueuedEvent } from '../destination.js';
import type { ConnectGuard } from '../../outbound/guarded-connect.js';
import { OutboundClient } from '../../outbound/http-client.js';
import type { Outcome } from '../../outbound/outcome.js';
import type { DestinationMetrics } from '../metrics.js';
import type { AlertmanagerSettings } from '../settings.js';
import { AlertSlots, type Slot } from './alert-slots.js';
import { carrierHeaders, type TraceCarrier } from '../../tracing/carrier.js';

const JSON_BODY = { 'content-type': 'application/json' };

/** Prometheus' notifier batch size. */
export const MAX_ALERTS_PER_POST = 256;
/** Compare-and-set rounds before a state write is given up (and the event retried later). */
const MAX_CAS_ROUNDS = 8;
/** States this replica wrote last, kept to skip the read before the next write of the same alert. */
const RECENT_STATES = 4096;

export class AlertmanagerDestination implements Destination {
  readonly kind = 'alertmanager';
  readonly maxBatch = MAX_ALERTS_PER_POST;
  private readonly client: OutboundClient;
  private readonly timing: Timing;
  private resendTimer?: NodeJS.Timeout;
  private resending?: Promise<void>;
  private readonly logger: Logger;
  private readonly refusals: LogLimiter;
  /** Places taken under the caps: the states as counted, plus those created (or being created) since. */
  private readonly slots: AlertSlots;
  /** The first count of the states, awaited by every batch before it takes a place. */
  private countsLoaded?: Promise<void>;
  /** For each alert in a batch in flight, the batch holding its newest state (see claim()). */
  private readonly posting = new Map<string, PostTurn>();
  /** The version this replica last wrote of recently changed alerts (possibly stale: a guess). */
  private readonly recent = new LRUCache<string, Versioned>({ max: RECENT_STATES });

  constructor(
    readonly name: string,
    private readonly settings: AlertmanagerSettings,
    /** The store, once it can be used (the bus may still be connecting). */
    private readonly store: () => AlertStore | undefined,
    private readonly metrics: DestinationMetrics,
    logger: Logger,
    private readonly holder: string,
    /** The address guard, for URLs a tenant wrote. */
    guard?: ConnectGuard,
    /** While paused the re-sends stop too: nothing reaches a paused receiver. */
    private readonly paused: () => boolean = () => false,
  ) {
    this.client = new OutboundClient({
      where: `destinations.${name}.alertmanager`,
      auth: settings,
      timeoutMs: settings.timeoutMs,
      maxConnections: 4,
      ...(guard ? { guard } : {}),
    });
    this.timing = { resendIntervalMs: settings.resendIntervalMs, resolvedRetentionMs: settings.resolvedRetentionMs };
    this.logger = logger.child({ destination: name });
    this.refusals = new LogLimiter(this.logger);
    this.slots = new AlertSlots(settings.maxAlertsPerNamespace, settings.maxAlerts);
  }

  async send(queued: readonly QueuedEvent[], trace?: TraceCarrier): Promise<Outcome> {
    const store = this.store();
    if (!store) return { kind: 'retry', reason: 'state_store', error: 'the alert state store is not available yet' };
    // Different alerts are independent: their states are written concurrently; the events of one
    // alert in order.
    const byKey = new Map<string, NormalisedEvent[]>();
    for (const q of queued) {
      const e = q.event();
      const key = alertKey(e);
      const list = byKey.get(key);
      if (list) list.push(e);
      else byKey.set(key, [e]);
    }
    const turn = new PostTurn();
    try {
      const byAlert = new Map<string, PostableAlert[]>();
      try {
        // One count for every batch: a second one replacing the first would forget the places taken between.
        this.countsLoaded ??= this.loadCounts(store).catch((err: unknown) => {
          this.countsLoaded = undefined;
          throw err;
        });
        await this.countsLoaded;
        await Promise.all(
          [...byKey.entries()].map(async ([key, list]) => {
            const alerts = await this.apply(store, key, list);
            if (alerts.length === 0) return;
            byAlert.set(key, alerts);
            this.claim(key, turn);
          }),
        );
      } catch (err) {
        return { kind: 'retry', reason: 'state_store', error: `alert state not written: ${(err as Error).message}` };
      }
      await Promise.all(turn.after);
      // What this batch still holds the newest state of (a later batch took over the others, and
      // posts them); labels never repeat across alert states (they name the alert's identity).
      turn.started = true;
      const alerts = [...byAlert].filter(([key]) => this.posting.get(key) === turn).flatMap(([, a]) => a);
      if (alerts.length === 0) return { kind: 'accepted' };
      return await this.postToAll(alerts, trace ? { ...JSON_BODY, ...carrierHeaders(trace) } : JSON_BODY);
    } finally {
      turn.finish();
      for (const [key, holder] of this.posting) if (holder === turn) this.posting.delete(key);
    }
  }

  /**
   * This batch now holds the newest state of `key` that this replica wrote. Batches are in flight
   * concurrently, and Alertmanager keeps whatever it was posted last: a post already on its way
   * with an older state of the alert is waited for, and one not started yet leaves the alert out.
   */
  private claim(key: string, turn: PostTurn): void {
    const before = this.posting.get(key);
    if (before?.started) turn.after.push(before.finished);
    this.posting.set(key, turn);
  }

  /**
   * The alerts one alert's events lead to, after its state is stored: the events are applied in
   * order to the state in memory and the result written once (compare-and-set), since a storm
   * updates the same alerts again and again. A redelivered event sends its state again. An event
   * that would start a new alert past a cap is refused and the next ones go on without it.
   */
  private async apply(store: AlertStore, key: string, list: readonly NormalisedEvent[]): Promise<PostableAlert[]> {
    for (let round = 0; round < MAX_CAS_ROUNDS; round++) {
      const now = Date.now();
      // The first round starts from the state this replica last wrote, or none (a new alert),
      // without reading the store: only a write that succeeds trusts that guess; a failed write,
      // or a guess that changes nothing, reads the store in the next round.
      const guessing = round === 0;
      const current = guessing ? this.recent.get(key) : await store.get(key);
      let state = current?.state;
      let changed = false;
      let took: Slot | undefined;
      // Refusals are reported once, by the round whose result stands.
      const refused: Array<[NormalisedEvent, 'namespace' | 'total']> = [];
      for (const e of list) {
        const applied = applyEvent(state, e, now, key);
        if (!applied.changed) continue;
        if (state === undefined && applied.next !== undefined) {
          // A new state takes a place under the caps before it is written (concurrent creates see it).
          const slot = this.slots.take(e.namespace, key);
          if (typeof slot === 'string') {
            refused.push([e, slot]);
            continue;
          }
          took = slot;
        }
        state = applied.next;
        changed = true;
      }
      if (!changed) {
        if (guessing) continue;
        for (const [e, limit] of refused) this.refuse(e, limit);
        return state && list.some((e) => e.id === state.lastEventId) ? alertsOf(state, now, this.timing) : [];
      }
      if (!state) return [];
      const version = await store.put(state, current?.version ?? 0).catch((err: unknown) => {
        if (took !== undefined) this.slots.release(took);
        throw err;
      });
      if (version !== false) {
        if (took !== undefined) this.slots.settle(took);
        this.recent.set(key, { state, version });
        for (const [e, limit] of refused) this.refuse(e, limit);
        return alertsOf(state, now, this.timing);
      }
      if (took !== undefined) this.slots.release(took);
      this.recent.delete(key);
    }
    throw new Error(`state of ${key} kept changing under concurrent writers`);
  }

  private refuse(e: NormalisedEvent, limit: 'namespace' | 'total'): void {
    this.metrics.alertsRefused.inc({ destination: this.name, namespace: e.namespace, limit });
    const max =
      limit === 'namespace'
        ? `maxAlertsPerNamespace (${this.settings.maxAlertsPerNamespace})`
        : `maxAlerts (${this.settings.maxAlerts})`;
    this.refusals.error(
      `alert-limit-${limit}`,
      new Error(`the ${limit === 'namespace' ? 'namespace' : 'destination'} holds ${max} alert states`),
      { namespace: e.namespace, integration: e.integration, limit },
      'a new alert was refused: not kept, not sent to Alertmanager',
    );
  }

  /** The counts stored by the last re-send, else counted now (a first start: one pass over the states). */
  private async loadCounts(store: AlertStore): Promise<void> {
    const stored = await store.loadCounts();
    if (stored) {
      this.slots.counted(stored);
      return;
    }
    const counts: AlertCounts = {};
    await this.eachPage(store, async (states) => {
      for (const st of states) count(counts, st);
    });
    this.slots.counted(counts);
  }

  /** Reads the states a page at a time (a page of keys, then their values) and hands each page on. */
  private async eachPage(store: AlertStore, onPage: (states: AlertState[]) => Promise<void>): Promise<void> {
    const run = async (keys: string[]): Promise<void> => {
      const page = await Promise.all(keys.map((k) => store.get(k)));
      await onPage(page.filter((v) => v !== undefined).map((v) => v.state));
      // Other work (requests, deliveries) runs between pages.
      await new Promise((resolve) => setImmediate(resolve));
    };
    let keys: string[] = [];
    for await (const key of store.keys()) {
      keys.push(key);
      if (keys.length < MAX_ALERTS_PER_POST) continue;
      await run(keys);
      keys = [];
    }
    if (keys.length > 0) await run(keys);
  }

  /** Every batch to every Alertmanager; a batch is delivered when one of them took it. */
  private async postToAll(alerts: PostableAlert[], headers = JSON_BODY): Promise<Outcome> {
    const started = performance.now();
    try {
      for (let from = 0; from < alerts.length; from += MAX_ALERTS_PER_POST) {
        const body = JSON.stringify(alerts.slice(from, from + MAX_ALERTS_PER_POST));
        const results = await Promise.all(
          this.settings.urls.map((url) => this.client.post(`${url}/api/v2/alerts`, body, headers)),
        );
        if (results.some((r) => r.kind === 'accepted')) continue;
        return worstOf(results, this.settings.urls);
      }
      return { kind: 'accepted' };
    } finally {
      this.metrics.requestDuration.observe({ destination: this.name }, (performance.now() - started) / 1000);
    }
  }

  /** Starts the periodic re-send of every kept alert state. */
  start(): void {
    const tick = (): void => {
      if (this.paused()) return;
      this.resending ??= this.resend().finally(() => (this.resending = undefined));
    };
    this.resendTimer = setInterval(tick, this.settings.resendIntervalMs);
    this.resendTimer.unref();
  }

  /**
   * One re-send round, when this replica holds the lease: forgets spent states, sends the rest a
   * page at a time, and stores the count per namespace for every replica's caps. A replica
   * without the lease only reads those counts.
   */
  async resend(): Promise<void> {
    const store = this.store();
    if (!store) return;
    try {
      // Held for two intervals: if this replica stops, another takes over well before alerts expire (4).
      if (!(await store.holdResendLease(this.holder, 2 * this.settings.resendIntervalMs))) {
        this.metrics.resends.inc({ destination: this.name, result: 'skipped' });
        const stored = await store.loadCounts();
        if (stored) {
          this.slots.counted(stored);
          this.countsLoaded ??= Promise.resolve();
        }
        return;
      }
      this.slots.startRound();
      const now = Date.now();
      const counts: AlertCounts = {};
      let firing = 0;
      let resolved = 0;
      let sent = 0;
      let failure: string | undefined;
      await this.eachPage(store, async (states) => {
        const alerts: PostableAlert[] = [];
        for (const listed of states) {
          if (isSpent(listed, now, this.timing)) {
            this.recent.delete(listed.key);
            await store.delete(listed.key);
            continue;
          }
          const state = (await this.expireIfDue(store, listed, now)) ?? listed;
          // A state this replica created since the round began is counted by its place, not here.
          if (!this.slots.createdThisRound(state.key)) count(counts, state);
          if (state.resolvedAt) resolved++;
          else firing++;
          alerts.push(...alertsOf(state, now, this.timing));
        }
        if (alerts.length === 0) return;
        const outcome = await this.postToAll(alerts);
        sent += alerts.length;
        if (outcome.kind !== 'accepted') failure ??= outcome.error;
      });
      // The states the round saw, plus those created (or being created) while it ran, which it
      // may or may not have seen: counted once each, by their places.
      const all = this.slots.endRound(counts);
      this.countsLoaded ??= Promise.resolve();
      await store.saveCounts(all);
      this.metrics.alerts.set({ destination: this.name, state: 'firing' }, firing);
      this.metrics.alerts.set({ destination: this.name, state: 'resolved' }, resolved);
      if (sent === 0) return;
      this.metrics.resends.inc({ destination: this.name, result: failure === undefined ? 'ok' : 'failed' });
      if (failure !== undefined)
        this.logger.warn({ alerts: sent, error: failure }, 'alert re-send failed; trying again next interval');
    } catch (err) {
      this.slots.abandonRound();
      this.metrics.resends.inc({ destination: this.name, result: 'failed' });
      this.logger.warn(
        { err: { message: (err as Error).message } },
        'alert re-send failed; trying again next interval',
      );
    }
  }

  /** Resolves a firing alert past resolveAfter; an event that arrived meanwhile wins (compare-and-set). */
  private async expireIfDue(store: AlertStore, listed: AlertState, now: number): Promise<AlertState | undefined> {
    if (!expire(listed, now, this.settings.resolveAfterMs)) return undefined;
    const current = await store.get(listed.key);
    const expired = current && expire(current.state, now, this.settings.resolveAfterMs);
    if (!current || !expired) return current?.state;
    this.recent.delete(listed.key);
    return (await store.put(expired, current.version)) !== false ? expired : (await store.get(listed.key))?.state;
  }

  async close(): Promise<void> {
    clearInterval(this.resendTimer);
    await this.resending;
    await this.client.close();
  }
}

/** One batch's post: whether it has started, when it is over, and the posts it must follow. */
class PostTurn {
  started = false;
  readonly after: Array<Promise<void>> = [];
  finish!: () => void;
  readonly finished = new Promise<void>((resolve) => (this.finish = resolve));
}

/** No Alertmanager took the batch: retry unless every one refused it outright. */
function worstOf(results: Outcome[], urls: readonly string[]): Outcome {
  const errors = results.map((r, i) => (r.kind === 'accepted' ? '' : `${urls[i]}: ${r.error}`)).join('; ');
  const retries = results.filter((r): r is Extract<Outcome, { kind: 'retry' }> => r.kind === 'retry');
  if (retries.length === 0) {
    const first = results[0] as Extract<Outcome, { kind: 'reject' }>;
    return { kind: 'reject', reason: first.reason, error: errors };
  }
  const waits = retries.map((r) => r.retryAfterMs).filter((ms): ms is number => ms !== undefined);
  const first = retries[0] as Extract<Outcome, { kind: 'retry' }>;
  return {
    kind: 'retry',
    reason: first.reason,
    error: errors,
    ...(waits.length > 0 ? { retryAfterMs: Math.min(...waits) } : {}),
  };
}

/** Counts a kept state under its namespace (the label; every state carries it). */
function count(counts: AlertCounts, s: AlertState): void {
  const ns = s.labels.namespace ?? '';
  counts[ns] = (counts[ns] ?? 0) + 1;
}
