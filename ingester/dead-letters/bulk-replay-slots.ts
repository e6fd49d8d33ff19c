/**
 * Which bulk replays may run at once on a replica: a namespace's share of the replica's replays,
 * taken before a replay starts.
 *
 * A bulk replay whose filter names a namespace is that namespace's: one runs per namespace, and at
 * most `maxRunning` namespaces' run at once, so a namespace's slow replay (a low rate over many
 * letters, which may run for hours) holds its own slot and never another namespace's. A replay
 * that names no namespace spans all of them and is the platform's (only the admin port starts
 * one): one at a time, in a slot of its own, so tenants filling `maxRunning` never lock the
 * platform out. With `allNamespaces: exclusive` it takes the whole replica instead: it starts only
 * when no namespace's replay runs (the admin may cancel them first), and none starts while it runs.
 *
 * A refused start names the limit (its error code and message) with Retry-After, and never names
 * another namespace's replay (its id, its namespace): the console passes these answers on to teams.
 */
import { bulkReplayExclusive, bulkReplayReplicaFull, bulkReplayRunning } from '../core/errors.js';

export interface BulkReplayLimits {
  /** Namespaces whose bulk replays may run at once on a replica (one each); the platform's is apart. */
  maxRunning: number;
  /** The most letters a second one bulk replay hands on, and its pace when none is given. */
  maxRate: number;
  /** A replay of every namespace: beside the namespaces' (`shared`) or alone on the replica (`exclusive`). */
  allNamespaces: 'shared' | 'exclusive';
}

export const DEFAULT_BULK_REPLAY_LIMITS: BulkReplayLimits = { maxRunning: 4, maxRate: 1000, allNamespaces: 'shared' };

/** How long a refused start is told to wait: a bulk replay's end is not known ahead. */
const RETRY_AFTER_SECONDS = 10;

/** The platform's slot: a replay whose filter names no namespace. */
const PLATFORM = Symbol('all namespaces');
type Slot = string | typeof PLATFORM;

export class BulkReplaySlots<T extends { id: string }> {
  private readonly held = new Map<Slot, T>();

  constructor(private readonly limits: BulkReplayLimits) {}

  /**
   * Throws the limit a start for `namespace` (undefined: all namespaces, the platform's) meets
   * (429); returns when its slot is free. Take it with hold() before anything else starts.
   */
  admit(namespace: string | undefined): void {
    const slot: Slot = namespace ?? PLATFORM;
    const same = this.held.get(slot);
    if (same) throw bulkReplayRunning(namespace, same.id, RETRY_AFTER_SECONDS);
    const platform = this.held.get(PLATFORM);
    const namespaces = this.held.size - (platform ? 1 : 0);
    if (this.limits.allNamespaces === 'exclusive') {
      if (slot !== PLATFORM && platform) throw bulkReplayExclusive('running', RETRY_AFTER_SECONDS);
      if (slot === PLATFORM && namespaces > 0) throw bulkReplayExclusive('waiting', RETRY_AFTER_SECONDS, namespaces);
    }
    if (slot !== PLATFORM && namespaces >= this.limits.maxRunning)
      throw bulkReplayReplicaFull(this.limits.maxRunning, RETRY_AFTER_SECONDS);
  }

  /** Takes the slot admit() found free, for `replay`, until release(). */
  hold(namespace: string | undefined, replay: T): void {
    this.admit(namespace);
    this.held.set(namespace ?? PLATFORM, replay);
  }

  /** Gives the slot back once the replay ended. */
  release(namespace: string | undefined, replay: T): void {
    const slot: Slot = namespace ?? PLATFORM;
    if (this.held.get(slot) === replay) this.held.delete(slot);
  }

  running(): T[] {
    return [...this.held.values()];
  }
}
