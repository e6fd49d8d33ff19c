/**
 * The bus sink: a request's events are published to NATS JetStream as one message (or a few,
 * under the server's max_payload; bus-messages.ts) with a `Nats-Msg-Id` made from their ids, and
 * count as `processed` only on its PubAck. What the bus did not acknowledge within timeoutMs
 * (down, slow, full, misconfigured) goes to the local spool as the same message and counts as
 * `cached` once fsynced; without a spool, or when the spool refuses, the request fails (503) and
 * the sender's retry makes the same messages, so whatever did reach the bus is stored once.
 *
 * Nothing acknowledged ever lives only in this process: the NATS client's reconnect buffer is
 * never relied on (it is discarded on every dial), and while the connection is down the sink does
 * not publish at all but spools straight away.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import {
  connect,
  credsAuthenticator,
  nkeyAuthenticator,
  type NatsConnection,
  type NodeConnectionOptions,
} from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { spoolShareFull } from '../core/errors.js';
import type { NormalisedEvent } from '../core/event.js';
import type { JetStreamSettings, SpoolSettings } from './handoff-config.js';
import { HandoffMetrics } from './handoff-metrics.js';
import { InFlightLimit } from './in-flight.js';
import { ensureStream } from './jetstream-stream.js';
import { BusStorage } from './bus-storage.js';
import { busMessages } from './bus-messages.js';
import { PubAckPublisher, type PubOutcome } from './pub-acks.js';
import { SpoolReplayer } from './spool-replayer.js';
import { SinkError, type DecidedDestinations, type HandOffResult, type EventSink } from './sink.js';
import { Spool, SpoolError, type SpoolRecord, type SpooledRow } from './spool.js';
import type { TraceCarrier } from '../tracing/carrier.js';

export interface JetStreamSinkOptions {
  settings: JetStreamSettings;
  spool?: SpoolSettings;
  registry: Registry;
  logger: Logger;
  /** How long close() may spend handing the spool to the bus (the shutdown grace period). */
  drainTimeoutMs: number;
}

/** Longest wait between attempts to verify a misconfigured stream again. */
const MAX_VERIFY_BACKOFF_MS = 30_000;
/** At most one "publish refused" log line per this interval (a full stream refuses every event). */
const REFUSAL_LOG_INTERVAL_MS = 10_000;
/** NATS's default max_payload, until the server said its own. */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;
/** Room left in a message for its headers and the protocol line. */
const HEADER_ROOM = 1024;

/** How many events a message to publish (a bus message or a spooled one) holds. */
const eventsIn = (o: SpoolRecord): number => o.events ?? 1;

export class JetStreamSink implements EventSink {
  readonly name = 'jetstream';
  readonly spool?: Spool;
  private readonly metrics: HandoffMetrics;
  private readonly limit: InFlightLimit;
  private readonly replayer?: SpoolReplayer;
  private readonly logger: Logger;
  private readonly settings: JetStreamSettings;
  private nc?: NatsConnection;
  private publisher?: PubAckPublisher;
  private lastRefusalLog = 0;
  /** Whether the stream is refusing events for lack of storage (then this replica is unready unless its spool takes them). */
  private readonly busStorage: BusStorage;
  private up = false;
  private closing = false;
  /** Aborts the connect loop's sleeps on close. */
  private readonly stopping = new AbortController();
  private connecting?: Promise<void>;
  private upWaiters: Array<() => void> = [];
  private readonly connectedListeners: Array<(nc: NatsConnection) => void> = [];

