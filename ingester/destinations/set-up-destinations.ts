/**
 * Puts delivery together: one destination client and one dispatcher per configured destination
 * (and per team destination, added, replaced and removed while running: setTeamDestinations),
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
import type { AlertStore } from './alertmanager/alert-store.js';
import { addressPolicy, DEFAULT_ADDRESS_GUARD, type AddressGuardSettings } from './address-guard-settings.js';
import { AddressRefusals, type LastRefusal } from './address-refusals.js';
import { AlertmanagerDestination } from './alertmanager/alertmanager-destination.js';
import type { DeadLetterStore, DeliveryDeadLetter } from '../dead-letters/model.js';
import type { Destination, Routing } from './destination.js';
import { Dispatcher } from './dispatcher.js';
import { HttpDestination } from './http/http-destination.js';
import { JetStreamDeliveries } from './bus/jetstream-deliveries.js';
import { DestinationMetrics } from './metrics.js';
import { Outbox } from './outbox/outbox.js';
import { DestinationPauses } from './protection/destination-pauses.js';
import type { DestinationPause } from './protection/pause.js';
import { KvPauseStore } from './protection/pause-kv-store.js';
import { FilePauseStore } from './protection/pause-store.js';
import type { CircuitState } from './protection/circuit-breaker.js';
import { SqliteAlertStores } from './alertmanager/sqlite-alert-store.js';
import { claimTimeoutMs, type DestinationSettings } from './settings.js';
import type { DeliveryReport } from '../../api/delivery-status.js';
import { DeliveryRecords } from './status/delivery-record.js';
import { deliveryReport } from './status/delivery-report.js';

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
  /** The destinations delivered to now: the platform's, then the teams'. */
  readonly names: readonly string[];
  /** The last connection the address guard refused for a destination on this replica (for its status). */
  lastAddressRefusal(name: string): LastRefusal | undefined;
  /**
   * The teams' destinations now (from `Destination` resources): new ones are added, changed ones
   * (another `version`) replaced, the rest removed with the events waiting for them, all while
   * running. `release` is called once a destination's old version no longer delivers (its
   * credential files may go). Calls are applied one after the other.
   */
  setTeamDestinations(team: readonly TeamDestination[]): Promise<void>;
  /** Pause and resume through the admin API, and what it shows (protection/pause.ts). */
  readonly pauses: DestinationPauses;
  /** Each destination's kind and circuit state, for the admin API. */
  describe(name: string): { kind: DestinationSettings['kind']; circuit: CircuitState } | undefined;
  /** What each destination's deliveries came to on this replica (GET /status/delivery, status/delivery-report.ts). */
  deliveryReport(): Promise<DeliveryReport>;
  /** Begins delivering; call once the first routing table is installed (it decides who gets what). */
  start(): void;
  /** Stops taking events and waits for the deliveries in flight to be settled. */
  close(): Promise<void>;
}

const LAG_INTERVAL_MS = 5000;

/** A team's destination as setTeamDestinations takes it. */
export interface TeamDestination {
  settings: DestinationSettings;
  /** Changes when the settings do (the published document's resourceVersion). */
  version: string;
  release?: () => void;
}

/** A destination being delivered to: its client and dispatcher. */
interface LiveDestination {
  settings: DestinationSettings;
  client: Destination;
  dispatcher: Dispatcher;
  /** While paused its consumers pull nothing (the bus) and its rows are not handed out (the outbox). */
  pause: DestinationPause;
  version?: string;
  release?: () => void;
}

