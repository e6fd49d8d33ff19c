/**
 * The Alertmanager destination. Each event updates its alert state in the durable store first,
 * then the resulting alerts are POSTed to every configured Alertmanager (an HA set is never load
 * balanced: each instance must see every alert), in batches of at most 256 as Prometheus sends
 * them. A delivery counts when at least one Alertmanager took it; the others catch up at the next
 * re-send. Firing alerts are re-sent every resendInterval by one replica (a lease in the store),
 * because Alertmanager keeps alerts in memory and forgets them when it restarts.
 */
import type { Logger } from 'pino';
import type { NormalisedEvent } from '../events.js';
import type { AlertStore } from './alert-store.js';
import { alertKey, alertsOf, applyEvent, expire, isSpent, type AlertState, type PostableAlert, type Timing } from './alerts.js';
import type { Destination } from './destination.js';
import { OutboundClient } from '../outbound/http-client.js';
import type { Outcome } from '../outbound/outcome.js';
import type { DestinationMetrics } from './metrics.js';
import type { AlertmanagerSettings } from './settings.js';

const JSON_BODY = { 'content-type': 'application/json' };

/** Prometheus' notifier batch size. */
export const MAX_ALERTS_PER_POST = 256;
/** Compare-and-set rounds before a state write is given up (and the event retried later). */
const MAX_CAS_ROUNDS = 8;

export class AlertmanagerDestination implements Destination {
  readonly kind = 'alertmanager';
  readonly maxBatch = MAX_ALERTS_PER_POST;
  private readonly client: OutboundClient;
  private readonly timing: Timing;
  private resendTimer?: NodeJS.Timeout;
  private resending?: Promise<void>;
  private readonly logger: Logger;

  constructor(
    readonly name: string,
    private readonly s: AlertmanagerSettings,
    /** The store, once it can be used (the bus may still be connecting). */
    private readonly store: () => AlertStore | undefined,
    private readonly metrics: DestinationMetrics,
    logger: Logger,
    private readonly holder: string,
  ) {
    this.client = new OutboundClient({ where: `destinations.${name}.alertmanager`, auth: s, timeoutMs: s.timeoutMs, maxConnections: 4 });
    this.timing = { resendIntervalMs: s.resendIntervalMs, resolvedRetentionMs: s.resolvedRetentionMs };
    this.logger = logger.child({ destination: name });
  }

  async send(events: readonly NormalisedEvent[]): Promise<Outcome> {
    const store = this.store();
    if (!store) return { kind: 'retry', reason: 'state_store', error: 'the alert state store is not available yet' };
    const alerts = new Map<string, PostableAlert>();
    // Different alerts are independent: their states are written concurrently; the events of one
    // alert in order.
    const byKey = new Map<string, NormalisedEvent[]>();
    for (const e of events) {
      const key = alertKey(e);
      const list = byKey.get(key);
      if (list) list.push(e);
      else byKey.set(key, [e]);
    }
    try {
      const sends = await Promise.all(
        [...byKey.entries()].map(async ([key, list]) => {
          let last: PostableAlert[] = [];
          for (const e of list) last = await this.apply(store, key, e);
          return last;
        }),
      );
      for (const list of sends) for (const a of list) alerts.set(JSON.stringify(a.labels), a);
    } catch (err) {
      return { kind: 'retry', reason: 'state_store', error: `alert state not written: ${(err as Error).message}` };
    }
    if (alerts.size === 0) return { kind: 'delivered' };
    return this.postToAll([...alerts.values()]);
  }

  /** The alerts one event leads to, after its state is stored. A redelivered event sends its state again. */
  private async apply(store: AlertStore, key: string, e: NormalisedEvent): Promise<PostableAlert[]> {
    for (let round = 0; round < MAX_CAS_ROUNDS; round++) {
      const now = Date.now();
      const current = await store.get(key);
      const { next, changed } = applyEvent(current?.state, e, now);
      if (!changed) return next && next.lastEventId === e.id ? alertsOf(next, now, this.timing) : [];
      if (next && (await store.put(next, current?.version ?? 0))) return alertsOf(next, now, this.timing);
    }
    throw new Error(`state of ${key} kept changing under concurrent writers`);
  }

