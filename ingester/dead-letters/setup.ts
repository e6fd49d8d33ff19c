/**
 * Chooses the dead-letter store at startup and says which (docs: "Dead letters"):
 *   - with the bus (sinks.jetstream): the stream INTAKE_DEADLETTER, shared by every replica;
 *   - else with a storage directory (spool.path): `deadletters.sqlite` in it;
 *   - else: the SQLite file `deadLetter.path`, this replica's only, opened at the first letter.
 */
import type { BulkReplayLimits } from './bulk-replay-slots.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { JetStreamSettings } from '../sinks/handoff-config.js';
import { DeadLetterMetrics } from './metrics.js';
import type {
  DeadLetter,
  DeadLetterLimits,
  DeadLetterQuery,
  DeadLetterStore,
  DroppedLetter,
  LetterMeta,
  NewDeadLetter,
} from './model.js';

export interface DeadLetterSettings extends DeadLetterLimits {
  /** The store's SQLite file without the bus and without a storage directory. */
  path: string;
  /** How long a replay holds a letter it claimed. */
  replayLeaseSeconds: number;
  /** How many bulk replays run at once, and how fast (bulk-replay-slots.ts). */
  bulkReplay: BulkReplayLimits;
}

export interface DeadLetterSetup {
  store: DeadLetterStore;
  metrics: DeadLetterMetrics;
  leaseMs: number;
}

export interface DeadLetterSetupOptions {
  settings: DeadLetterSettings;
  bus?: { settings: JetStreamSettings; onConnected(listener: (nc: NatsConnection) => void): void };
  /** Without the bus: the storage directory (`spool.path`). */
  storageDir?: string;
  registry: Registry;
  logger: Logger;
}

export async function setUpDeadLetters(o: DeadLetterSetupOptions): Promise<DeadLetterSetup> {
  let store: DeadLetterStore | undefined;
  const metrics = new DeadLetterMetrics(o.registry, () => store);
  const onDropped = (dropped: DroppedLetter[]): void => {
    metrics.countDropped(dropped);
    o.logger.warn(
      {
        dropped: dropped.length,
        namespaces: [...new Set(dropped.map((d) => d.namespace))],
        reasons: [...new Set(dropped.map((d) => d.reason))],
      },
      'dead letters dropped to make room (their namespace is over its share, or the store is full)',
    );
  };
  const limits = { maxBytes: o.settings.maxBytes, maxBytesPerNamespace: o.settings.maxBytesPerNamespace };
  const leaseMs = o.settings.replayLeaseSeconds * 1000;
  let durable: string;
  if (o.bus) {
    const { BusDeadLetters } = await import('./bus-store.js');
    const bus = new BusDeadLetters(o.bus.settings, limits, leaseMs, o.logger, onDropped);
    o.bus.onConnected((nc) => bus.attach(nc));
    store = bus;
    durable = 'shared by every replica, kept with the bus';
  } else {
    const { SqliteDeadLetters } = await import('./sqlite-store.js');
    const onDiskFull = (): void =>
      o.logger.warn(
        "the dead letters' disk is full: its reserve is given up so that replays still remove what they hand on; new letters fail until there is room",
      );
    if (o.storageDir) {
      store = new SqliteDeadLetters(join(o.storageDir, 'deadletters.sqlite'), limits, onDropped, onDiskFull);
      durable = 'in the storage directory: survives restarts, this replica only';
    } else {
      const file = o.settings.path;
      const lazy = new LazyStore(
        `SQLite file ${file}`,
        () => new SqliteDeadLetters(file, limits, onDropped, onDiskFull),
      );
      // Letters kept before a restart are counted (and listed) from the start.
      if (existsSync(file)) lazy.openNow();
      store = lazy;
      durable =
        'this replica only, lost with its disk: configure sinks.jetstream (or spool.path) to keep dead letters durably';
    }
  }
  o.logger.info(
    { store: store.description, maxBytes: limits.maxBytes, maxBytesPerNamespace: limits.maxBytesPerNamespace },
    `dead letters (mapping and delivery failures): ${store.description}, ${durable}`,
  );
  return { store, metrics, leaseMs };
}

/** Opens the real store at its first use: an ingester that never dead-letters creates no file. */
class LazyStore implements DeadLetterStore {
  private real?: DeadLetterStore;
  constructor(
    readonly description: string,
    private readonly open: () => DeadLetterStore,
  ) {}
  private get store(): DeadLetterStore {
    this.real ??= this.open();
    return this.real;
  }
  put(letter: NewDeadLetter): Promise<string> {
    return this.store.put(letter);
  }
  list(q: DeadLetterQuery): Promise<DeadLetter[]> {
    return this.store.list(q);
  }
  select(q: DeadLetterQuery): LetterMeta[] {
    return this.real?.select(q) ?? [];
  }
  census(q: DeadLetterQuery): { matched: number; lastSeq: number } {
    return this.real?.census(q) ?? { matched: 0, lastSeq: 0 };
  }
  claim(letter: Pick<DeadLetter, 'seq'>, leaseMs: number): Promise<DeadLetter | undefined> {
    return this.store.claim(letter, leaseMs);
  }
  release(letter: DeadLetter): Promise<void> {
    return this.store.release(letter);
  }
  remove(letter: DeadLetter): Promise<void> {
    return this.store.remove(letter);
  }
  openNow(): void {
    void this.store;
  }
  usage(): { bytes: number; namespaces: ReadonlyMap<string, number> } {
    return this.real?.usage() ?? { bytes: 0, namespaces: new Map() };
  }
  async close(): Promise<void> {
    await this.real?.close();
  }
}