  constructor(private readonly options: JetStreamSinkOptions) {
    this.settings = options.settings;
    this.logger = options.logger.child({ sink: 'jetstream' });
    if (options.spool)
      this.spool = new Spool(options.spool.path, options.spool.maxBytes, {
        maxBytesPerTenant: options.spool.maxBytesPerNamespace,
        logger: options.logger.child({ sink: 'jetstream' }),
      });
    const openProblem = this.spool?.unavailableReason;
    if (openProblem)
      this.logger.error(
        { reason: openProblem },
        'spool unavailable; events the bus cannot take are answered 503 until it opens',
      );
    this.metrics = new HandoffMetrics(options.registry, this.spool);
    this.limit = new InFlightLimit(this.settings.maxInFlight);
    this.busStorage = new BusStorage(this.settings, () => (this.up ? this.nc : undefined), this.logger);
    if (this.spool && options.spool) {
      const target = {
        isUp: () => this.up,
        publish: async (rows: SpooledRow[]) => (await this.publishBatch(rows)).map((o) => o === 'acked'),
      };
      this.replayer = new SpoolReplayer(
        this.spool,
        target,
        {
          batch: options.spool.replayBatch,
          backoffMinMs: options.spool.replayBackoffMinMs,
          backoffMaxMs: options.spool.replayBackoffMaxMs,
        },
        this.metrics,
        this.logger,
      );
    }
  }

