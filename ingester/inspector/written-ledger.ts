/**
 * What this replica wrote to the inspector's stream, by namespace (bus-store.ts): the bus keeps
 * no byte count per namespace, so each replica holds its own writes to the namespace share and the
 * whole, as the memory store does. A namespace at its share gives up its own oldest capture (its
 * stream sequence is deleted), never another's; past the whole, the namespace holding the most.
 * With several replicas the stream holds up to that many times the shares; its max_bytes is the
 * server's backstop.
 */
import type { InspectorSettings } from './settings.js';

/** One capture written (or being written): its sequence once the bus acknowledged it. */
export interface Written {
  readonly namespace: string;
  readonly bytes: number;
  readonly atMs: number;
  seq?: number;
  /** Given up before its acknowledgement came: delete it as soon as its sequence is known. */
  evicted?: boolean;
}

export class WrittenLedger {
  private readonly byNamespace = new Map<string, { bytes: number; items: Written[] }>();
  private total = 0;

  constructor(
    private readonly s: Pick<InspectorSettings, 'maxBytes' | 'maxBytesPerNamespace' | 'maxAgeMs'>,
    private readonly now: () => number = Date.now,
  ) {}

  /** Bytes held, in all or by one namespace. */
  bytes(namespace?: string): number {
    return namespace === undefined ? this.total : (this.byNamespace.get(namespace)?.bytes ?? 0);
  }

  /**
   * Reserves `bytes` for a new capture of `namespace`; returns it and what was given up for it (to
   * delete from the stream), or undefined when it can never fit.
   */
  reserve(namespace: string, bytes: number): { written: Written; evicted: Written[] } | undefined {
    if (bytes > this.s.maxBytesPerNamespace || bytes > this.s.maxBytes) return undefined;
    this.expire();
    const ns = this.byNamespace.get(namespace) ?? { bytes: 0, items: [] };
    this.byNamespace.set(namespace, ns);
    const evicted: Written[] = [];
    while (ns.bytes + bytes > this.s.maxBytesPerNamespace) evicted.push(this.giveUpOldest(ns));
    while (this.total + bytes > this.s.maxBytes) {
      const largest = [...this.byNamespace.values()].reduce((a, b) => (b.bytes > a.bytes ? b : a));
      evicted.push(this.giveUpOldest(largest));
    }
    const written: Written = { namespace, bytes, atMs: this.now() };
    ns.items.push(written);
    ns.bytes += bytes;
    this.total += bytes;
    return { written, evicted };
  }

  /** A write the bus did not take: its reservation goes back. */
  release(w: Written): void {
    const ns = this.byNamespace.get(w.namespace);
    const i = ns?.items.indexOf(w) ?? -1;
    if (!ns || i < 0) return;
    ns.items.splice(i, 1);
    ns.bytes -= w.bytes;
    this.total -= w.bytes;
  }

  /** Forgets what the stream's max_age removed already. */
  private expire(): void {
    const since = this.now() - this.s.maxAgeMs;
    for (const [name, ns] of this.byNamespace) {
      while (ns.items.length > 0 && (ns.items[0] as Written).atMs < since) {
        const w = ns.items.shift() as Written;
        ns.bytes -= w.bytes;
        this.total -= w.bytes;
      }
      if (ns.items.length === 0) this.byNamespace.delete(name);
    }
  }

  private giveUpOldest(ns: { bytes: number; items: Written[] }): Written {
    const w = ns.items.shift() as Written;
    ns.bytes -= w.bytes;
    this.total -= w.bytes;
    w.evicted = true;
    return w;
  }
}
