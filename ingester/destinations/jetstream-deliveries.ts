/**
 * Delivery from the bus: one durable pull consumer per destination on the events stream, so N
 * ingester replicas share the work and each event is delivered by one of them. Explicit acks: an
 * event is acknowledged after its destination took it, nak'ed with a delay to retry (the
 * consumer's delivery count is the attempt number, so it survives restarts), and terminated after
 * it was kept in the dead-letter store (dead-letters/bus-store.ts: the stream INTAKE_DEADLETTER). A replica that dies mid-delivery leaves its events
 * unacknowledged; the server hands them to another replica after ack_wait.
 *
 * Which events a consumer delivers: those whose integration names the destination (or, naming
 * none, when it is a default), looked up in the routing table at delivery time by the subject
 * (`<prefix>.<namespace>.<integration>`), so an event is not parsed to be routed; the rest are
 * acknowledged and skipped. A replayed dead letter is published on
 * `<prefix>.<namespace>.<integration>.<destination>` and goes to that destination only. (Earlier
 * versions marked a replay with the header `Intake-Destination` on the event's own subject; such a
 * message still in the stream at an upgrade goes to every destination of its integration: a
 * repeat for the others, never a loss.)
 */
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { parsedOnce, type Routing } from './destination.js';
import type { NormalisedEvent } from '../core/event.js';
import type { JetStreamSettings } from '../sinks/handoff-config.js';
import { eventSubject, readEventSubject, subjectsOf } from '../sinks/jetstream-stream.js';
import { PubAckPublisher } from '../sinks/pub-acks.js';
import { oneLine } from '../dead-letters/bus-store.js';
import { LetterTooLarge, type DeadLetterStore, type DeliveryDeadLetter } from '../dead-letters/model.js';
import type { AlertStore } from './alert-store.js';
import type { Dispatcher } from './dispatcher.js';
import { KvAlertStore } from './kv-alert-store.js';
import type { DestinationMetrics } from './metrics.js';
import { claimTimeoutMs, type DestinationSettings } from './settings.js';

export interface QueuedDestination {
  settings: DestinationSettings;
  dispatcher: Dispatcher;
}

const LAG_INTERVAL_MS = 10_000;
const RETRY_ATTACH_MS = 2000;

