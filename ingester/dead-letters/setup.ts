/**
 * Chooses the dead-letter store at startup and says which (docs: "Dead letters"):
 *   - with the bus (sinks.jetstream): the stream INTAKE_DEADLETTER, shared by every replica;
 *   - else with a storage directory (spool.path): `deadletters.sqlite` in it;
 *   - else: a SQLite file next to `deadLetter.path` (`.jsonl` becomes `.sqlite`), this replica's
 *     only, opened at the first letter.
 * A JSON-lines dead letter written by an earlier version at `deadLetter.path` is imported once
 * (each entry keeps its id, so a second import is a no-op) and then renamed `*.imported`.
 */
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { FieldError } from '../core/errors.js';
import type { JetStreamSettings } from '../sinks/handoff-config.js';
import { DeadLetterMetrics } from './metrics.js';
import type {
  DeadLetter,
  DeadLetterLimits,
  DeadLetterQuery,
  DeadLetterStore,
  DroppedLetter,
  NewDeadLetter,
} from './model.js';

export interface DeadLetterSettings extends DeadLetterLimits {
  /** The fallback store's location (and where an earlier version's JSON-lines file is looked for). */
  path: string;
  /** How long a replay holds a letter it claimed. */
  replayLeaseSeconds: number;
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

const IMPORT_RETRY_MS = 2000;

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
      const file = `${o.settings.path.replace(/\.jsonl$/, '')}.sqlite`;
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
  const legacy = o.settings.path;
  if (existsSync(legacy) && !legacy.endsWith('.sqlite')) {
    const importing = importLegacyFile(store, legacy, o.logger);
    // Without the bus connected yet the import waits for it (in the background: startup goes on).
    if (!o.bus) await importing;
  }
  return { store, metrics, leaseMs };
}

interface LegacyEntry {
  id: string;
  receivedAt: string;
  integration: string;
  namespace: string;
  reason: string;
  errors?: FieldError[];
  contentType?: string;
  payload: unknown;
}

/** Reads an earlier version's JSON-lines dead letter into the store, once. */
export async function importLegacyFile(store: DeadLetterStore, path: string, logger: Logger): Promise<number> {
  const entries: LegacyEntry[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      entries.push(JSON.parse(line) as LegacyEntry);
    } catch {
      // A line torn by a crash: it was never acknowledged to a sender with an id.
    }
  }
  for (;;) {
    try {
      let kept = 0;
      for (const e of entries) {
        const letter: NewDeadLetter = {
          kind: 'mapping',
          id: e.id,
          at: e.receivedAt,
          namespace: e.namespace,
          integration: e.integration,
          reason: e.reason,
          ...(e.errors ? { errors: e.errors } : {}),
          ...(e.contentType ? { contentType: e.contentType } : {}),
          payload: e.payload,
        };
        try {
          await store.put(letter);
          kept++;
        } catch (err) {
          if ((err as Error).name !== 'LetterTooLarge') throw err;
        }
      }
      renameSync(path, `${path}.imported`);
      logger.info(
        { file: path, entries: entries.length, kept, store: store.description, renamedTo: `${path}.imported` },
        'dead letters of an earlier version imported',
      );
      return kept;
    } catch (err) {
      logger.warn(
        { err: { message: (err as Error).message }, file: path, retryInMs: IMPORT_RETRY_MS },
        'earlier dead letters not imported yet; trying again',
      );
      await new Promise((r) => setTimeout(r, IMPORT_RETRY_MS).unref());
    }
  }
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
  claim(letter: DeadLetter, leaseMs: number): Promise<DeadLetter | undefined> {
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
