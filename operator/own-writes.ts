/**
 * The resourceVersions the operator's own writes produced, so that the watch event of a write
 * does not queue the reconcile that made it once more. That reconcile already went on from what
 * the write returned; running it again only read the caches and found nothing to do, and with
 * 1,000 integrations applied at once it doubled the reconciles (the finalizer, the credentials
 * Secret and the route Secret each came back as an event).
 *
 * Only an event carrying exactly the resourceVersion a write returned is ours: any other change
 * (a user's edit, a deletion, a write by someone else in between) has a resourceVersion of its
 * own and queues the reconcile as before.
 */
import type { KubernetesObject } from '@kubernetes/client-node';

/** Forgotten all at once beyond this (events that never came, after a relist): at worst a reconcile more. */
const MAX_REMEMBERED = 10_000;

export class OwnWrites {
  private readonly written = new Map<string, string>();
  /** Objects with a write under way, and the resourceVersions of the events held back meanwhile. */
  private readonly pending = new Map<string, string[]>();

  /**
   * Runs a write to `kind` `namespace/name` and holds back that object's watch events while it is
   * under way. The API server may send a write's watch event before the write's own answer is
   * read: the event then looked like someone else's change and queued the reconcile that made it,
   * which ran again at once, before the cache showed its other writes, and had its creates
   * refused (409: seen with 32 workers on a busy API server). `missed` is true when an event held
   * back was not the write's own (or the write wrote nothing): the caller queues the reconcile.
   */
  async during<T extends KubernetesObject | undefined>(
    kind: string,
    namespace: string,
    name: string,
    write: () => Promise<T>,
  ): Promise<{ written: T; missed: boolean }> {
    const key = `${kind}/${namespace}/${name}`;
    const seen: string[] = [];
    this.pending.set(key, seen);
    let written: T;
    try {
      written = await write();
    } finally {
      if (this.pending.get(key) === seen) this.pending.delete(key);
    }
    const rv = written?.metadata?.resourceVersion;
    if (!rv || !seen.includes(rv)) this.record(kind, written);
    return { written, missed: seen.some((v) => v !== rv) };
  }

  /** Remembers what a write returned (`kind` names the cache the event will come from). */
  record(kind: string, written: KubernetesObject | undefined): void {
    const rv = written?.metadata?.resourceVersion;
    if (!written || !rv) return;
    if (this.written.size >= MAX_REMEMBERED) this.written.clear();
    this.written.set(keyOf(kind, written), rv);
  }

  /** Whether this event's object is exactly what one of our writes produced (forgotten once seen). */
  isOwn(kind: string, obj: KubernetesObject | undefined): boolean {
    const rv = obj?.metadata?.resourceVersion;
    if (!obj || !rv) return false;
    const key = keyOf(kind, obj);
    const held = this.pending.get(key);
    if (held) {
      held.push(rv);
      return true;
    }
    if (this.written.get(key) !== rv) return false;
    this.written.delete(key);
    return true;
  }

  /** Forgets an object (deleted). */
  forget(kind: string, obj: KubernetesObject | undefined): void {
    if (obj) this.written.delete(keyOf(kind, obj));
  }

  get size(): number {
    return this.written.size;
  }
}

const keyOf = (kind: string, obj: KubernetesObject): string =>
  `${kind}/${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