  /** Connects in the background; waits up to timeoutMs for the bus so a healthy start begins `processed`. */
  async start(): Promise<void> {
    this.connecting = this.connectLoop();
    this.replayer?.start();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.settings.timeoutMs);
      this.upWaiters.push(() => (clearTimeout(timer), resolve()));
    });
  }

  /**
   * Called each time the bus is up with the stream verified (first connect, reconnect, a new
   * connection), so destination consumers can (re)attach to the same connection.
   */
  onConnected(listener: (nc: NatsConnection) => void): void {
    this.connectedListeners.push(listener);
    if (this.up && this.nc) listener(this.nc);
  }

  /**
   * Ready to acknowledge while the bus takes events or the spool can hold them (readiness). The
   * bus refusing for storage counts like a bus that is down: this replica then refuses requests
   * another one (with room in its spool) would take.
   */
  unavailable(): string | undefined {
    const busProblem = !this.up ? 'the bus is not connected' : this.busStorage.refusing();
    if (busProblem === undefined || this.spool?.canAccept()) return undefined;
    if (!this.spool) return `${busProblem} and there is no spool`;
    return `${busProblem} and the spool cannot take events (${this.spool.unavailableReason ?? 'full'})`;
  }

  /**
   * The events as bus messages; with routing rules, their subjects carry the destinations chosen
   * (bus-messages.ts). The hand-off's context goes in each message's headers (tracing on), and
   * is kept with a message that waits in the spool, whose replay sends it in the same headers.
   */
  async handOff(
    events: readonly NormalisedEvent[],
    decided?: DecidedDestinations,
    trace?: TraceCarrier,
  ): Promise<HandOffResult> {
    const outgoing: SpoolRecord[] = busMessages(this.settings.subjectPrefix, events, this.maxMessageBytes(), decided);
    if (trace) for (const o of outgoing) o.trace = trace;
    const acked = await this.publishAll(outgoing);
    const rest = outgoing.filter((_, i) => !acked[i]);
    // An event repeated within the request went once: it is held wherever its first copy is.
    const restEvents = rest.reduce((n, o) => n + eventsIn(o), 0);
    const acknowledged = events.length - restEvents;
    if (acknowledged > 0) this.metrics.sinkEvents.inc({ sink: this.name, outcome: 'processed' }, acknowledged);
    if (rest.length === 0) return { processed: acknowledged, cached: 0 };
    if (!this.spool)
      throw new SinkError(
        this.name,
        `the bus acknowledged ${acknowledged} of ${events.length} events and there is no spool`,
      );
    // A request's events are one namespace's: its share of the spool is charged.
    const tenant = events[0]?.namespace ?? '';
    try {
      await this.spool.append(rest.map((r) => ({ ...r, tenant })));
    } catch (err) {
      const reason = err instanceof SpoolError ? err.reason : 'write_failed';
      this.metrics.spoolAppendFailures.inc({ reason });
      // This namespace's share is full: a refusal for it alone, not a failing sink.
      if (reason === 'tenant_full')
        throw spoolShareFull(tenant, this.spool.maxBytesPerTenant, acknowledged, events.length);
      throw new SinkError(
        this.name,
        `the bus acknowledged ${acknowledged} of ${events.length} events and the spool refused the rest: ${(err as Error).message}`,
        { cause: err },
      );
    }
    this.metrics.sinkEvents.inc({ sink: this.name, outcome: 'cached' }, restEvents);
    return { processed: acknowledged, cached: restEvents };
  }

  /** The largest message the server takes, less room for headers. */
  private maxMessageBytes(): number {
    return Math.max(HEADER_ROOM, (this.nc?.info?.max_payload ?? DEFAULT_MAX_PAYLOAD) - HEADER_ROOM);
  }

  /**
   * One flag per message: acknowledged by the bus or not. Waits for room under maxInFlight
   * (counted in events) first.
   */
  private async publishAll(outgoing: SpoolRecord[]): Promise<boolean[]> {
    const none = (): boolean[] => new Array<boolean>(outgoing.length).fill(false);
    const events = outgoing.reduce((n, o) => n + eventsIn(o), 0);
    if (!this.up) {
      this.metrics.publishFailures.inc({ reason: 'down' }, events);
      return none();
    }
    const slots = await this.limit.acquire(events, this.settings.inFlightWaitMs);
    if (slots === 0) {
      this.metrics.publishFailures.inc({ reason: 'no_slot' }, events);
      return none();
    }
    try {
      // More events than the whole cap: published a cap's worth of events at a time.
      const acked: boolean[] = [];
      for (let from = 0; from < outgoing.length;) {
        let to = from + 1;
        for (let n = eventsIn(outgoing[from] as SpoolRecord); to < outgoing.length; to++) {
          n += eventsIn(outgoing[to] as SpoolRecord);
          if (n > slots) break;
        }
        for (const o of await this.publishBatch(outgoing.slice(from, to))) acked.push(o === 'acked');
        from = to;
      }
      return acked;
    } finally {
      this.limit.release(slots);
    }
  }

  /** Publishes and waits up to timeoutMs for the PubAcks; a duplicate counts (the bus holds the message). */
  private async publishBatch(outgoing: readonly SpoolRecord[]): Promise<PubOutcome[]> {
    const publisher = this.publisher;
    if (!this.up || !publisher) return outgoing.map(() => 'timeout');
    const started = performance.now();
    const outcomes = await publisher.publish(outgoing, this.settings.timeoutMs);
    this.metrics.publishDuration.observe((performance.now() - started) / 1000);
    // Counted in events, as the metrics say.
    let timeouts = 0;
    let refused = 0;
    let acked = 0;
    for (let i = 0; i < outcomes.length; i++) {
      const n = eventsIn(outgoing[i] as SpoolRecord);
      const o = outcomes[i];
      if (o === 'timeout') timeouts += n;
      else if (o === 'refused') refused += n;
      else acked += n;
    }
    this.busStorage.observe(acked, refused, publisher.lastRefusal);
    if (timeouts > 0) this.metrics.publishFailures.inc({ reason: 'timeout' }, timeouts);
    if (refused > 0) {
      this.metrics.publishFailures.inc({ reason: 'refused' }, refused);
      const now = Date.now();
      if (now - this.lastRefusalLog > REFUSAL_LOG_INTERVAL_MS) {
        this.lastRefusalLog = now;
        this.logger.warn(
          { refused, reason: publisher.lastRefusal },
          'the stream refused events; they go to the spool (or 503)',
        );
      }
    }
    return outcomes;
  }

  /** Dials until connected (the client then reconnects by itself), verifying the stream each time. */
  private async connectLoop(): Promise<void> {
    let wait = this.settings.reconnectWaitMs;
    while (!this.closing) {
      try {
        const nc = await connect(this.connectionOptions());
        this.nc = nc;
        this.publisher = new PubAckPublisher(nc);
        this.logger.info({ servers: this.settings.servers.map(redactUrl) }, 'connected to NATS');
        void this.watchStatus(nc);
        await this.verifyUntilUp(nc);
        const closed = await nc.closed();
        this.setUp(false);
        if (this.closing) return;
        this.logger.error(
          { err: closed instanceof Error ? { message: closed.message } : undefined },
          'NATS connection closed; dialling again',
        );
        wait = this.settings.reconnectWaitMs;
      } catch (err) {
        this.logger.warn({ err: { message: (err as Error).message }, retryInMs: wait }, 'cannot connect to NATS');
        await this.sleep(wait);
        wait = Math.min(MAX_VERIFY_BACKOFF_MS, wait * 2);
      }
    }
  }

  /** The sink is up only once the stream is known to keep intake's guarantees. */
  private async verifyUntilUp(nc: NatsConnection): Promise<void> {
    let wait = this.settings.reconnectWaitMs;
    while (!this.closing && !nc.isClosed()) {
      try {
        const changed = await ensureStream(
          await jetstreamManager(nc, { timeout: this.settings.timeoutMs }),
          this.settings,
        );
        if (changed.length > 0)
          this.logger.warn(
            { stream: this.settings.stream, changed },
            'the existing stream was brought in line with streamConfig',
          );
        this.setUp(true);
        return;
      } catch (err) {
        this.logger.error(
          { err: { message: (err as Error).message }, retryInMs: wait },
          'JetStream stream not usable; events go to the spool (or 503) until it is',
        );
        await this.sleep(wait);
        wait = Math.min(MAX_VERIFY_BACKOFF_MS, wait * 2);
      }
    }
  }

  private async watchStatus(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') {
        this.setUp(false);
        this.publisher?.abandonAll();
        this.logger.warn({ server: redactUrl(s.server) }, 'disconnected from NATS');
      } else if (s.type === 'reconnect') {
        this.logger.info({ server: redactUrl(s.server) }, 'reconnected to NATS');
        void this.verifyUntilUp(nc);
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return delay(ms, undefined, { signal: this.stopping.signal }).catch(() => undefined);
  }

  private setUp(up: boolean): void {
    this.up = up;
    this.metrics.connected.set(up ? 1 : 0);
    if (!up) return;
    this.busStorage.reset();
    for (const w of this.upWaiters.splice(0)) w();
    this.replayer?.wake();
    if (this.nc) for (const l of this.connectedListeners) l(this.nc);
  }

  private connectionOptions(): NodeConnectionOptions {
    const opts: NodeConnectionOptions = {
      servers: this.settings.servers,
      name: 'intake-ingester',
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: this.settings.reconnectWaitMs,
      timeout: this.settings.timeoutMs,
      // Otherwise every request (a key-value read or write of an alert state, a publish through
      // the JetStream client) builds two Error objects with stack traces up front, in case it
      // fails: measured as a quarter of the CPU of delivering to Alertmanager. Our logs carry the
      // error's message, never its stack.
      noAsyncTraces: true,
    };
    if (this.settings.tls) opts.tls = { ...this.settings.tls };
    // Read at each dial, so a rotated Secret is picked up on the next connection.
    if (this.settings.credsFile) {
      const file = this.settings.credsFile;
      opts.authenticator = credsAuthenticator(() => readFileSync(file));
    } else if (this.settings.nkeySeedFile) {
      const file = this.settings.nkeySeedFile;
      opts.authenticator = nkeyAuthenticator(() => new TextEncoder().encode(readFileSync(file, 'utf8').trim()));
    }
    return opts;
  }

  /** Nothing acknowledged is held in memory: every event is in the bus or the spool already. */
  async flush(): Promise<void> {}

  /** Hands the spool to the bus for as long as the grace period allows, then disconnects. */
  async close(): Promise<void> {
    if (this.replayer && this.spool && this.spool.depth > 0) {
      const deadline = Date.now() + this.options.drainTimeoutMs;
      this.logger.info(
        { events: this.spool.depth, timeoutMs: this.options.drainTimeoutMs },
        'handing the spool to the bus before exit',
      );
      const empty = await this.replayer.drain(deadline);
      this.logger.info(
        { remaining: this.spool.depth, drained: empty },
        empty ? 'spool drained' : 'spool not drained in the grace period; the rest is replayed at the next start',
      );
    }
    this.closing = true;
    this.stopping.abort();
    await this.replayer?.stop();
    this.setUp(false);
    this.publisher?.close();
    this.busStorage.close();
    // Nothing is in flight any more (the listener is closed, the replayer stopped): close, not
    // drain, which would wait forever on a connection that is down.
    await this.nc?.close().catch(() => undefined);
    await this.connecting;
    this.spool?.close();
  }
}

/** Server URLs may carry user:password; logs must not. */
function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}
