/**
 * Delivery from the bus: one durable pull consumer per destination on the events stream, so N
 * ingester replicas share the work and each event is delivered by one of them. Explicit acks: an
 * event is acknowledged after its destination took it, nak'ed with a delay to retry (the
 * consumer's delivery count is the attempt number, so it survives restarts), and terminated after
 * it was written to the dead-letter stream. A replica that dies mid-delivery leaves its events
 * unacknowledged; the server hands them to another replica after ack_wait.
 *
 * Which events a consumer delivers: those whose integration names the destination (or, naming
 * none, when it is a default), looked up in the routing table at delivery time; the rest are
 * acknowledged and skipped. A replayed dead letter carries `Intake-Destination` and goes to that
 * destination only.
 */
import { AckPolicy, DeliverPolicy, DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { headers as natsHeaders, nanos, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { NormalisedEvent } from '../events.js';
import type { JetStreamSettings } from '../sinks/handoff-config.js';
import { subjectsOf } from '../sinks/jetstream-stream.js';
import type { AlertStore } from './alert-store.js';
import { oneLine, type DeadLetterItem, type DeadLetterQuery, type DeadLetterStore } from './dead-letters.js';
import type { Dispatcher } from './dispatcher.js';
import { KvAlertStore } from './kv-alert-store.js';
import type { DestinationMetrics } from './metrics.js';
import { claimTimeoutMs, type DestinationSettings } from './settings.js';

export interface QueuedDestination {
  settings: DestinationSettings;
  dispatcher: Dispatcher;
}

export interface Routing {
  /** The destinations an event goes to now (its integration's, else the defaults). */
  destinationsOf(e: NormalisedEvent): readonly string[];
}

/**
 * Headers of a dead letter. On an events-stream message, `destination` means "for this
 * destination only" (a replayed dead letter).
 */
const HEADER = {
  destination: 'Intake-Destination',
  reason: 'Intake-Reason',
  error: 'Intake-Error',
  attempts: 'Intake-Attempts',
  failedAt: 'Intake-Failed-At',
  subject: 'Intake-Subject',
} as const;
const LAG_INTERVAL_MS = 10_000;
const RETRY_ATTACH_MS = 2000;
const decoder = new TextDecoder();

export class JetStreamDeliveries implements DeadLetterStore {
  private nc?: NatsConnection;
  private js?: JetStreamClient;
  private jsm?: JetStreamManager;
  private readonly stores = new Map<string, AlertStore>();
  private readonly stops = new Map<string, () => void>();
  private readonly loops = new Set<Promise<void>>();
  private lagTimer?: NodeJS.Timeout;
  private closing = false;
  private readonly logger: Logger;
  private readonly startedAt = new Date().toISOString();

  constructor(
    private readonly s: JetStreamSettings,
    private readonly destinations: readonly QueuedDestination[],
    private readonly routing: Routing,
    private readonly metrics: DestinationMetrics,
    logger: Logger,
  ) {
    this.logger = logger;
  }

  /** The bus is up on `nc` (a first connect or a new connection): (re)attach every consumer to it. */
  attach(nc: NatsConnection): void {
    if (this.closing || nc === this.nc) return;
    this.nc = nc;
    for (const stop of this.stops.values()) stop();
    this.stops.clear();
    const run = this.attachTo(nc).finally(() => this.loops.delete(run));
    this.loops.add(run);
  }

  alertStore(destination: string): AlertStore | undefined {
    return this.stores.get(destination);
  }

  private async attachTo(nc: NatsConnection): Promise<void> {
    while (!this.closing && this.nc === nc && !nc.isClosed()) {
      try {
        const jsm = await jetstreamManager(nc, { timeout: this.s.timeoutMs });
        const js = jetstream(nc, { timeout: this.s.timeoutMs });
        await this.ensureDeadLetterStream(jsm);
        for (const d of this.destinations) {
          await this.ensureConsumer(jsm, d);
          // Bound to this connection: a new connection gets new handles.
          if (d.settings.kind === 'alertmanager') {
            const kv = await new Kvm(js).create(`${this.s.alertBucketPrefix}-${d.settings.name}`, { history: 1, replicas: this.s.streamConfig.replicas, storage: StorageType.File });
            this.stores.set(d.settings.name, new KvAlertStore(kv));
          }
        }
        this.jsm = jsm;
        this.js = js;
        for (const d of this.destinations) this.startConsuming(js, d);
        this.startLag();
        this.logger.info({ destinations: this.destinations.map((d) => d.settings.name) }, 'delivering from the bus');
        return;
      } catch (err) {
        this.logger.error({ err: { message: (err as Error).message }, retryInMs: RETRY_ATTACH_MS }, 'destination consumers not ready; trying again');
        await sleep(RETRY_ATTACH_MS);
      }
    }
  }

  private async ensureDeadLetterStream(jsm: JetStreamManager): Promise<void> {
    const name = this.s.deadLetterStream;
    const exists = await jsm.streams.info(name).then(
      () => true,
      () => false,
    );
    if (exists) return;
    await jsm.streams.add({
      name,
      subjects: [subjectsOf(this.s.deadLetterSubjectPrefix)],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      // A dead letter must never block delivery: when it is full the oldest entries go.
      discard: DiscardPolicy.Old,
      max_age: nanos(this.s.deadLetterMaxAgeSeconds * 1000),
      num_replicas: this.s.streamConfig.replicas,
    });
  }

  private async ensureConsumer(jsm: JetStreamManager, d: QueuedDestination): Promise<void> {
    const config = {
      durable_name: consumerName(d.settings.name),
      ack_policy: AckPolicy.Explicit,
      // A new destination starts with the events that arrived since this process started (so none
      // accepted while the consumer was being created is missed), not the stream's history.
      deliver_policy: DeliverPolicy.StartTime,
      opt_start_time: this.startedAt,
      filter_subject: subjectsOf(this.s.subjectPrefix),
      ack_wait: nanos(claimTimeoutMs(d.settings)),
      // The attempt limit is intake's (then the dead letter), not the server's (which drops silently).
      max_deliver: -1,
      max_ack_pending: Math.max(1000, d.settings.delivery.maxInFlight * 4),
    };
    try {
      await jsm.consumers.add(this.s.stream, config);
    } catch {
      // It exists with other settings (an upgrade changed a limit): keep its position, update what can change.
      await jsm.consumers.update(this.s.stream, config.durable_name, { ack_wait: config.ack_wait, max_ack_pending: config.max_ack_pending });
    }
  }

  private startConsuming(js: JetStreamClient, d: QueuedDestination): void {
    let stopped = false;
    let stopMessages: (() => void) | undefined;
    this.stops.set(d.settings.name, () => {
      stopped = true;
      stopMessages?.();
    });
    const loop = (async () => {
      while (!stopped && !this.closing) {
        try {
          const consumer = await js.consumers.get(this.s.stream, consumerName(d.settings.name));
          const messages = await consumer.consume({ max_messages: Math.min(d.settings.delivery.maxInFlight, Math.max(64, 2 * d.dispatcher.destination.maxBatch)) });
          stopMessages = () => void messages.stop();
          if (stopped) messages.stop();
          for await (const m of messages) {
            await d.dispatcher.waitForSlot();
            this.handle(m, d);
          }
        } catch (err) {
          if (stopped || this.closing) return;
          this.logger.warn({ destination: d.settings.name, err: { message: (err as Error).message } }, 'consumer interrupted; resuming');
          await sleep(RETRY_ATTACH_MS);
        }
      }
    })().finally(() => this.loops.delete(loop));
    this.loops.add(loop);
  }

  private handle(m: JsMsg, d: QueuedDestination): void {
    const name = d.settings.name;
    let event: NormalisedEvent;
    try {
      event = m.json<NormalisedEvent>();
    } catch (err) {
      this.deadLetterRaw(m, name, 'unreadable', (err as Error).message).catch(() => undefined);
      return;
    }
    const only = m.headers?.get(HEADER.destination);
    if (only ? only !== name : !this.routing.destinationsOf(event).includes(name)) {
      m.ack();
      return;
    }
    const attempt = m.info.deliveryCount;
    d.dispatcher.submit({
      event,
      attempt,
      ack: async () => m.ack(),
      retry: async (delayMs) => m.nak(delayMs),
      deadLetter: (reason, error) => this.deadLetterRaw(m, name, reason, error),
    });
  }

  /** Writes the event to the dead-letter stream (stored once per message), then terminates it. */
  private async deadLetterRaw(m: JsMsg, destination: string, reason: string, error: string): Promise<void> {
    const js = this.js;
    if (!js) throw new Error('the bus is not connected');
    const h = natsHeaders();
    h.set(HEADER.destination, destination);
    h.set(HEADER.reason, oneLine(reason, 128));
    h.set(HEADER.error, oneLine(error));
    h.set(HEADER.attempts, String(m.info.deliveryCount));
    h.set(HEADER.failedAt, new Date().toISOString());
    h.set(HEADER.subject, m.subject);
    await js.publish(`${this.s.deadLetterSubjectPrefix}.${destination}`, m.data, { msgID: `${destination}:${m.info.streamSequence}`, headers: h });
    m.term(oneLine(reason, 128));
  }

  async list(q: DeadLetterQuery): Promise<DeadLetterItem[]> {
    const jsm = this.requireJsm();
    const subject = q.destination ? `${this.s.deadLetterSubjectPrefix}.${q.destination}` : subjectsOf(this.s.deadLetterSubjectPrefix);
    const items: DeadLetterItem[] = [];
    if (q.seqs) {
      for (const seq of q.seqs) {
        const msg = await jsm.streams.getMessage(this.s.deadLetterStream, { seq }).catch(() => null);
        const item = msg ? toItem(msg) : undefined;
        if (item && (!q.destination || item.destination === q.destination)) items.push(item);
      }
      return items;
    }
    let seq = 1;
    while (items.length < q.limit) {
      // next_by_subj: the first message on the subject at or after seq (STREAM.MSG.GET, server 2.9+).
      const msg = await jsm.streams.getMessage(this.s.deadLetterStream, { seq, next_by_subj: subject } as never).catch(() => null);
      if (!msg) break;
      const item = toItem(msg);
      if (item) items.push(item);
      seq = msg.seq + 1;
    }
    return items;
  }

  async replay(q: DeadLetterQuery): Promise<number> {
    const jsm = this.requireJsm();
    const js = this.js as JetStreamClient;
    let replayed = 0;
    for (const item of await this.list(q)) {
      const h = natsHeaders();
      h.set(HEADER.destination, item.destination);
      await js.publish(item.subject ?? `${this.s.subjectPrefix}.replayed`, JSON.stringify(item.event), { msgID: `${item.event.id}~replay~${item.seq}`, headers: h });
      await jsm.streams.deleteMessage(this.s.deadLetterStream, item.seq, false);
      replayed++;
    }
    return replayed;
  }

  private requireJsm(): JetStreamManager {
    if (!this.jsm) throw new Error('the bus is not connected; dead letters cannot be read now');
    return this.jsm;
  }

  private startLag(): void {
    if (this.lagTimer) return;
    const measure = async (): Promise<void> => {
      const jsm = this.jsm;
      if (!jsm) return;
      for (const d of this.destinations) {
        const info = await jsm.consumers.info(this.s.stream, consumerName(d.settings.name)).catch(() => undefined);
        if (info) this.metrics.lag.set({ destination: d.settings.name }, info.num_pending + info.num_ack_pending);
      }
    };
    void measure();
    this.lagTimer = setInterval(() => void measure(), LAG_INTERVAL_MS);
    this.lagTimer.unref();
  }

  /** Stops taking events, waits for those in flight to be settled. */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.lagTimer);
    for (const stop of this.stops.values()) stop();
    await Promise.allSettled([...this.loops]);
    await Promise.all(this.destinations.map((d) => d.dispatcher.idle()));
  }
}

export const consumerName = (destination: string): string => `intake-${destination}`;

function toItem(msg: { seq: number; data: Uint8Array; header: { get(k: string): string }; time: Date }): DeadLetterItem | undefined {
  try {
    return {
      seq: msg.seq,
      destination: msg.header.get(HEADER.destination),
      reason: msg.header.get(HEADER.reason),
      error: msg.header.get(HEADER.error),
      attempts: Number(msg.header.get(HEADER.attempts)) || 0,
      failedAt: msg.header.get(HEADER.failedAt) || msg.time.toISOString(),
      ...(msg.header.get(HEADER.subject) ? { subject: msg.header.get(HEADER.subject) } : {}),
      event: JSON.parse(decoder.decode(msg.data)) as NormalisedEvent,
    };
  } catch {
    return undefined;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());
