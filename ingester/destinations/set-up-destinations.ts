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
import { addressPolicy, DEFAULT_ADDRESS_GUARD, type AddressGuardSettings } from './address-guard-settings.js';
import { AddressRefusals, type LastRefusal } from './address-refusals.js';
import { AlertmanagerDestination } from './alertmanager-destination.js';
import type { DeadLetterStore, DeliveryDeadLetter } from '../dead-letters/model.js';
import type { Destination, Routing } from './destination.js';
import { Dispatcher } from './dispatcher.js';
import { HttpDestination } from './http-destination.js';
import { JetStreamDeliveries } from './jetstream-deliveries.js';
import { DestinationMetrics } from './metrics.js';
import { Outbox } from './outbox.js';
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
  /** Which addresses a team's destination (and, when set so, the platform's) may connect to. */
  addressGuard?: AddressGuardSettings;
}

export interface Destinations {
  /** Standalone: the outbox, a hand-off sink of its own. */
  readonly sink?: EventSink;
  /** Hands a replayed dead letter back to its destination (attempts start again). */
  requeue(letter: DeliveryDeadLetter): Promise<void>;
  /** The replayed letter left the dead-letter store (standalone: the outbox's record of it goes). */
  replayed(letter: DeliveryDeadLetter): Promise<void>;
  readonly names: readonly string[];
  /** The last connection the address guard refused for a destination on this replica (for its status). */
  lastAddressRefusal(name: string): LastRefusal | undefined;
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
  const guardSettings = o.addressGuard ?? DEFAULT_ADDRESS_GUARD;
  const refusals = new AddressRefusals(addressPolicy(guardSettings), o.registry, o.logger);
  // A team's URL never reaches what the team could not; the platform's own URLs when the admin asks.
  const guardOf = (d: DestinationSettings) =>
    d.namespace !== undefined || guardSettings.platformDestinations ? refusals.guardOf(d.name, d.namespace) : undefined;
  const clients: Destination[] = o.destinations.map((d) =>
    d.kind === 'alertmanager'
      ? new AlertmanagerDestination(
          d.name,
          d.alertmanager,
          () => alertStore(d.name),
          metrics,
          o.logger,
          holder,
          guardOf(d),
        )
      : new HttpDestination(d.name, d.http, d.delivery.maxInFlight, guardOf(d)),
  );
  const lastAddressRefusal = (name: string): LastRefusal | undefined => refusals.lastOf(name);
  const queued = o.destinations.map((settings, i) => ({
    settings,
    dispatcher: new Dispatcher(clients[i] as Destination, settings.delivery, metrics, o.logger, settings.protection),
  }));
  const names = o.destinations.map((d) => d.name);
  const closeClients = (): Promise<unknown> => Promise.all(clients.map((c) => c.close()));

  if (o.bus) {
    const bus = o.bus;
    const deliveries = new JetStreamDeliveries(bus.settings, queued, routing, metrics, o.deadLetters, o.logger);
    alertStore = (name) => deliveries.alertStore(name);
    return {
      requeue: async (letter) => {
        if (!names.includes(letter.destination)) throw new Error(`destination ${letter.destination} is not configured`);
        await deliveries.requeue(letter);
      },
      replayed: async () => undefined,
      names,
      lastAddressRefusal,
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
    lastAddressRefusal,
    start: () => {
      void settleReplayedLetters(outbox, o.deadLetters, o.logger);
      outbox.start(
        queued.map((q) => ({ name: q.settings.name, dispatcher: q.dispatcher, leaseMs: claimTimeoutMs(q.settings) })),
      );
      for (const c of clients) c.start?.();
      const measure = (): void => {
        for (const n of names) {
          metrics.lag.set({ destination: n }, outbox.depth(n));
          const oldest = outbox.oldestReceivedAtMs(n);
          metrics.oldestPending.set(
            { destination: n },
            oldest === undefined ? 0 : Math.max(0, Date.now() - oldest) / 1000,
          );
        }
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