  /** Every batch to every Alertmanager; a batch is delivered when one of them took it. */
  private async postToAll(alerts: PostableAlert[]): Promise<Outcome> {
    const started = performance.now();
    try {
      for (let from = 0; from < alerts.length; from += MAX_ALERTS_PER_POST) {
        const body = JSON.stringify(alerts.slice(from, from + MAX_ALERTS_PER_POST));
        const results = await Promise.all(this.s.urls.map((url) => this.client.post(`${url}/api/v2/alerts`, body, JSON_BODY)));
        if (results.some((r) => r.kind === 'delivered')) continue;
        return worstOf(results, this.s.urls);
      }
      return { kind: 'delivered' };
    } finally {
      this.metrics.requestDuration.observe({ destination: this.name }, (performance.now() - started) / 1000);
    }
  }

  /** Starts the periodic re-send of every kept alert state. */
  start(): void {
    const tick = (): void => {
      this.resending ??= this.resend().finally(() => (this.resending = undefined));
    };
    this.resendTimer = setInterval(tick, this.s.resendIntervalMs);
    this.resendTimer.unref();
  }

  /** One re-send round, when this replica holds the lease: forgets spent states, sends the rest. */
  async resend(): Promise<void> {
    const store = this.store();
    if (!store) return;
    try {
      // Held for two intervals: if this replica stops, another takes over well before alerts expire (4).
      if (!(await store.holdResendLease(this.holder, 2 * this.s.resendIntervalMs))) {
        this.metrics.resends.inc({ destination: this.name, result: 'skipped' });
        return;
      }
      const now = Date.now();
      const alerts: PostableAlert[] = [];
      let firing = 0;
      let resolved = 0;
      for (const listed of await store.list()) {
        if (isSpent(listed, now, this.timing)) {
          await store.delete(listed.key);
          continue;
        }
        const state = (await this.expireIfDue(store, listed, now)) ?? listed;
        if (state.resolvedAt) resolved++;
        else firing++;
        alerts.push(...alertsOf(state, now, this.timing));
      }
      this.metrics.alerts.set({ destination: this.name, state: 'firing' }, firing);
      this.metrics.alerts.set({ destination: this.name, state: 'resolved' }, resolved);
      if (alerts.length === 0) return;
      const outcome = await this.postToAll(alerts);
      this.metrics.resends.inc({ destination: this.name, result: outcome.kind === 'delivered' ? 'ok' : 'failed' });
      if (outcome.kind !== 'delivered') this.logger.warn({ alerts: alerts.length, error: outcome.error }, 'alert re-send failed; trying again next interval');
    } catch (err) {
      this.metrics.resends.inc({ destination: this.name, result: 'failed' });
      this.logger.warn({ err: { message: (err as Error).message } }, 'alert re-send failed; trying again next interval');
    }
  }

  /** Resolves a firing alert past resolveAfter; an event that arrived meanwhile wins (compare-and-set). */
  private async expireIfDue(store: AlertStore, listed: AlertState, now: number): Promise<AlertState | undefined> {
    if (!expire(listed, now, this.s.resolveAfterMs)) return undefined;
    const current = await store.get(listed.key);
    const expired = current && expire(current.state, now, this.s.resolveAfterMs);
    if (!current || !expired) return current?.state;
    return (await store.put(expired, current.version)) ? expired : (await store.get(listed.key))?.state;
  }

  async close(): Promise<void> {
    clearInterval(this.resendTimer);
    await this.resending;
    await this.client.close();
  }
}

/** No Alertmanager took the batch: retry unless every one refused it outright. */
function worstOf(results: Outcome[], urls: readonly string[]): Outcome {
  const errors = results.map((r, i) => (r.kind === 'delivered' ? '' : `${urls[i]}: ${r.error}`)).join('; ');
  const retries = results.filter((r): r is Extract<Outcome, { kind: 'retry' }> => r.kind === 'retry');
  if (retries.length === 0) {
    const first = results[0] as Extract<Outcome, { kind: 'reject' }>;
    return { kind: 'reject', reason: first.reason, error: errors };
  }
  const waits = retries.map((r) => r.retryAfterMs).filter((ms): ms is number => ms !== undefined);
  const first = retries[0] as Extract<Outcome, { kind: 'retry' }>;
  return { kind: 'retry', reason: first.reason, error: errors, ...(waits.length > 0 ? { retryAfterMs: Math.min(...waits) } : {}) };
}
