/**
 * A histogram of durations by endpoint (intake_http_request_duration_seconds), observed without a
 * label look-up, registered and written as prom-client's Histogram is: the same lines in the same
 * order, in the text format and in getMetricsAsJSON.
 *
 * Why: prom-client's `Histogram.observe(labels, value)` builds a key string from the labels
 * object, checks every label and makes a closure on each call; on the single-event path that was
 * most of what an answered request's metrics cost. Here an endpoint's buckets are found by one Map
 * look-up and an observation allocates nothing.
 */
import type { Metric, Registry } from 'prom-client';

interface Buckets {
  /** Observations per bucket (not cumulative), one per upper bound; above the last one only `count` counts. */
  readonly counts: number[];
  sum: number;
  count: number;
}

/** One line's value, as prom-client's metrics give theirs to the registry. */
interface Value {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName: string;
  /** As prom-client's: null on a bucket's line (exemplars are off), absent on the sum's and count's. */
  exemplar?: null;
}

export class EndpointDurations {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly byEndpoint = new Map<string, Buckets>();

  constructor(
    readonly name: string,
    readonly help: string,
    /** Upper bounds in seconds, ascending. */
    private readonly bounds: readonly number[],
    registers: readonly Registry[],
  ) {
    for (const registry of registers) registry.registerMetric(this as unknown as Metric);
  }

  /** One request of `endpoint` that took `seconds`. */
  observe(endpoint: string, seconds: number): void {
    if (!Number.isFinite(seconds)) throw new TypeError(`Value is not a valid number: ${seconds}`);
    let b = this.byEndpoint.get(endpoint);
    if (!b) this.byEndpoint.set(endpoint, (b = { counts: this.bounds.map(() => 0), sum: 0, count: 0 }));
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (seconds <= (bounds[i] as number)) {
        b.counts[i] = (b.counts[i] as number) + 1;
        break;
      }
    }
    b.sum += seconds;
    b.count += 1;
  }

  reset(): void {
    this.byEndpoint.clear();
  }

  /** What the registry writes in the text format: `le` as a label, the endpoint as a shared one. */
  getForPromString(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    const values: Value[] = [];
    for (const [endpoint, b] of this.byEndpoint) {
      const shared = { endpoint };
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += b.counts[i] as number;
        values.push(bucketLine(this.bounds[i] as number, cumulative, this.name, shared));
      }
      values.push(
        bucketLine('+Inf', b.count, this.name, shared),
        { labels: {}, sharedLabels: shared, value: b.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: shared, value: b.count, metricName: `${this.name}_count` },
      );
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values });
  }

  /** As getForPromString, the shared labels merged into each line's (getMetricsAsJSON). */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    const data = await this.getForPromString();
    data.values = data.values.map(({ labels, sharedLabels, ...line }) => ({
      ...line,
      labels: { ...labels, ...sharedLabels },
    }));
    return data;
  }
}

const bucketLine = (le: number | string, value: number, name: string, sharedLabels: Record<string, string>): Value => ({
  labels: { le },
  sharedLabels,
  value,
  metricName: `${name}_bucket`,
  exemplar: null,
});
