/**
 * Delivery status (docs/destinations.md, Status): in each round of the activity loop
 * (operator/activity/sync.ts), ask every ingester replica for its delivery report
 * (GET /status/delivery on the admin port), merge the reports per team Destination
 * (merge.ts), and queue a write of `status.delivery` for each one whose merged delivery differs
 * from what it holds, in the activity loop's write queue (the same cap, --activity-writes-per-second,
 * across both). The `CircuitOpen` and `Paused` conditions are the reconcile's: after a merge the
 * Destinations whose conditions would change are queued for it (`afterMerge`).
 *
 * Bounded: a replica's report is read up to MAX_REPORT_BYTES and MAX_REPORTED_DESTINATIONS
 * destinations; only the destinations of Destination resources the operator watches are merged
 * (their number is capped per namespace: --max-destinations-per-namespace); a replica that does
 * not answer keeps its last report for `retainMs`, then no longer counts.
 */
import type { Logger } from 'pino';
import { MAX_REPORTED_DESTINATIONS, type DeliveryReport, type ReportedDelivery } from '../../api/delivery-status.js';
import { teamDestinationName } from '../../api/destination-document.js';
import type { Destination, DestinationDelivery } from '../../api/v1alpha1/types.js';
import { fetchReplicaReport } from '../activity/replica-report.js';
import type { Replica } from '../activity/replicas.js';
import { WrittenFingerprints } from '../activity/written-fingerprints.js';
import type { OperatorMetrics } from '../metrics.js';
import { queueKey } from '../naming.js';
import { deliveryFingerprint, mergeDelivery, type MergedDelivery } from './merge.js';

/** A report longer than this is not read (10,000 destinations of ~1.5 KiB each fit). */
export const MAX_REPORT_BYTES = 16 * 1024 * 1024;

/** Where the merge queues its writes: the activity loop's queue (one cap for both). */
export interface StatusWrites {
  set(key: string, write: () => Promise<void>): void;
  delete(key: string): void;
}

export interface DeliverySyncOptions {
  logger: Logger;
  metrics: OperatorMetrics;
  /** Every Destination the operator watches (the informers' caches). */
  destinations: () => Destination[];
  /** Writes status.delivery whole. */
  write: (d: Destination, delivery: DestinationDelivery) => Promise<void>;
  /** After each merge (the controller re-checks the CircuitOpen and Paused conditions). */
  afterMerge?: () => void;
  retainMs: number;
}

interface Held {
  report: DeliveryReport;
  atMs: number;
}

export class DeliverySync {
  private readonly reports = new Map<string, Held>();
  private readonly merged = new Map<string, MergedDelivery>();
  private readonly written = new WrittenFingerprints();

  constructor(private readonly o: DeliverySyncOptions) {}

  /** The merged delivery of a Destination, once a replica reported (absent: nothing known yet). */
  mergedOf(d: Destination): MergedDelivery | undefined {
    return this.merged.get(queueKey('Destination', d.metadata.namespace as string, d.metadata.name as string));
  }

  /** Asks every replica for its report (in the activity loop's round, beside its own requests). */
  async poll(replicas: readonly Replica[], timeoutMs: number): Promise<void> {
    await Promise.all(
      replicas.map(async (replica) => {
        try {
          const report = await fetchReplicaReport<DeliveryReport>(
            replica.url,
            '/status/delivery',
            timeoutMs,
            MAX_REPORT_BYTES,
          );
          if (!Array.isArray(report?.destinations)) throw new Error('not a delivery report');
          this.reports.set(replica.key, { report, atMs: Date.now() });
        } catch (err) {
          this.o.logger.debug(
            { replica: replica.key, err: { message: (err as Error).message } },
            'ingester replica did not report its deliveries; keeping its last report for now',
          );
        }
      }),
    );
  }

  /** Merges the held reports and queues what changed. Public for tests. */
  merge(writes: StatusWrites): void {
    const nowMs = Date.now();
    for (const [key, held] of this.reports) if (nowMs - held.atMs > this.o.retainMs) this.reports.delete(key);
    if (this.reports.size === 0) return;
    const byName = new Map<string, ReportedDelivery[]>();
    for (const { report } of this.reports.values())
      for (const r of report.destinations.slice(0, MAX_REPORTED_DESTINATIONS)) {
        if (typeof r?.name !== 'string' || typeof r.namespace !== 'string') continue;
        const found = byName.get(r.name);
        if (found) found.push(r);
        else byName.set(r.name, [r]);
      }
    const seen = new Set<string>();
    for (const d of this.o.destinations()) {
      if (d.metadata.deletionTimestamp) continue;
      const namespace = d.metadata.namespace as string;
      const name = d.metadata.name as string;
      const key = queueKey('Destination', namespace, name);
      seen.add(key);
      const reported = byName.get(teamDestinationName(namespace, name)) ?? [];
      const previous = d.status?.delivery;
      if (reported.length === 0) {
        // Not delivered to by any replica now (not published, or not arrived yet): nothing is known.
        this.merged.delete(key);
        continue;
      }
      const next = mergeDelivery(reported, previous);
      this.merged.set(key, next);
      const fingerprint = deliveryFingerprint(next.delivery);
      if (!this.written.differs(key, fingerprint, deliveryFingerprint(previous))) {
        writes.delete(key);
        continue;
      }
      writes.set(key, () => this.writeOne(key, d, next, fingerprint));
    }
    for (const key of this.merged.keys()) if (!seen.has(key)) this.merged.delete(key);
    this.written.keepOnly(seen);
    this.o.afterMerge?.();
  }

  private async writeOne(key: string, d: Destination, m: MergedDelivery, fingerprint: string): Promise<void> {
    const delivery: DestinationDelivery = {
      ...m.delivery,
      updatedTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    };
    try {
      await this.o.write(d, delivery);
      this.written.wrote(key, fingerprint);
      this.o.metrics.deliveryStatusWrites.inc({ result: 'ok' });
    } catch (err) {
      this.o.metrics.deliveryStatusWrites.inc({ result: 'error' });
      this.o.logger.warn(
        { key, err: { message: (err as Error).message, code: (err as { code?: number }).code } },
        'status.delivery not written; the next merge tries again',
      );
    }
  }
}
