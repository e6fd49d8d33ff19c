/**
 * Destinations' runtime pauses on the bus (pause-store.ts): one key a destination in a key-value
 * bucket every replica reads at each (re)connection and watches, so a pause or a resume through
 * one replica's admin API, or one replica's auto-pause, holds on all of them within a moment.
 * What is saved while the bus is away is written at the next connection.
 *
 * This replica's own change is applied at once, before its write; the watch then brings that write
 * back, and may bring an earlier one of its own (a pause followed quickly by a resume). So an entry
 * no newer than this replica's last write of the key is not applied again, and one that arrives
 * while a write is under way waits for it: applied afterwards only if it is newer.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import { KvWatchInclude, Kvm, type KV, type KvEntry } from '@nats-io/kv';
import { StorageType } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { readPause, type PauseStore } from './pause-store.js';
import type { RuntimePause } from './pause.js';

/** What the store uses of a key-value bucket. */
export type PauseBucket = Pick<KV, 'put' | 'get' | 'watch'>;

export class KvPauseStore implements PauseStore {
  private kv?: PauseBucket;
  /** Saved while no bucket was at hand: written at the next attach. */
  private readonly pending = new Map<string, RuntimePause | undefined>();
  private stopWatching?: () => void;
  /** Per destination: the revision of this replica's last write, and writes under way. */
  private readonly written = new Map<string, number>();
  private readonly writing = new Map<string, number>();
  /** The newest entry that arrived while a write of its key was under way. */
  private readonly waiting = new Map<string, { revision: number; pause: RuntimePause | undefined }>();

  constructor(
    /** `<alertBucketPrefix>_pauses`: `_` is in no destination name, so no alert bucket has it. */
    readonly bucket: string,
    /** Told of each destination's kept pause, at attach and whenever any replica changes one. */
    private readonly apply: (destination: string, pause: RuntimePause | undefined) => void,
    private readonly logger: Logger,
  ) {}

  /** A (new) connection: writes what waited, reads the destinations' pauses, then watches every key. */
  async attach(js: JetStreamClient, destinations: readonly string[], replicas: number): Promise<void> {
    this.kv = undefined;
    this.stopWatching?.();
    const kv = await new Kvm(js).create(this.bucket, { history: 1, replicas, storage: StorageType.File });
    await this.use(kv, destinations);
  }

  /** Takes `kv` as the bucket (attach(); a test's own). */
  async use(kv: PauseBucket, destinations: readonly string[]): Promise<void> {
    for (const [name, pause] of [...this.pending]) {
      this.written.set(name, await write(kv, name, pause));
      this.pending.delete(name);
    }
    for (const name of destinations) this.apply(name, pauseOf(await kv.get(name)));
    // From each key's last value on: a change between the reads above and here is not missed.
    // Every key, also of a destination not delivered to yet (a team's added later starts with it).
    const watch = await kv.watch({ include: KvWatchInclude.LastValue });
    this.stopWatching = () => watch.stop();
    void (async () => {
      // Every key, not only the destinations at hand: a team's destination added later takes the
      // pause kept for it (destination-pauses.ts keeps what it is told of names it does not have).
      for await (const e of watch) this.changed(e);
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
      this.writing.set(destination, (this.writing.get(destination) ?? 0) + 1);
      try {
        const revision = await write(kv, destination, pause);
        this.written.set(destination, Math.max(revision, this.written.get(destination) ?? 0));
        return;
      } catch (err) {
        this.logger.warn(
          { destination, err: { message: (err as Error).message } },
          'destination pause not kept on the bus yet; written at the next connection',
        );
      } finally {
        this.wrote(destination);
      }
    }
    this.pending.set(destination, pause);
  }

  /** An entry from the watch: another replica's change, or the echo of this one's. */
  private changed(e: KvEntry): void {
    const pause = pauseOf(e);
    if ((this.writing.get(e.key) ?? 0) > 0) {
      this.waiting.set(e.key, { revision: e.revision, pause });
      return;
    }
    if (e.revision <= (this.written.get(e.key) ?? 0)) return;
    this.apply(e.key, pause);
  }

  private wrote(destination: string): void {
    const left = (this.writing.get(destination) ?? 1) - 1;
    if (left > 0) return void this.writing.set(destination, left);
    this.writing.delete(destination);
    const waited = this.waiting.get(destination);
    this.waiting.delete(destination);
    if (waited && waited.revision > (this.written.get(destination) ?? 0)) this.apply(destination, waited.pause);
  }

  close(): void {
    this.stopWatching?.();
  }
}

/** Writes a pause, or `null` for none (a put, not a delete: its revision tells its echo apart); returns the revision. */
const write = (kv: Pick<KV, 'put'>, key: string, pause: RuntimePause | undefined): Promise<number> =>
  kv.put(key, JSON.stringify(pause ?? null));

function pauseOf(e: KvEntry | null): RuntimePause | undefined {
  if (!e || e.operation !== 'PUT') return undefined;
  try {
    return readPause(e.json());
  } catch {
    return undefined;
  }
}
