/**
 * How many sampled traces the request path may start: a rate per replica and a smaller one per
 * namespace (token buckets, refilled from the clock). A sender's traceparent asks for sampling
 * with one flag; honoured without a bound, any tenant could make every request of its own (and,
 * through the shared export queue, the replica) pay for spans. Only authenticated requests reach
 * the budget at all: a stranger's request is refused before any span exists.
 */
import { TokenBucket } from '../limits/token-bucket.js';

/** Namespaces whose buckets are kept; past this the buckets start again (full), bounded by the replica's rate. */
const MAX_NAMESPACES = 10_000;

export class TraceBudget {
  private readonly replica?: TokenBucket;
  private readonly namespaces = new Map<string, TokenBucket>();

  constructor(
    private readonly perSecond: number,
    private readonly perNamespacePerSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (perSecond > 0) this.replica = new TokenBucket(perSecond, Math.max(1, perSecond), now());
  }

  /** Takes one trace from the namespace's share and the replica's; false when either is spent. */
  take(namespace: string): boolean {
    if (!this.replica || this.perNamespacePerSecond <= 0) return false;
    const now = this.now();
    let own = this.namespaces.get(namespace);
    if (!own) {
      if (this.namespaces.size >= MAX_NAMESPACES) this.namespaces.clear();
      own = new TokenBucket(this.perNamespacePerSecond, Math.max(1, this.perNamespacePerSecond), now);
      this.namespaces.set(namespace, own);
    }
    if (own.waitMs(1, now) > 0 || this.replica.waitMs(1, now) > 0) return false;
    own.take(1);
    this.replica.take(1);
    return true;
  }
}
