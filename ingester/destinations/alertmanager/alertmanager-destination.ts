/**
 * The Alertmanager destination. Each event updates its alert state in the durable store, and the
 * resulting alerts are POSTed to every configured Alertmanager (an HA set is never load balanced:
 * each instance must see every alert), in batches of at most 256 as Prometheus sends them; the
 * post goes out while the state is written, and the event counts as delivered once both are done
 * (send() says why that order is enough). A delivery counts when at least one Alertmanager took it; the others catch up at the next
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
import { writeAll, type AlertCounts, type AlertStore, type Versioned } from './alert-store.js';
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
/**
 * Connections to each Alertmanager: a quarter of the posts in flight by default (maxInFlight 8192 /
 * MAX_ALERTS_PER_POST), so Alertmanager always has eight posts and each connection more ready
 * behind its post, sent as soon as the answer is read. With four connections, while the loop
 * committed alert states (each post then waited for its batch's commit), a backlog had 1,024
 * alerts or more posted and unanswered 91% of the time while Alertmanager's core was idle a
 * quarter of it (docs/benchmarks.md).
 */
export const ALERTMANAGER_CONNECTIONS = 8;
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
  /** For each alert in a batch in flight, the batch holding its newest state (see send()). */
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
      maxConnections: ALERTMANAGER_CONNECTIONS,
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
    // This batch holds the newest state of its alerts from now on. Batches are in flight
    // concurrently and Alertmanager keeps whatever it was posted last: an alert a batch still in
    // flight holds is applied here once that batch is over (its state written, its posts answered).
    const turn = new PostTurn();
    const before: Array<Promise<void>> = [];
    for (const key of byKey.keys()) {
      const holder = this.posting.get(key);
      if (holder) before.push(holder.finished);
      this.posting.set(key, turn);
    }
    const headers = trace ? { ...JSON_BODY, ...carrierHeaders(trace) } : JSON_BODY;
    try {
      try {
        // One count for every batch: a second one replacing the first would forget the places taken between.
        this.countsLoaded ??= this.loadCounts(store).catch((err: unknown) => {
          this.countsLoaded = undefined;
          throw err;
        });
        await this.countsLoaded;
        if (before.length > 0) await Promise.all(before);
        // Prepared after the loop's I/O of this turn: a hand-out starts several batches at once
        // (each about 256 events parsed and applied), and the answers Alertmanager sent meanwhile
        // are read first, so each connection's next post goes out before that work, not after it
        // (from the outbox, 87% of Alertmanager alone against 84% in alternating runs).
        await new Promise((resolve) => setImmediate(resolve));
      } catch (err) {
        return { kind: 'retry', reason: 'state_store', error: `alert state not written: ${(err as Error).message}` };
      }
      const { parts, written, slow } = this.prepare(store, byKey);
      const unread = (await Promise.allSettled(slow)).find((p): p is PromiseRejectedResult => p.status === 'rejected');
      if (unread) {
        // Nothing posted: the writes started are only waited for, and the events sent again.
        await written;
        return {
          kind: 'retry',
          reason: 'state_store',
          error: `alert state not written: ${(unread.reason as Error).message}`,
        };
      }
      // The post does not wait for the states' writes: both are under way together, and the batch
      // is delivered once both are done. What makes that safe, and why a state must still be
      // written before the event is acknowledged, not before it is posted:
      // - the event is acknowledged only after this returns, and this returns `accepted` only once
      //   every state is written (committed; from the outbox a commit before the acknowledgement's
      //   in the same WAL). A crash or kill -9 before that leaves the event unacknowledged: it is
      //   delivered again, applied again to the state the store kept, written and posted again.
      //   Alertmanager takes the same alert twice as one (same labels; it keeps the earliest
      //   startsAt of an alert still firing), so at least once, nothing acknowledged is lost;
      // - a write that fails (the store is down) fails the batch: retried, as before, though
      //   Alertmanager may already hold the alert (a real one: an event fired it);
      // - a write that loses the compare-and-set (another writer, or a guess of this replica's gone
      //   stale: see prepare()) was posted from a state the store does not hold: the store's state
      //   is read, the events applied to it and written, and what Alertmanager must see posted
      //   again after the first post (the state's alerts, and those the first post sent that it no
      //   longer has, resolved now), before the batch counts as delivered;
      // - the alerts posted are those of the state written, at the same instant, so resolves and
      //   endsAt are what they were when the post waited for the write; the re-send reads only
      //   written states, and a state written after a round read the store is posted by its batch.
      const alerts: PostableAlert[] = [];
      for (const p of parts) for (const a of p.alerts) alerts.push(a);
      const posted = alerts.length > 0 ? this.postToAll(alerts, headers) : Promise.resolve(ACCEPTED);
      const lost = await written;
      const outcome = await posted;
      if (lost instanceof Error)
        return { kind: 'retry', reason: 'state_store', error: `alert state not written: ${lost.message}` };
      if (lost.length === 0 || outcome.kind !== 'accepted') return outcome;
      let again: PostableAlert[];
      try {
        again = (await Promise.all(lost.map((p) => this.correct(store, p)))).flat();
      } catch (err) {
        return { kind: 'retry', reason: 'state_store', error: `alert state not written: ${(err as Error).message}` };
      }
      return again.length > 0 ? await this.postToAll(again, headers) : outcome;
    } finally {
      turn.finish();
      for (const key of byKey.keys()) if (this.posting.get(key) === turn) this.posting.delete(key);
    }
  }

  /**
   * Each alert's events applied in order to its state in memory, the results' writes started
   * together (one putAll) and their alerts ready to post at once (the writes are awaited by send(),
   * after the post went out). The events start from the state this replica last wrote, or none
   * (a new alert), without reading the store: only a write that succeeds trusts that guess (see
   * correct()). Events that change nothing from the guess (a redelivery, an older event, a clear
   * of an alert not known here) ask the store instead, and wait for it as before (`slow`, their
   * parts added once read and written). `written`: the parts whose write lost the compare-and-set,
   * or the error of a write that failed (never a rejection: send() may await `slow` first).
   * One clock reading for the batch: its alerts share their endsAt.
   */
  private prepare(
    store: AlertStore,
    byKey: ReadonlyMap<string, readonly NormalisedEvent[]>,
  ): { parts: AlertPart[]; written: Promise<AlertPart[] | Error>; slow: Array<Promise<void>> } {
    const now = Date.now();
    const parts: AlertPart[] = [];
    const guessed: Guessed[] = [];
    const slow: Array<Promise<void>> = [];
    for (const [key, list] of byKey) {
      const guess = this.recent.get(key);
      const r = this.applyAll(guess?.state, list, now, key);
      if (!r.changed || !r.state) {
        slow.push(this.apply(store, key, list).then(({ alerts }) => void parts.push({ key, list, alerts })));
        continue;
      }
      const part = { key, list, alerts: alertsOf(r.state, now, this.timing) };
      parts.push(part);
      guessed.push({ part, state: r.state, version: guess?.version ?? 0, took: r.took, refused: r.refused });
    }
    if (guessed.length === 0) return { parts, written: Promise.resolve([]), slow };
    const written = writeAll(store, guessed).then(
      (versions): AlertPart[] | Error => {
        const lost: AlertPart[] = [];
        let failed: Error | undefined;
        versions.forEach((version, i) => {
          const g = guessed[i] as Guessed;
          if (version instanceof Error || version === false) {
            if (g.took !== undefined) this.slots.release(g.took);
            if (version instanceof Error) failed ??= version;
            else {
              this.recent.delete(g.part.key);
              lost.push(g.part);
            }
            return;
          }
          if (g.took !== undefined) this.slots.settle(g.took);
          this.recent.set(g.part.key, { state: g.state, version });
          for (const [e, limit] of g.refused) this.refuse(e, limit);
        });
        return failed ?? lost;
      },
      (err: unknown) => {
        for (const g of guessed) if (g.took !== undefined) this.slots.release(g.took);
        return err as Error;
      },
    );
    return { parts, written, slow };
  }

  /**
   * After a guess lost the compare-and-set: the events applied to the store's state and written,
   * and what to post again: that state's alerts, and those posted from the guess that it no
   * longer has, resolved now. Nothing when the first post already said the same.
   */
  private async correct(store: AlertStore, part: AlertPart): Promise<PostableAlert[]> {
    const { state, now } = await this.apply(store, part.key, part.list);
    const alerts = state ? alertsOf(state, now, this.timing) : [];
    const kept = new Set(alerts.map((a) => labelsKey(a.labels)));
    const endsAt = new Date(now).toISOString();
    for (const a of part.alerts)
      if (!kept.has(labelsKey(a.labels)))
        alerts.push({ ...a, endsAt: Date.parse(a.startsAt) > now ? a.startsAt : endsAt });
    return sameAlerts(alerts, part.alerts) ? [] : alerts;
  }

  /**
   * The events applied in order to `state`. An event that would start a new alert past a cap is
   * refused and the next ones go on without it; a new state takes a place under the caps (`took`)
   * before it is written, so concurrent creates see it.
   */
  private applyAll(
    from: AlertState | undefined,
    list: readonly NormalisedEvent[],
    now: number,
    key: string,
  ): { state: AlertState | undefined; changed: boolean; took?: Slot; refused: Refusal[] } {
    let state = from;
    let changed = false;
    let took: Slot | undefined;
    // Refusals are reported once, by the round whose result stands.
    const refused: Refusal[] = [];
    for (const e of list) {
      const applied = applyEvent(state, e, now, key);
      if (!applied.changed) continue;
      if (state === undefined && applied.next !== undefined) {
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
    return { state, changed, ...(took !== undefined ? { took } : {}), refused };
  }

  /**
   * The alerts one alert's events lead to, after its state is stored: the events are applied in
   * order to the state the store holds and the result written once (compare-and-set), since a storm
   * updates the same alerts again and again; a lost compare-and-set reads again. A redelivered event
   * sends its state again. Also the state the store holds in the end. (prepare() guesses the state
   * instead of reading it; this is the path for what a guess cannot decide, and for correct().)
   */
  private async apply(
    store: AlertStore,
    key: string,
    list: readonly NormalisedEvent[],
  ): Promise<{ alerts: PostableAlert[]; state: AlertState | undefined; now: number }> {
    for (let round = 0; round < MAX_CAS_ROUNDS; round++) {
      const now = Date.now();
      const current = await store.get(key);
      const { state, changed, took, refused } = this.applyAll(current?.state, list, now, key);
      if (!changed) {
        for (const [e, limit] of refused) this.refuse(e, limit);
        const alerts = state && list.some((e) => e.id === state.lastEventId) ? alertsOf(state, now, this.timing) : [];
        return { alerts, state, now };
      }
      if (!state) return { alerts: [], state, now };
      const version = await store.put(state, current?.version ?? 0).catch((err: unknown) => {
        if (took !== undefined) this.slots.release(took);
        throw err;
      });
      if (version !== false) {
        if (took !== undefined) this.slots.settle(took);
        this.recent.set(key, { state, version });
        for (const [e, limit] of refused) this.refuse(e, limit);
        return { alerts: alertsOf(state, now, this.timing), state, now };
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

/** One batch's turn at its alerts: over once its states are written and its posts answered. */
class PostTurn {
  finish!: () => void;
  readonly finished = new Promise<void>((resolve) => (this.finish = resolve));
}

/** One alert's part of a batch: what is posted for it at once. */
interface AlertPart {
  key: string;
  list: readonly NormalisedEvent[];
  alerts: PostableAlert[];
}

/** A part applied to the state this replica guessed, to write (compare-and-set on `version`). */
interface Guessed {
  part: AlertPart;
  state: AlertState;
  version: number;
  took: Slot | undefined;
  refused: Refusal[];
}

type Refusal = [NormalisedEvent, 'namespace' | 'total'];

const ACCEPTED: Outcome = { kind: 'accepted' };

/** An alert's identity in Alertmanager: its label set, whatever the order of the keys. */
function labelsKey(labels: Record<string, string>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Whether two lists of alerts say the same, in the same order. */
function sameAlerts(a: readonly PostableAlert[], b: readonly PostableAlert[]): boolean {
  return a.length === b.length && a.every((x, i) => JSON.stringify(x) === JSON.stringify(b[i]));
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
