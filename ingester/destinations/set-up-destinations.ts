/**
 * Puts delivery together: one destination client and one dispatcher per configured destination,
 * fed by the bus (JetStream consumers) when there is one, else by the standalone outbox in the
 * storage directory (`spool.path`), which then is also the hand-off sink that holds accepted events.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { NormalisedEvent } from '../core/event.js';
import { LogLimiter } from '../core/log-limiter.js';
import type { CompiledRules } from '../../api/routing-rules.js';
import { destinationsFor, type RouteTable } from '../routing/route-table.js';
import type { JetStreamSettings, SpoolSettings } from '../sinks/handoff-config.js';
import type { EventSink } from '../sinks/sink.js';
import type { NatsConnection } from '@nats-io/transport-node';
import type { AlertStore } from './alert-store.js';
import { AlertmanagerDestination } from './alertmanager-destination.js';
import type { DeadLetterStore, DeliveryDeadLetter } from '../dead-letters/model.js';
import type { Destination, Routing } from './destination.js';
import { Dispatcher } from './dispatcher.js';
import { HttpDestination } from './http-destination.js';
import { JetStreamDeliveries } from './jetstream-deliveries.js';
import { DestinationMetrics } from './metrics.js';
import { Outbox } from './outbox.js';
import { DestinationPauses } from './protection/destination-pauses.js';
import { KvPauseStore } from './protection/pause-kv-store.js';
import { FilePauseStore } from './protection/pause-store.js';
import type { CircuitState } from './protection/circuit-breaker.js';
import { SqliteAlertStores } from './sqlite-alert-store.js';
import { claimTimeoutMs, type DestinationSettings } from './settings.js';

export interface DestinationsOptions {
  destinations: readonly DestinationSettings[];
  routes: () => RouteTable;
  registry: Registry;
  logger: Logger;
  /** With the bus: its settings and how to learn of each (re)connection. */
  bus?: { settings: JetStreamSettings; onConnected(listener: (nc: NatsConnection) => void): void };
  /** Without the bus: the storage directory (`spool.path`) holds the outbox, bounded by the block's maxBytes. */
  storage?: SpoolSettings;
  /** Where events a destination gave up on are kept (dead-letters/). */
  deadLetters: DeadLetterStore;
}

export interface Destinations {
  /** Standalone: the outbox, a hand-off sink of its own. */
  readonly sink?: EventSink;
  /** Hands a replayed dead letter back to its destination (attempts start again). */
  requeue(letter: DeliveryDeadLetter): Promise<void>;
  /** The replayed letter left the dead-letter store (standalone: the outbox's record of it goes). */
  replayed(letter: DeliveryDeadLetter): Promise<void>;
  readonly names: readonly string[];
  /** Pause and resume through the admin API, and what it shows (protection/pause.ts). */
  readonly pauses: DestinationPauses;
  /** Each destination's kind and circuit state, for the admin API. */
  describe(name: string): { kind: DestinationSettings['kind']; circuit: CircuitState } | undefined;
  /** Begins delivering; call once the first routing table is installed (it decides who gets what). */
  start(): void;
  /** Stops taking events and waits for the deliveries in flight to be settled. */
  close(): Promise<void>;
}

const LAG_INTERVAL_MS = 5000;

