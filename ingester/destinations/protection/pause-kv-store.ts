/**
 * Destinations' runtime pauses on the bus (pause-store.ts): one key a destination in a key-value
 * bucket every replica reads at each (re)connection and watches, so a pause or a resume through
 * one replica's admin API, or one replica's auto-pause, holds on all of them within a moment.
 * What is saved while the bus is away is written at the next connection.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import { KvWatchInclude, Kvm, type KV, type KvEntry } from '@nats-io/kv';
import { StorageType } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { readPause, type PauseStore } from './pause-store.js';
import type { RuntimePause } from './pause.js';

export class KvPauseStore implements PauseStore {
  private kv?: KV;
  /** Saved while no bucket was at hand: written at the next attach. */
  private readonly pending = new Map<string, RuntimePause | undefined>();
  private stopWatching?: () => void;

  constructor(
    /** `<alertBucketPrefix>_pauses`: `_` is in no destination name, so no alert bucket has it. */
    readonly bucket: string,
    /** Told of each destination's kept pause, at attach and whenever any replica changes one. */
    private readonly apply: (destination: string, pause: RuntimePause | undefined) => void,
    private readonly logger: Logger,
  ) {}

  /** A (new) connection: writes what waited, reads every destination's pause, then watches. */
  async attach(js: JetStreamClient, destinations: readonly string[], replicas: number): Promise<void> {
    this.kv = undefined;
    this.stopWatching?.();
    const kv = await new Kvm(js).create(this.bucket, { history: 1, replicas, storage: StorageType.File });
    for (const [name, pause] of [...this.pending]) {
      await write(kv, name, pause);
      this.pending.delete(name);
    }
    for (const name of destinations) this.apply(name, pauseOf(await kv.get(name)));
    const watch = await kv.watch({ include: KvWatchInclude.UpdatesOnly });
    this.stopWatching = () => watch.stop();
    void (async () => {
      for await (const e of watch) if (destinations.includes(e.key)) this.apply(e.key, pauseOf(e));
    })().catch((err: Error) =>
      this.logger.warn(
        { err: { message: err.message } },
        'watching destination pauses stopped; read again at reconnect',
      ),
    );
    this.kv = kv;
  }

  async save(destination: string, pause: RuntimePause | undefined): Promise<void> {
    const kv = this.kv;
    if (kv) {
      try {
        await write(kv, destination, pause);
        return;
      } catch (err) {
        this.logger.warn(
          { destination, err: { message: (err as Error).message } },
          'destination pause not kept on the bus yet; written at the next connection',
        );
      }
    }
    this.pending.set(destination, pause);
  }

  close(): void {
    this.stopWatching?.();
  }
}

const write = async (kv: KV, key: string, pause: RuntimePause | undefined): Promise<void> => {
  if (pause) await kv.put(key, JSON.stringify(pause));
  else await kv.delete(key);
};

function pauseOf(e: KvEntry | null): RuntimePause | undefined {
  if (!e || e.operation !== 'PUT') return undefined;
  try {
    return readPause(e.json());
  } catch {
    return undefined;
  }
}