export class JetStreamDeliveries {
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
    private readonly settings: JetStreamSettings,
    private readonly destinations: readonly QueuedDestination[],
    private readonly routing: Routing,
    private readonly metrics: DestinationMetrics,
    /** Where events given up on are kept (the dead-letter store on the bus). */
    private readonly deadLetters: Pick<DeadLetterStore, 'put'>,
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
        const jsm = await jetstreamManager(nc, { timeout: this.settings.timeoutMs });
        const js = jetstream(nc, { timeout: this.settings.timeoutMs });
        let publisher: PubAckPublisher | undefined;
        for (const d of this.destinations) {
          await this.ensureConsumer(jsm, d);
          // Bound to this connection: a new connection gets new handles.
          if (d.settings.kind === 'alertmanager') {
            const bucket = `${this.settings.alertBucketPrefix}-${d.settings.name}`;
            const kv = await new Kvm(js).create(bucket, {
              history: 1,
              replicas: this.settings.streamConfig.replicas,
              storage: StorageType.File,
            });
            publisher ??= new PubAckPublisher(nc);
            this.stores.set(d.settings.name, new KvAlertStore(kv, bucket, publisher, this.settings.timeoutMs));
          }
        }
        this.jsm = jsm;
        this.js = js;
        for (const d of this.destinations) this.startConsuming(js, d);
        this.startLag();
        this.logger.info({ destinations: this.destinations.map((d) => d.settings.name) }, 'delivering from the bus');
        return;
      } catch (err) {
        this.logger.error(
          { err: { message: (err as Error).message }, retryInMs: RETRY_ATTACH_MS },
          'destination consumers not ready; trying again',
        );
        await sleep(RETRY_ATTACH_MS);
      }
    }
  }

  private async ensureConsumer(jsm: JetStreamManager, d: QueuedDestination): Promise<void> {
    const config = {
      durable_name: consumerName(d.settings.name),
      ack_policy: AckPolicy.Explicit,
      // A new destination starts with the events that arrived since this process started (so none
      // accepted while the consumer was being created is missed), not the stream's history.
      deliver_policy: DeliverPolicy.StartTime,
      opt_start_time: this.startedAt,
      filter_subject: subjectsOf(this.settings.subjectPrefix),
      ack_wait: nanos(claimTimeoutMs(d.settings)),
      // The attempt limit is intake's (then the dead letter), not the server's (which drops silently).
      max_deliver: -1,
      max_ack_pending: Math.max(1000, d.settings.delivery.maxInFlight * 4),
    };
    try {
      await jsm.consumers.add(this.settings.stream, config);
    } catch {
      // It exists with other settings (an upgrade changed a limit): keep its position, update what can change.
      await jsm.consumers.update(this.settings.stream, config.durable_name, {
        ack_wait: config.ack_wait,
        max_ack_pending: config.max_ack_pending,
      });
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
          const consumer = await js.consumers.get(this.settings.stream, consumerName(d.settings.name));
          const messages = await consumer.consume({
            max_messages: Math.min(
              d.settings.delivery.maxInFlight,
              Math.max(64, 2 * d.dispatcher.destination.maxBatch),
            ),
          });
          stopMessages = () => void messages.stop();
          if (stopped) messages.stop();
          for await (const m of messages) {
            await d.dispatcher.waitForSlot();
            this.handle(m, d);
          }
        } catch (err) {
          if (stopped || this.closing) return;
          this.logger.warn(
            { destination: d.settings.name, err: { message: (err as Error).message } },
            'consumer interrupted; resuming',
          );
          await sleep(RETRY_ATTACH_MS);
        }
      }
    })().finally(() => this.loops.delete(loop));
    this.loops.add(loop);
  }

  private handle(m: JsMsg, d: QueuedDestination): void {
    const name = d.settings.name;
    const event = parsedOnce(m.data);
    let where = readEventSubject(this.settings.subjectPrefix, m.subject);
    if (!where) {
      // Not a subject intake makes (an old replay subject): the event says where it belongs.
      try {
        where = event();
      } catch (err) {
        this.deadLetterRaw(m, name, 'unreadable', (err as Error).message).catch(() => undefined);
        return;
      }
    }
    if (where.onlyFor !== undefined ? where.onlyFor !== name : !this.routing.destinationsOf(where).includes(name)) {
      m.ack();
      return;
    }
    d.dispatcher.submit({
      json: m.data,
      event,
      attempt: m.info.deliveryCount,
      ack: async () => m.ack(),
      retry: async (delayMs) => m.nak(delayMs),
      deadLetter: (reason, error) => this.deadLetterRaw(m, name, reason, error),
    });
  }

  /** Keeps the event in the dead-letter store (once per message: the id is its stream position), then terminates it. */
  private async deadLetterRaw(m: JsMsg, destination: string, reason: string, error: string): Promise<void> {
    let event: NormalisedEvent | undefined;
    try {
      event = m.json<NormalisedEvent>();
    } catch {
      event = undefined;
    }
    if (event) {
      const letter = {
        kind: 'delivery',
        id: `${destination}-${m.info.streamSequence}`,
        namespace: event.namespace,
        integration: event.integration,
        destination,
        reason: oneLine(reason, 128),
        error: oneLine(error),
        attempts: m.info.deliveryCount,
        subject: m.subject,
        event,
      } as const;
      await this.deadLetters.put(letter).catch((err: Error) => {
        // Larger than a namespace's share: it can never be kept (the store counted the drop).
        if (!(err instanceof LetterTooLarge)) throw err;
      });
    } else {
      this.logger.error(
        { destination, subject: m.subject, seq: m.info.streamSequence, reason },
        'an unreadable message on the events stream was dropped',
      );
    }
    m.term(oneLine(reason, 128));
  }

  /** A replayed dead letter: published again, for its destination only (attempts start again). */
  async requeue(letter: DeliveryDeadLetter): Promise<void> {
    const js = this.js;
    if (!js) throw new Error('the bus is not connected');
    const subject = eventSubject(this.settings.subjectPrefix, {
      namespace: letter.event.namespace,
      integration: letter.event.integration,
      onlyFor: letter.destination,
    });
    await js.publish(subject, JSON.stringify(letter.event), { msgID: `${letter.event.id}~replay~${letter.id}` });
  }

  private startLag(): void {
    if (this.lagTimer) return;
    const measure = async (): Promise<void> => {
      const jsm = this.jsm;
      if (!jsm) return;
      for (const d of this.destinations) {
        const info = await jsm.consumers
          .info(this.settings.stream, consumerName(d.settings.name))
          .catch(() => undefined);
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

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());