export function setUpDestinations(o: DestinationsOptions): Destinations {
  const metrics = new DestinationMetrics(o.registry);
  const routing: Routing = {
    destinationsOf: (where, event) => destinationsOfEvent(where, event, o.routes(), o.destinations),
    decidesPerEvent: (where) => rulesOf(where, o.routes()) !== undefined,
  };
  const holder = `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
  let alertStore: (name: string) => AlertStore | undefined = () => undefined;
  const pauses = new DestinationPauses(o.destinations, metrics.paused, o.logger);
  const clients: Destination[] = o.destinations.map((d) =>
    d.kind === 'alertmanager'
      ? new AlertmanagerDestination(
          d.name,
          d.alertmanager,
          () => alertStore(d.name),
          metrics,
          o.logger,
          holder,
          () => pauses.of(d.name)?.paused === true,
        )
      : new HttpDestination(d.name, d.http, d.delivery.maxInFlight),
  );
  const queued = o.destinations.map((settings, i) => {
    const pause = pauses.of(settings.name);
    const client = clients[i] as Destination;
    const dispatcher = new Dispatcher(client, settings.delivery, metrics, o.logger, settings.protection, pause);
    return { settings, dispatcher, ...(pause ? { pause } : {}) };
  });
  const names = o.destinations.map((d) => d.name);
  const describe = (name: string): { kind: DestinationSettings['kind']; circuit: CircuitState } | undefined => {
    const q = queued.find((d) => d.settings.name === name);
    return q && { kind: q.settings.kind, circuit: q.dispatcher.guard.state };
  };
  const closeClients = (): Promise<unknown> => Promise.all(clients.map((c) => c.close()));

  if (o.bus) {
    const bus = o.bus;
    const pauseStore = new KvPauseStore(
      `${bus.settings.alertBucketPrefix}_pauses`,
      (name, pause) => pauses.apply(name, pause),
      o.logger,
    );
    pauses.keepIn(pauseStore);
    const deliveries = new JetStreamDeliveries(
      bus.settings,
      queued,
      routing,
      metrics,
      o.deadLetters,
      o.logger,
      pauseStore,
    );
    alertStore = (name) => deliveries.alertStore(name);
    return {
      requeue: async (letter) => {
        if (!names.includes(letter.destination)) throw new Error(`destination ${letter.destination} is not configured`);
        await deliveries.requeue(letter);
      },
      replayed: async () => undefined,
      names,
      pauses,
      describe,
      start: () => {
        bus.onConnected((nc) => deliveries.attach(nc));
        for (const c of clients) c.start?.();
        o.logger.info({ destinations: names }, 'destinations are delivered from the bus (one durable consumer each)');
      },
      close: async () => {
        await deliveries.close();
        await closeClients();
      },
    };
  }

  const storage = o.storage;
  if (!storage)
    throw new Error('destinations without the bus need the storage directory (config.ts refuses this earlier)');
  const errors = new LogLimiter(o.logger);
  const outbox = new Outbox(
    storage.path,
    storage.maxBytes,
    routing,
    (letter) => o.deadLetters.put(letter),
    (err) => errors.error('outbox', err, {}, 'outbox rows not handed out; trying again'),
    () =>
      o.logger.warn(
        { storageDir: storage.path },
        "the outbox's disk is full: its reserve is given up so that held events are still delivered; new events are refused until there is room",
      ),
    storage.maxBytesPerNamespace,
  );
  const pauseStore = new FilePauseStore(storage.path);
  pauses.keepIn(pauseStore, pauseStore.load());
  const alertStores = new SqliteAlertStores(storage.path, outbox.diskReserve);
  const stores = new Map(names.map((n) => [n, alertStores.store(n)]));
  alertStore = (name) => stores.get(name);
  let lagTimer: NodeJS.Timeout | undefined;
  return {
    sink: outbox,
    requeue: async (letter) => {
      if (!names.includes(letter.destination)) throw new Error(`destination ${letter.destination} is not configured`);
      outbox.requeue(letter);
    },
    replayed: async (letter) => outbox.forgetReplayed(letter.seq),
    names,
    pauses,
    describe,
    start: () => {
      void settleReplayedLetters(outbox, o.deadLetters, o.logger);
      outbox.start(
        queued.map((q) => ({ name: q.settings.name, dispatcher: q.dispatcher, leaseMs: claimTimeoutMs(q.settings) })),
      );
      for (const c of clients) c.start?.();
      const measure = (): void => {
        for (const n of names) metrics.lag.set({ destination: n }, outbox.depth(n));
      };
      measure();
      lagTimer = setInterval(measure, LAG_INTERVAL_MS);
      lagTimer.unref();
      o.logger.info(
        { destinations: names, outbox: `${storage.path}/outbox.sqlite` },
        'no bus configured: destinations are delivered from the outbox in the storage directory (spool.path, required with destinations)',
      );
      const orphans = outbox.orphans(names);
      if (Object.keys(orphans).length > 0) {
        o.logger.warn(
          { events: orphans },
          'the outbox holds events for destinations no longer configured; they stay there until those destinations are configured again',
        );
      }
    },
    close: async () => {
      clearInterval(lagTimer);
      outbox.stop();
      await Promise.all(queued.map((q) => q.dispatcher.idle()));
      await closeClients();
      await outbox.close();
      alertStores.close();
    },
  };
}

/**
 * Letters a replay handed back to the outbox but may not have removed (the process stopped
 * between the two): removed now, so the list never shows a letter whose event is on its way. A
 * letter whose id now names a newer letter (the event failed again) is that newer one's and stays.
 */
async function settleReplayedLetters(outbox: Outbox, store: DeadLetterStore, logger: Logger): Promise<void> {
  const replayed = outbox.replayedLetters();
  if (replayed.length === 0) return;
  let removed = 0;
  try {
    for (const r of replayed) {
      const [kept] = await store.list({ ids: [r.id], limit: 1 });
      if (kept?.seq === r.seq) {
        await store.remove(kept);
        removed++;
      }
      outbox.forgetReplayed(r.seq);
    }
    if (removed > 0)
      logger.info({ letters: removed }, 'dead letters a replay had handed on before a restart removed from the list');
  } catch (err) {
    logger.error(
      { err: { message: (err as Error).message } },
      'dead letters a replay had handed on not removed yet; a replay of them hands nothing on again',
    );
  }
}

/** The integration's routing rules, when it is still published in the event's namespace and has some. */
function rulesOf(
  where: Pick<NormalisedEvent, 'namespace' | 'integration'>,
  table: RouteTable,
): CompiledRules | undefined {
  const route = table.webhook(where.integration);
  return route && route.namespace === where.namespace ? route.rules : undefined;
}

/**
 * The integration's destinations when it is still published in the event's namespace (its rules
 * deciding, when it has some and the event is at hand), else the defaults.
 */
function destinationsOfEvent(
  where: Pick<NormalisedEvent, 'namespace' | 'integration'>,
  event: (() => NormalisedEvent | undefined) | undefined,
  table: RouteTable,
  all: readonly DestinationSettings[],
): readonly string[] {
  const route = table.webhook(where.integration);
  if (!route || route.namespace !== where.namespace) return destinationsFor(undefined, all);
  if (!route.rules) return route.destinations;
  const e = event?.();
  // An event that cannot be read goes where unmatched events go.
  if (event && !e) return route.destinations;
  return e ? route.rules.destinationsOf(e) : route.rules.reachable;
}