export function setUpDestinations(o: DestinationsOptions): Destinations {
  const metrics = new DestinationMetrics(o.registry);
  const routing: Routing = {
    destinationsOf: (where, event) => onlyLive(destinationsOfEvent(where, event, o.routes(), o.destinations)),
    decidesPerEvent: (where) => rulesOf(where, o.routes()) !== undefined,
  };
  /**
   * A team destination this replica does not deliver to (deleted, not valid, or not arrived yet)
   * gets nothing: the outbox holds no rows for it, as the bus has no consumer for it. Platform
   * destinations pass as they are (a removed one's rows wait for it to come back).
   */
  const onlyLive = (names: readonly string[]): readonly string[] => {
    let all = true;
    for (const n of names) if (n.includes('/') && !live.has(n)) all = false;
    return all ? names : names.filter((n) => !n.includes('/') || live.has(n));
  };
  const holder = `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
  let alertStore: (name: string) => AlertStore | undefined = () => undefined;
  const guardSettings = o.addressGuard ?? DEFAULT_ADDRESS_GUARD;
  const refusals = new AddressRefusals(addressPolicy(guardSettings), o.registry, o.logger);
  // A team's URL never reaches what the team could not; the platform's own URLs when the admin asks.
  const guardOf = (d: DestinationSettings) =>
    d.namespace !== undefined || guardSettings.platformDestinations ? refusals.guardOf(d.name, d.namespace) : undefined;
  const lastAddressRefusal = (name: string): LastRefusal | undefined => refusals.lastOf(name);
  const live = new Map<string, LiveDestination>();
  const pauses = new DestinationPauses(metrics.paused, o.logger);
  const records = new DeliveryRecords();
  const make = (settings: DestinationSettings, version?: string, release?: () => void): LiveDestination => {
    // A team destination replaced by a new version keeps its pause (and the runtime pause kept for it).
    const pause = pauses.add(settings);
    const client: Destination =
      settings.kind === 'alertmanager'
        ? new AlertmanagerDestination(
            settings.name,
            settings.alertmanager,
            () => alertStore(settings.name),
            metrics,
            o.logger,
            holder,
            guardOf(settings),
            () => pause.paused,
          )
        : new HttpDestination(settings.name, settings.http, settings.delivery.maxInFlight, guardOf(settings));
    const dispatcher = new Dispatcher(
      client,
      settings.delivery,
      metrics,
      o.logger,
      settings.protection,
      pause,
      records.of(settings.name),
    );
    return {
      settings,
      client,
      dispatcher,
      pause,
      ...(version !== undefined ? { version } : {}),
      ...(release ? { release } : {}),
    };
  };
  for (const d of o.destinations) live.set(d.name, make(d));
  const names = (): string[] => [...live.keys()];
  const describe = (name: string): { kind: DestinationSettings['kind']; circuit: CircuitState } | undefined => {
    const l = live.get(name);
    return l && { kind: l.settings.kind, circuit: l.dispatcher.guard.state };
  };
  const platformNames = o.destinations.map((d) => d.name);
  const report = (backlogShared: boolean) => (): Promise<DeliveryReport> =>
    deliveryReport({
      names,
      describe,
      pauseOf: (name) => pauses.status(name),
      lastAddressRefusal,
      records,
      lag: metrics.lag,
      oldestPending: metrics.oldestPending,
      backlogShared,
    });
  const closeClients = (): Promise<unknown> => Promise.all([...live.values()].map((l) => l.client.close()));
  let started = false;
  /** How the bus or the outbox starts and stops delivering to one destination. */
  let deliverTo: (l: LiveDestination) => Promise<void> = async () => undefined;
  let stopDelivering: (l: LiveDestination, forget: boolean) => Promise<void> = async () => undefined;

  const remove = async (name: string, forget: boolean): Promise<void> => {
    const l = live.get(name);
    if (!l) return;
    live.delete(name);
    if (started) await stopDelivering(l, forget);
    if (forget) {
      pauses.remove(name);
      records.remove(name);
    }
    await l.client.close();
    l.release?.();
    o.logger.info({ destination: name }, forget ? 'team destination removed' : 'team destination updated');
  };
  let applying = Promise.resolve();
  const setTeamDestinations = (team: readonly TeamDestination[]): Promise<void> => {
    const apply = async (): Promise<void> => {
      const wanted = new Map(team.map((t) => [t.settings.name, t]));
      for (const [name, l] of [...live])
        if (l.settings.namespace !== undefined && !wanted.has(name)) await remove(name, true);
      for (const t of team) {
        const name = t.settings.name;
        // A platform destination's name never holds the `/` of a team's: this is only a guard.
        if (t.settings.namespace === undefined || platformNames.includes(name)) continue;
        const current = live.get(name);
        if (current?.version === t.version) {
          // The same version handed over again: its credential files are the ones in use.
          if (t.release !== current.release) t.release?.();
          continue;
        }
        if (current) await remove(name, false);
        const l = make(t.settings, t.version, t.release);
        live.set(name, l);
        if (started) await deliverTo(l);
        if (!current) o.logger.info({ destination: name }, 'team destination added');
      }
    };
    const next = applying.then(apply);
    applying = next.catch((err: unknown) =>
      o.logger.error({ err: { message: (err as Error).message } }, 'team destinations not applied'),
    );
    return next;
  };

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
      [...live.values()],
      routing,
      metrics,
      o.deadLetters,
      o.logger,
      pauseStore,
    );
    alertStore = (name) => deliveries.alertStore(name);
    deliverTo = async (l) => {
      await deliveries.add(l);
      l.client.start?.();
    };
    stopDelivering = (l, forget) => deliveries.remove(l.settings.name, forget);
    return {
      requeue: async (letter) => {
        if (!live.has(letter.destination)) throw new Error(`destination ${letter.destination} is not configured`);
        await deliveries.requeue(letter);
      },
      replayed: async () => undefined,
      get names() {
        return names();
      },
      setTeamDestinations,
      lastAddressRefusal,
      pauses,
      describe,
      deliveryReport: report(true),
      start: () => {
        started = true;
        bus.onConnected((nc) => deliveries.attach(nc));
        for (const l of live.values()) l.client.start?.();
        o.logger.info({ destinations: names() }, 'destinations are delivered from the bus (one durable consumer each)');
      },
      close: async () => {
        await applying;
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
  const alertStores = new SqliteAlertStores(storage.path, outbox.diskReserve, outbox.walCheckpointer);
  const stores = new Map<string, AlertStore>();
  alertStore = (name) => {
    let store = stores.get(name);
    if (!store && live.has(name)) stores.set(name, (store = alertStores.store(name)));
    return store;
  };
  const outboxDestination = (l: LiveDestination) => ({
    name: l.settings.name,
    dispatcher: l.dispatcher,
    leaseMs: claimTimeoutMs(l.settings),
  });
  deliverTo = async (l) => {
    outbox.addDestination(outboxDestination(l));
    l.client.start?.();
  };
  stopDelivering = async (l, forget) => {
    await outbox.removeDestination(l.settings.name);
    await l.dispatcher.idle();
    stores.delete(l.settings.name);
    if (!forget) return;
    metrics.lag.remove({ destination: l.settings.name });
    const discarded = outbox.discardRows(l.settings.name);
    if (discarded > 0)
      o.logger.warn(
        { destination: l.settings.name, rows: discarded },
        'the events waiting for a removed team destination were discarded',
      );
  };
  let lagTimer: NodeJS.Timeout | undefined;
  return {
    sink: outbox,
    requeue: async (letter) => {
      if (!live.has(letter.destination)) throw new Error(`destination ${letter.destination} is not configured`);
      outbox.requeue(letter);
    },
    replayed: async (letter) => outbox.forgetReplayed(letter.seq),
    get names() {
      return names();
    },
    setTeamDestinations,
    lastAddressRefusal,
    pauses,
    describe,
    deliveryReport: report(false),
    start: () => {
      started = true;
      void settleReplayedLetters(outbox, o.deadLetters, o.logger);
      outbox.start([...live.values()].map(outboxDestination));
      for (const l of live.values()) l.client.start?.();
      const measure = (): void => {
        for (const n of names()) {
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
        { destinations: names(), outbox: `${storage.path}/outbox.sqlite` },
        'no bus configured: destinations are delivered from the outbox in the storage directory (spool.path, required with destinations)',
      );
      const orphans = outbox.orphans(names());
      if (Object.keys(orphans).length > 0) {
        o.logger.warn(
          { events: orphans },
          'the outbox holds events for destinations no longer configured; they stay there until those destinations are configured again',
        );
      }
    },
    close: async () => {
      await applying;
      clearInterval(lagTimer);
      outbox.stop();
      await Promise.all([...live.values()].map((l) => l.dispatcher.idle()));
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
