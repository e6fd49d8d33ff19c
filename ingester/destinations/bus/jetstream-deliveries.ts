/**
 * Delivery from the bus: durable pull consumers per destination on the events stream, so N
 * ingester replicas share the work and each message is delivered by one of them. A message holds
 * a request's events (sinks/bus-messages.ts), each delivered and settled on its own, and the
 * message is settled once all of them are (message-settlement.ts). Explicit acks: a message is
 * acknowledged after its destination took its events (or they were kept in the dead-letter
 * store, dead-letters/bus-store.ts: the stream INTAKE_DEADLETTER), nak'ed with a delay to retry
 * the rest (the consumer's delivery count is the attempt number, so it survives restarts). A
 * replica that dies mid-delivery leaves its messages unacknowledged; the server hands them to
 * another replica after ack_wait.
 *
 * One consumer per destination, `intake-<destination>` on `<prefix>.>` (sinks/jetstream-stream.ts);
 * a team destination's `<destination>` is `<namespace>_<name>` (busSafeDestinationName), and its
 * consumer is deleted with it. Dead-letter ids and the DoneEvents memory are keyed by the stream
 * sequence.
 *
 * Which events a consumer delivers: those whose integration names the destination (or, naming
 * none, when it is a default), looked up in the routing table at delivery time by the subject
 * (`<prefix>.<namespace>.<integration>`), so an
 * event is not parsed to be routed; the rest are
 * acknowledged and skipped. A replayed dead letter is published on
 * `<prefix>.<namespace>.<integration>.<destination>` and goes to that destination only.
 */
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  StorageType,
  type ConsumerInfo,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type MsgRequest,
} from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import type { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { growingLru } from '../../../common/growing-lru.js';
import { packReceivedAt, parseStored, type Routing } from '../destination.js';
import type { NormalisedEvent } from '../../core/event.js';
import type { JetStreamSettings } from '../../sinks/handoff-config.js';
import { eventsOf } from '../../sinks/bus-messages.js';
import { eventSubject, readEventSubject, subjectsOf, subjectToken } from '../../sinks/jetstream-stream.js';
import { PubAckPublisher } from '../../sinks/pub-acks.js';
import { oneLine } from '../../dead-letters/bus-store.js';
import {
  deliveryLetterId,
  LetterTooLarge,
  type DeadLetterStore,
  type DeliveryDeadLetter,
} from '../../dead-letters/model.js';
import type { AlertStore } from '../alertmanager/alert-store.js';
import type { Delivery, Dispatcher } from '../dispatcher.js';
import { KvAlertStore } from '../alertmanager/kv-alert-store.js';
import type { DestinationPause } from '../protection/pause.js';
import type { KvPauseStore } from '../protection/pause-kv-store.js';
import { DoneEvents, MessageEventDelivery, MessageSettlement } from '../message-settlement.js';
import type { DestinationMetrics } from '../metrics.js';
import { claimTimeoutMs, type DestinationSettings } from '../settings.js';
import { busSafeDestinationName } from '../../../api/destination-document.js';
import { carriedTrace } from '../../tracing/tracing.js';
import { ShareWaitList } from './share-wait-list.js';
import { NamespaceConsumers, namespaceConsumerName, namespaceOfConsumer } from './namespace-consumers.js';

export interface QueuedDestination {
  settings: DestinationSettings;
  dispatcher: Dispatcher;
  /** While paused its consumers pull nothing: the messages wait in the stream, unclaimed. */
  pause?: DestinationPause;
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
  /** Each consumer's loop, by consumer name: a destination removed while running waits for its own. */
  private readonly loopOf = new Map<string, Promise<void>>();
  /** The destinations delivered now: the platform's, and teams' added and removed while running. */
  private readonly destinations: QueuedDestination[];
  private lagTimer?: NodeJS.Timeout;
  /** Per destination: which events of a nak'ed message this replica already settled. */
  private readonly done: Map<string, DoneEvents>;
  /**
   * Per destination: how many times this replica handed a message back unsent (the circuit was
   * open). The server counts those redeliveries too; they are not attempts, so they are taken off
   * its delivery count. Per replica and bounded: a message that moves to another replica, or whose
   * entry was dropped, counts them (it may then reach maxAttempts sooner, never later).
   */
  private readonly held: Map<string, LRUCache<number, number>>;
  /**
   * Per platform destination: its namespaces, and those with a consumer of their own
   * (bus/namespace-consumers.ts). A team's destination has one namespace and none.
   */
  private readonly namespaceConsumers = new Map<string, NamespaceConsumers>();
  /** Per destination, per consumer: messages waiting for a namespace's share (the gauge is their sum). */
  private readonly waitingForShare = new Map<string, Map<string, number>>();
  private closing = false;
  private readonly logger: Logger;
  private readonly startedAt = new Date().toISOString();

  constructor(
    private readonly settings: JetStreamSettings,
    destinations: readonly QueuedDestination[],
    private readonly routing: Routing,
    private readonly metrics: DestinationMetrics,
    /** Where events given up on are kept (the dead-letter store on the bus). */
    private readonly deadLetters: Pick<DeadLetterStore, 'put'>,
    logger: Logger,
    /** The destinations' runtime pauses, shared by every replica through the bus. */
    private readonly pauses?: KvPauseStore,
  ) {
    this.logger = logger;
    this.destinations = [...destinations];
    // Twice as many messages as its consumer may have unacknowledged.
    this.done = new Map(destinations.map((d) => [d.settings.name, new DoneEvents(2 * maxAckPending(d.settings))]));
    this.held = new Map(
      destinations.map((d) => [d.settings.name, growingLru<number, number>(2 * maxAckPending(d.settings))]),
    );
    for (const d of destinations) this.trackNamespaces(d);
  }

  private trackNamespaces(d: QueuedDestination): void {
    if (d.settings.namespace === undefined && !this.namespaceConsumers.has(d.settings.name))
      this.namespaceConsumers.set(d.settings.name, new NamespaceConsumers(maxAckPending(d.settings)));
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
        // Bound to this connection: a new connection gets new handles.
        let publisher: PubAckPublisher | undefined;
        const publisherOf = (): PubAckPublisher => (publisher ??= new PubAckPublisher(nc));
        // Every destination, also a team's added meanwhile (add() saw no connection yet and left it
        // to this): none is left between the last one prepared and the handles being set below.
        const prepared = new Set<QueuedDestination>();
        for (let d = this.unprepared(prepared); d; d = this.unprepared(prepared)) {
          await this.prepare(jsm, js, d, publisherOf);
          prepared.add(d);
        }
        // Before any consumer pulls: a destination paused on another replica (or before a restart) stays paused.
        await this.pauses?.attach(
          js,
          this.destinations.map((d) => d.settings.name),
          this.settings.streamConfig.replicas,
        );
        this.jsm = jsm;
        this.js = js;
        this.publisher = publisher;
        for (const d of this.destinations) for (const c of this.consumersOf(d)) this.startConsuming(js, d, c);
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

  private publisher?: PubAckPublisher;

  private unprepared(prepared: ReadonlySet<QueuedDestination>): QueuedDestination | undefined {
    return this.destinations.find((d) => !prepared.has(d));
  }

  private async openAlertStore(js: JetStreamClient, d: QueuedDestination, publisher: PubAckPublisher): Promise<void> {
    const bucket = `${this.settings.alertBucketPrefix}-${busSafeDestinationName(d.settings.name)}`;
    const kv = await new Kvm(js).create(bucket, {
      history: 1,
      replicas: this.settings.streamConfig.replicas,
      storage: StorageType.File,
    });
    this.stores.set(d.settings.name, new KvAlertStore(kv, bucket, publisher, this.settings.timeoutMs));
  }

  /**
   * A destination's consumers and its alert store. New consumers start with this process (a
   * platform destination: none accepted while they were being created is missed), or, for a team's,
   * now: the integrations naming it before it existed sent those events nowhere, and a replica
   * that was disconnected for days must not deliver them all on reconnecting.
   */
  private async prepare(
    jsm: JetStreamManager,
    js: JetStreamClient,
    d: QueuedDestination,
    publisherOf: () => PubAckPublisher,
  ): Promise<void> {
    await this.ensureConsumer(jsm, d, d.settings.namespace !== undefined ? new Date().toISOString() : this.startedAt);
    // Before its consumer pulls: the namespaces' own consumers (another replica's too) take their
    // messages. Not found now (no permission to list, a slow bus): the lag loop looks again, and
    // meanwhile a namespace's messages may be delivered twice, never lost.
    await this.findNamespaceConsumers(jsm, [d], false).catch((err: Error) => {
      this.logger.warn(
        { destination: d.settings.name, err: { message: err.message } },
        "the namespaces' own consumers were not listed",
      );
    });
    if (d.settings.kind === 'alertmanager') await this.openAlertStore(js, d, publisherOf());
  }

  /** A destination added while running (a team's `Destination`): its consumers start with the events that arrive from now on. */
  async add(d: QueuedDestination): Promise<void> {
    const name = d.settings.name;
    this.destinations.push(d);
    this.done.set(name, new DoneEvents(2 * maxAckPending(d.settings)));
    this.held.set(name, growingLru<number, number>(2 * maxAckPending(d.settings)));
    this.trackNamespaces(d);
    const { jsm, js, nc } = this;
    if (!jsm || !js || !nc || this.closing) return;
    for (;;) {
      try {
        await this.prepare(jsm, js, d, () => (this.publisher ??= new PubAckPublisher(nc)));
        break;
      } catch (err) {
        if (this.closing || nc !== this.nc || !this.destinations.includes(d)) return;
        this.logger.error(
          { destination: name, err: { message: (err as Error).message }, retryInMs: RETRY_ATTACH_MS },
          'destination consumers not ready; trying again',
        );
        await sleep(RETRY_ATTACH_MS);
      }
    }
    // A new connection meanwhile started every destination's consumers already.
    if (this.js === js && this.destinations.includes(d))
      for (const c of this.consumersOf(d)) this.startConsuming(js, d, c);
  }

  /**
   * Stops delivering to a destination and waits for its deliveries in flight to be settled.
   * `forget`: its consumers are deleted too (a team deleted its `Destination`: the events waiting
   * for it go with them); otherwise they keep their position (an update of its settings).
   */
  async remove(name: string, forget: boolean): Promise<void> {
    const d = this.destinations.find((x) => x.settings.name === name);
    if (!d) return;
    this.destinations.splice(this.destinations.indexOf(d), 1);
    const consumers = this.consumersOf(d);
    for (const c of consumers) this.stops.get(c.name)?.();
    await Promise.allSettled(consumers.map((c) => this.loopOf.get(c.name)));
    await d.dispatcher.idle();
    this.stores.delete(name);
    this.done.delete(name);
    this.held.delete(name);
    this.metrics.lag.remove({ destination: name });
    this.metrics.waitingForShare.remove({ destination: name });
    this.waitingForShare.delete(name);
    // Kept when its settings change (its namespaces' consumers keep their messages); gone with it.
    if (forget) this.namespaceConsumers.delete(name);
    const jsm = this.jsm;
    if (forget && jsm)
      for (const c of consumers)
        await jsm.consumers.delete(this.settings.stream, c.name).catch((err: Error) => {
          this.logger.warn(
            { destination: name, consumer: c.name, err: { message: err.message } },
            'the consumer of a removed destination was not deleted',
          );
        });
  }

  /** The destination's consumer, then its namespaces' own (bus/namespace-consumers.ts). */
  private consumersOf(d: QueuedDestination): DestinationConsumer[] {
    const main = {
      name: consumerName(busSafeDestinationName(d.settings.name)),
      subjectPrefix: this.settings.subjectPrefix,
    };
    const own = [...(this.namespaceConsumers.get(d.settings.name)?.known.keys() ?? [])].map((namespace) => ({
      name: namespaceConsumerName(main.name, namespace),
      subjectPrefix: main.subjectPrefix,
      namespace,
    }));
    return [main, ...own];
  }

  /**
   * The namespaces' own consumers of `destinations` (all: every platform destination), made by
   * any replica: each is recorded with its start, and started if `start` (else the caller starts
   * every consumer of the destination next).
   */
  private async findNamespaceConsumers(
    jsm: JetStreamManager,
    destinations: readonly QueuedDestination[] = this.destinations,
    start = true,
  ): Promise<void> {
    const wanted = destinations.filter((d) => this.namespaceConsumers.has(d.settings.name));
    if (wanted.length === 0) return;
    for await (const info of jsm.consumers.list(this.settings.stream)) {
      const from = info.config.opt_start_seq;
      if (from === undefined) continue;
      for (const d of wanted) {
        const [main] = this.consumersOf(d) as [DestinationConsumer];
        const namespace = namespaceOfConsumer(main.name, info.name);
        if (namespace !== undefined) this.foundNamespaceConsumer(d, main, namespace, from, start);
      }
    }
  }

  private foundNamespaceConsumer(
    d: QueuedDestination,
    main: DestinationConsumer,
    namespace: string,
    start: number,
    startConsuming = true,
  ): void {
    const known = this.namespaceConsumers.get(d.settings.name);
    if (!known?.found(namespace, start)) return;
    const name = namespaceConsumerName(main.name, namespace);
    this.logger.info(
      { destination: d.settings.name, namespace, consumer: name, fromSeq: start },
      "a namespace's messages are delivered by a consumer of its own",
    );
    if (startConsuming && this.js && this.destinations.includes(d) && !this.stops.has(name))
      this.startConsuming(this.js, d, { name, subjectPrefix: main.subjectPrefix, namespace });
  }

  /**
   * Makes `namespace` a consumer of its own, starting at `seq` (the message at hand); one made by
   * another replica meanwhile keeps its start. On failure the destination's consumer keeps
   * delivering the namespace's messages, and a later message tries again.
   */
  private async openNamespaceConsumer(
    d: QueuedDestination,
    main: DestinationConsumer,
    namespace: string,
    seq: number,
  ): Promise<void> {
    const jsm = this.jsm;
    const known = this.namespaceConsumers.get(d.settings.name);
    if (!jsm || !known) return;
    known.beginOpening(namespace);
    const name = namespaceConsumerName(main.name, namespace);
    try {
      let start = seq;
      try {
        await jsm.consumers.add(this.settings.stream, {
          ...this.consumerConfig(d, name),
          deliver_policy: DeliverPolicy.StartSequence,
          opt_start_seq: seq,
          filter_subject: `${main.subjectPrefix}.${subjectToken(namespace)}.>`,
        });
      } catch {
        // It exists (another replica made it first): its start holds.
        start = (await jsm.consumers.info(this.settings.stream, name)).config.opt_start_seq ?? seq;
      }
      this.foundNamespaceConsumer(d, main, namespace, start);
    } catch (err) {
      this.logger.warn(
        { destination: d.settings.name, namespace, consumer: name, err: { message: (err as Error).message } },
        "a namespace's own consumer was not made; the destination's consumer keeps its messages",
      );
    } finally {
      known.endOpening(namespace);
    }
  }

  /**
   * For the destination's consumer: true when the message is left to its namespace's own consumer
   * (acknowledged here, undelivered), after making that consumer if the namespace now holds too
   * much of this one's room.
   */
  private async leftToNamespace(d: QueuedDestination, c: DestinationConsumer, m: JsMsg): Promise<boolean> {
    const known = c.namespace === undefined ? this.namespaceConsumers.get(d.settings.name) : undefined;
    const seq = m.info.streamSequence;
    known?.saw(seq);
    // Most of the time no namespace holds its part: the subject is not even read.
    const namespace = known && !known.idle ? readEventSubject(c.subjectPrefix, m.subject)?.namespace : undefined;
    if (!known || namespace === undefined) return false;
    // From this message when it is the newest seen (it is left to the new consumer), else (a
    // redelivery) from past the newest: what this consumer fetched already stays its own, once.
    if (!known.isTheirs(namespace, seq) && known.shouldOpen(namespace))
      await this.openNamespaceConsumer(d, c, namespace, seq >= known.newestSeq ? seq : known.newestSeq + 1);
    if (!known.isTheirs(namespace, seq)) return false;
    m.ack();
    return true;
  }

  /** Sets the gauge of messages waiting for a namespace's share: the sum over the destination's consumers. */
  private reportWaiting(destination: string, consumer: string, size: number): void {
    let byConsumer = this.waitingForShare.get(destination);
    if (!byConsumer) this.waitingForShare.set(destination, (byConsumer = new Map()));
    byConsumer.set(consumer, size);
    let sum = 0;
    for (const n of byConsumer.values()) sum += n;
    this.metrics.waitingForShare.set({ destination }, sum);
  }

  private async ensureConsumer(jsm: JetStreamManager, d: QueuedDestination, startedAt = this.startedAt): Promise<void> {
    const [consumer] = this.consumersOf(d) as [DestinationConsumer];
    // A new destination starts with the events that arrived since this process started (so none
    // accepted while the consumer was being created is missed), not the stream's history.
    await this.ensureOneConsumer(jsm, d, consumer, startedAt);
  }

  private async ensureOneConsumer(
    jsm: JetStreamManager,
    d: QueuedDestination,
    c: DestinationConsumer,
    startTime: string,
  ): Promise<void> {
    const config = {
      ...this.consumerConfig(d, c.name),
      deliver_policy: DeliverPolicy.StartTime,
      opt_start_time: startTime,
      filter_subject: subjectsOf(c.subjectPrefix),
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

  /** What every consumer of the destination has alike. */
  private consumerConfig(d: QueuedDestination, name: string) {
    return {
      durable_name: name,
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(claimTimeoutMs(d.settings)),
      // The attempt limit is intake's (then the dead letter), not the server's (which drops silently).
      max_deliver: -1,
      max_ack_pending: maxAckPending(d.settings),
    };
  }

  private startConsuming(js: JetStreamClient, d: QueuedDestination, c: DestinationConsumer): void {
    let stopped = false;
    let stopMessages: (() => void) | undefined;
    let wakeStopped: () => void = () => undefined;
    const stoppedSignal = new Promise<void>((resolve) => (wakeStopped = resolve));
    // A namespace's messages past its share wait here instead of going back to the bus (bus/share-wait-list.ts).
    const atShare = new ShareWaitList(
      d.dispatcher,
      c.namespace === undefined
        ? shareWaitBytes(this.nc?.info?.max_payload)
        : namespacePrefetchBytes(this.nc?.info?.max_payload),
      claimTimeoutMs(d.settings) / 3,
      Date.now,
      (size) => this.reportWaiting(d.settings.name, c.name, size),
    );
    // Paused: stop pulling at once. What was fetched already is handed on and held (nak'ed,
    // not counted as an attempt); the rest waits in the stream, unclaimed, so nothing is handed
    // out again and again while it lasts.
    const unlisten = d.pause?.listen((paused) => {
      if (paused) stopMessages?.();
    });
    this.stops.set(c.name, () => {
      stopped = true;
      unlisten?.();
      stopMessages?.();
      atShare.stop('handed back unsent: delivery from this consumer stopped');
      wakeStopped();
    });
    const loop = (async () => {
      while (!stopped && !this.closing) {
        try {
          if (d.pause?.paused) {
            await Promise.race([d.pause.untilResumed(), stoppedSignal]);
            continue;
          }
          const consumer = await js.consumers.get(this.settings.stream, c.name);
          // Bounded in bytes, not messages: a message holds a request's events (up to the
          // server's max_payload), so a count of messages would not bound memory.
          const maxPayload = this.nc?.info?.max_payload;
          const messages = await consumer.consume({
            max_bytes: c.namespace === undefined ? prefetchBytes(maxPayload) : namespacePrefetchBytes(maxPayload),
          });
          stopMessages = () => void messages.stop();
          if (stopped || d.pause?.paused) messages.stop();
          for await (const m of messages) {
            if (await this.leftToNamespace(d, c, m)) continue;
            const deliveries = this.deliveriesOf(m, d, c);
            if (deliveries.length === 0) continue;
            if (atShare.keep({ deliveries, bytes: m.data.length, working: () => m.working() })) continue;
            await d.dispatcher.waitForRoom(deliveries.length, deliveries[0]?.namespace);
            for (const delivery of deliveries) d.dispatcher.submit(delivery);
          }
        } catch (err) {
          if (stopped || this.closing) return;
          this.logger.warn(
            { destination: d.settings.name, consumer: c.name, err: { message: (err as Error).message } },
            'consumer interrupted; resuming',
          );
          await sleep(RETRY_ATTACH_MS);
        }
      }
    })().finally(() => {
      this.loops.delete(loop);
      if (this.loopOf.get(c.name) === loop) this.loopOf.delete(c.name);
    });
    this.loops.add(loop);
    this.loopOf.set(c.name, loop);
  }

  /** The message's events this destination still has to deliver (none: the message is settled already). */
  private deliveriesOf(m: JsMsg, d: QueuedDestination, c: DestinationConsumer): Delivery[] {
    const name = d.settings.name;
    const pieces = eventsOf(m.data);
    let where = readEventSubject(c.subjectPrefix, m.subject);
    if (!where) {
      // Not a subject intake makes (an old replay subject): the event says where it belongs.
      try {
        where = parseStored(pieces[0] ?? m.data);
      } catch (err) {
        this.logger.error(
          {
            destination: name,
            subject: m.subject,
            seq: m.info.streamSequence,
            err: { message: (err as Error).message },
          },
          'an unreadable message on the events stream was dropped',
        );
        m.term('unreadable');
        return [];
      }
    }
    // Decided before it was published (a replay's one destination, or the routing rules' choice at
    // acceptance): the subject says it all. Else the integration's destinations as they are now.
    const decided = where.onlyFor !== undefined ? [where.onlyFor] : where.decided;
    if (!(decided ?? this.routing.destinationsOf(where)).includes(name)) {
      m.ack();
      return [];
    }
    const seq = m.info.streamSequence;
    const done = this.done.get(name) as DoneEvents;
    const doneBefore = done.of(seq);
    // A message published before the rules' decisions were carried (an older ingester's): with
    // routing rules each of its events is routed on its own here; the ones not for this destination
    // are not its to deliver.
    const perEvent = decided === undefined && this.routing.decidesPerEvent?.(where) === true;
    const forUs = (i: number): boolean =>
      !perEvent || this.routing.destinationsOf(where, () => readable(pieces[i] as Uint8Array)).includes(name);
    const indexes = pieces.map((_, i) => i).filter((i) => !doneBefore?.has(i) && forUs(i));
    const held = this.held.get(name) as LRUCache<number, number>;
    // What each namespace holds of the destination consumer's room (bus/namespace-consumers.ts).
    const namespaces = c.namespace === undefined ? this.namespaceConsumers.get(name) : undefined;
    if (namespaces && indexes.length > 0) namespaces.fetched(where.namespace, seq);
    const settlement = new MessageSettlement(
      {
        ack: () => {
          held.delete(seq);
          namespaces?.settled(where.namespace, seq);
          m.ack();
        },
        nak: (ms) => m.nak(ms),
        term: (reason) => {
          held.delete(seq);
          namespaces?.settled(where.namespace, seq);
          m.term(reason);
        },
        // The redelivery after the cool-off is not an attempt.
        hold: (ms) => {
          held.set(seq, (held.get(seq) ?? 0) + 1);
          m.nak(ms);
        },
      },
      seq,
      indexes.length,
      doneBefore,
      done,
    );
    const keep = async (json: Uint8Array | string, _index: number, reason: string, error: string): Promise<void> =>
      this.deadLetter(m, json, name, reason, error);
    const attempt = Math.max(1, m.info.deliveryCount - (held.get(seq) ?? 0));
    const receivedAt = packReceivedAt(pieces);
    // The hand-off's trace context, from the message's headers (read only while tracing is on).
    const trace = carriedTrace((name) => m.headers?.get(name) || undefined);
    return indexes.map(
      (i) =>
        new MessageEventDelivery(
          pieces[i] as Uint8Array,
          attempt,
          i,
          settlement,
          keep,
          d.settings.delivery.backoffMinMs,
          receivedAt,
          where.namespace,
          trace,
        ),
    );
  }

  /**
   * Keeps one event of a message in the dead-letter store, once per event and destination: its
   * id derives from both, so a redelivery after a crash, or a sender's re-send past the stream's
   * duplicate window, refused again, replaces the letter instead of adding one.
   */
  private async deadLetter(
    m: JsMsg,
    json: Uint8Array | string,
    destination: string,
    reason: string,
    error: string,
  ): Promise<void> {
    let event: NormalisedEvent | undefined;
    try {
      event = parseStored(json);
    } catch {
      event = undefined;
    }
    if (event) {
      const letter = {
        kind: 'delivery',
        id: deliveryLetterId(destination, event.id),
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
        'an unreadable event on the events stream was dropped',
      );
    }
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
    // One message per letter (its seq is never reused; its id is, by the event's next letter): a
    // replay that stopped before removing the letter publishes the same message again, which the
    // stream stores once within its duplicate window, while a later letter of the event is new.
    await js.publish(subject, JSON.stringify(letter.event), { msgID: `${letter.event.id}~replay~${letter.seq}` });
  }

  private startLag(): void {
    if (this.lagTimer) return;
    const measure = async (): Promise<void> => {
      const jsm = this.jsm;
      if (!jsm) return;
      // The namespaces' own consumers other replicas made since (bus/namespace-consumers.ts).
      await this.findNamespaceConsumers(jsm).catch((err: Error) => {
        this.logger.warn({ err: { message: err.message } }, "the namespaces' own consumers were not listed");
      });
      for (const d of [...this.destinations]) {
        const infos = await Promise.all(
          this.consumersOf(d).map((c) => jsm.consumers.info(this.settings.stream, c.name).catch(() => undefined)),
        );
        // None: it was removed meanwhile.
        if (infos.some((i) => i === undefined) || !this.destinations.includes(d)) continue;
        const lag = infos.reduce(
          (n, i) => n + (i as ConsumerInfo).num_pending + (i as ConsumerInfo).num_ack_pending,
          0,
        );
        this.metrics.lag.set({ destination: d.settings.name }, lag);
        const oldest = lag > 0 ? await this.oldestPendingMs(jsm, infos as ConsumerInfo[]) : undefined;
        this.metrics.oldestPending.set(
          { destination: d.settings.name },
          oldest === undefined ? 0 : Math.max(0, Date.now() - oldest) / 1000,
        );
      }
    };
    void measure();
    this.lagTimer = setInterval(() => void measure(), LAG_INTERVAL_MS);
    this.lagTimer.unref();
  }

  /**
   * When the oldest message a destination's consumers have not acknowledged was stored: the first
   * of their subjects after each one's ack floor (which moves only past messages all settled).
   */
  private async oldestPendingMs(jsm: JetStreamManager, infos: ConsumerInfo[]): Promise<number | undefined> {
    let oldest: number | undefined;
    for (const i of infos) {
      if (i.num_pending + i.num_ack_pending === 0 || !i.config.filter_subject) continue;
      // The server's message get takes next_by_subj with a start seq; the client's type omits it.
      const request = { seq: i.ack_floor.stream_seq + 1, next_by_subj: i.config.filter_subject };
      const msg = await jsm.streams
        .getMessage(this.settings.stream, request as unknown as MsgRequest)
        .catch(() => null);
      if (msg) oldest = Math.min(oldest ?? Infinity, msg.time.getTime());
    }
    return oldest;
  }

  /** Stops taking events, waits for those in flight to be settled. */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.lagTimer);
    this.pauses?.close();
    for (const stop of this.stops.values()) stop();
    await Promise.allSettled([...this.loops]);
    await Promise.all(this.destinations.map((d) => d.dispatcher.idle()));
  }
}

/** A destination's consumer (`<prefix>.>`). */
export const consumerName = (destination: string): string => `intake-${destination}`;

/** A destination's consumer: its durable name and the subject prefix it filters on. */
interface DestinationConsumer {
  name: string;
  subjectPrefix: string;
  /** A namespace's own consumer (bus/namespace-consumers.ts): that namespace's messages only. */
  namespace?: string;
}

/** Messages a destination's consumer may hold unacknowledged. */
const maxAckPending = (d: DestinationSettings): number => Math.max(1000, d.delivery.maxInFlight * 4);

/**
 * What a destination's consumer fetches ahead of delivery, in bytes: twice the largest message
 * (a pull must fit one), at least 4 MiB. The client also caps it at 100 messages.
 */
export const prefetchBytes = (maxPayload = 1024 * 1024): number => Math.max(4 * 1024 * 1024, 2 * maxPayload);

/** What a destination's consumer keeps of namespaces at their share (bus/share-wait-list.ts): twice its prefetch. */
const shareWaitBytes = (maxPayload?: number): number => 2 * prefetchBytes(maxPayload);

/**
 * A namespace's own consumer (bus/namespace-consumers.ts) fetches ahead, and keeps for its share,
 * the least a pull must fit: twice the largest message (2 MiB by default). It holds one namespace
 * already at its share, so more would only wait, and there may be one per such namespace.
 */
const namespacePrefetchBytes = (maxPayload = 1024 * 1024): number => 2 * maxPayload;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());

/** A stored event, or undefined when it cannot be read (then it goes where unmatched events go). */
function readable(json: Uint8Array): NormalisedEvent | undefined {
  try {
    return parseStored(json);
  } catch {
    return undefined;
  }
}
