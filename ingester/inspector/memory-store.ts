/**
 * Captures in this replica's memory (no bus). Bounded three ways: an integration keeps its newest
 * `keep` requests; a namespace holds at most maxBytesPerNamespace (its own oldest captures make
 * room, never another's); all of them hold at most maxBytes (past it, the namespace holding the
 * most gives up its oldest). Only requests that proved their credentials are captured
 * (inspector.ts), so nobody can push a tenant's captures out but the tenant itself, within its share.
 */
import type { CapturedRequest } from '../../api/inspector.js';
import type { InspectorSettings } from './settings.js';
import { attemptsKept, withAttempts, type Integration, type InspectorStore, type RecordedAttempt } from './store.js';

interface Held {
  readonly key: string;
  readonly namespace: string;
  readonly bytes: number;
  readonly atMs: number;
  readonly capture?: CapturedRequest;
  readonly attempt?: RecordedAttempt;
  gone: boolean;
}

const keyOf = (w: Integration): string => `${w.namespace}/${w.integration}`;
/** What a kept item costs beyond its JSON: the objects that hold it. */
const OVERHEAD_BYTES = 256;

export class MemoryInspectorStore implements InspectorStore {
  private readonly captures = new Map<string, Held[]>();
  private readonly attempts = new Map<string, Held[]>();
  /** Per namespace, everything it holds, oldest first (removed ones marked gone, dropped lazily). */
  private readonly byNamespace = new Map<string, { bytes: number; held: Held[] }>();
  private total = 0;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly s: Pick<InspectorSettings, 'maxBytes' | 'maxBytesPerNamespace' | 'maxAgeMs'>,
    private readonly now: () => number = Date.now,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, s.maxAgeMs));
    this.sweeper.unref();
  }

  /** Bytes held now, in all and by one namespace. */
  bytes(namespace?: string): number {
    return namespace === undefined ? this.total : (this.byNamespace.get(namespace)?.bytes ?? 0);
  }

  put(c: CapturedRequest, keep: number): void {
    const held = this.hold(keyOf(c), c.namespace, { capture: c }, JSON.stringify(c).length);
    if (!held) return;
    this.append(this.captures, held, keep);
  }

  attempt(where: Integration, a: RecordedAttempt): void {
    const held = this.hold(keyOf(where), where.namespace, { attempt: a }, JSON.stringify(a).length);
    if (held) this.append(this.attempts, held, attemptsKept(this.keepOf(keyOf(where))));
  }

  async list(where: Integration, keep: number): Promise<CapturedRequest[]> {
    const since = this.now() - this.s.maxAgeMs;
    const live = (h: Held) => !h.gone && h.atMs >= since;
    const captures = (this.captures.get(keyOf(where)) ?? []).filter(live).slice(-keep).reverse();
    const attempts = (this.attempts.get(keyOf(where)) ?? []).filter(live).map((h) => h.attempt as RecordedAttempt);
    return withAttempts(
      captures.map((h) => h.capture as CapturedRequest),
      attempts,
    );
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }

  /** Drops what is older than maxAge. */
  sweep(): void {
    const since = this.now() - this.s.maxAgeMs;
    for (const ns of this.byNamespace.values()) for (const h of ns.held) if (h.atMs < since) this.release(h);
    this.compact();
  }

  private keepOf(key: string): number {
    return Math.max(1, this.captures.get(key)?.length ?? 1);
  }

  /** Makes room in the namespace's share and the whole, then charges the item; undefined if it can never fit. */
  private hold(
    key: string,
    namespace: string,
    item: Pick<Held, 'capture' | 'attempt'>,
    json: number,
  ): Held | undefined {
    const bytes = json + OVERHEAD_BYTES;
    if (bytes > this.s.maxBytesPerNamespace) return undefined;
    const ns = this.byNamespace.get(namespace) ?? { bytes: 0, held: [] };
    this.byNamespace.set(namespace, ns);
    while (ns.bytes + bytes > this.s.maxBytesPerNamespace) this.evictOldest(ns);
    while (this.total + bytes > this.s.maxBytes) {
      const largest = [...this.byNamespace.values()].reduce((a, b) => (b.bytes > a.bytes ? b : a));
      if (largest.bytes === 0) return undefined;
      this.evictOldest(largest);
    }
    const held: Held = { key, namespace, bytes, atMs: this.now(), ...item, gone: false };
    ns.bytes += bytes;
    ns.held.push(held);
    this.total += bytes;
    return held;
  }

  private append(map: Map<string, Held[]>, held: Held, keep: number): void {
    const list = (map.get(held.key) ?? []).filter((h) => !h.gone);
    list.push(held);
    while (list.length > keep) this.release(list.shift() as Held);
    map.set(held.key, list);
  }

  private evictOldest(ns: { held: Held[] }): void {
    while (ns.held.length > 0) {
      const h = ns.held.shift() as Held;
      if (!h.gone) return this.release(h);
    }
  }

  private release(h: Held): void {
    if (h.gone) return;
    h.gone = true;
    const ns = this.byNamespace.get(h.namespace);
    if (ns) ns.bytes -= h.bytes;
    this.total -= h.bytes;
  }

  /** Forgets released items and empty namespaces. */
  private compact(): void {
    for (const [name, ns] of this.byNamespace) {
      ns.held = ns.held.filter((h) => !h.gone);
      if (ns.held.length === 0) this.byNamespace.delete(name);
    }
    for (const map of [this.captures, this.attempts])
      for (const [key, list] of map) {
        const live = list.filter((h) => !h.gone);
        if (live.length === 0) map.delete(key);
        else map.set(key, live);
      }
  }
}
