/**
 * The activity loop (docs/activity.md): every `intervalMs`, ask each ingester replica for its
 * report (GET /status/activity on the admin port), merge the reports per integration and key,
 * and queue a status write for each resource whose merged activity differs from what it holds.
 *
 * - Only differences are written: quiet integrations cause no writes at all.
 * - Writes go through one WriteQueue capped at `writesPerSecond` across every resource.
 * - A replica that does not answer keeps its last report for `retainMs` (it neither erases what
 *   the others report nor drops its own counts at the first timeout); after that it no longer counts.
 * - With no report at all (no replica answered yet) nothing is written: nothing is known.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Activity, ActivityReport, ReportedActivity } from '../../api/activity.js';
import type { IntakeResource } from '../../api/v1alpha1/types.js';
import type { OperatorMetrics } from '../metrics.js';
import { integrationNameOf, queueKey, toRouteName } from '../naming.js';
import { activityFingerprint, mergeActivity, type MergedActivity } from './merge.js';
import { fetchReplicaReport } from './replica-report.js';
import { ReplicaDiscovery, type Replica } from './replicas.js';
import { WriteQueue } from './write-queue.js';
import { WrittenFingerprints } from './written-fingerprints.js';

export interface ActivitySettings {
  /** The ingester admin Service (in the operator's --namespace) whose EndpointSlices list the replicas. */
  service: string;
  intervalMs: number;
  writesPerSecond: number;
}

export interface ActivitySyncOptions extends ActivitySettings {
  kubeConfig: KubeConfig;
  namespace: string;
  logger: Logger;
  metrics: OperatorMetrics;
  /** Every WebhookIntegration and ApiKey the operator watches (the informers' caches). */
  resources: () => IntakeResource[];
  /** Writes status.activity whole. */
  write: (obj: IntakeResource, activity: Activity) => Promise<void>;
  /** After each merge (the controller re-checks the Receiving conditions). */
  afterMerge?: () => void;
  /** Another report asked of the same replicas in each round, its writes queued under the same cap (operator/delivery/). */
  alongside?: AlongsideRound;
}

/** A second report per replica, polled and merged in the activity loop's rounds. */
export interface AlongsideRound {
  poll(replicas: readonly Replica[], timeoutMs: number): Promise<void>;
  merge(writes: { set(key: string, write: () => Promise<void>): void; delete(key: string): void }): void;
}

interface Held {
  report: ActivityReport;
  atMs: number;
}

interface Pending {
  obj: IntakeResource;
  activity: MergedActivity;
  fingerprint: string;
}

/** A replica that has not answered within the interval (at most 5 s) is late: the round goes on without it. */
const pollTimeoutMs = (intervalMs: number): number => Math.min(5000, Math.max(1000, intervalMs));

/** The route identity a replica reports a resource under (the route contract's kind, namespace and name). */
export function reportKeyOf(obj: IntakeResource): string {
  const name =
    obj.kind === 'WebhookIntegration' ? integrationNameOf(obj) : toRouteName(obj.metadata.name ?? '') || 'key';
  return `${obj.kind}/${obj.metadata.namespace}/${name}`;
}

export class ActivitySync {
  private readonly discovery: ReplicaDiscovery;
  private readonly reports = new Map<string, Held>();
  private readonly merged = new Map<string, MergedActivity>();
  private readonly written = new WrittenFingerprints();
  private readonly writes: WriteQueue<() => Promise<void>>;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private readonly retainMs: number;

  constructor(private readonly o: ActivitySyncOptions) {
    this.discovery = new ReplicaDiscovery(o.kubeConfig, o.namespace, o.service, o.logger);
    this.writes = new WriteQueue<() => Promise<void>>(o.writesPerSecond, (_key, write) => write());
    this.retainMs = Math.max(5 * o.intervalMs, 60_000);
  }

  start(): void {
    this.discovery.start();
    void this.writes.run();
    const loop = async (): Promise<void> => {
      if (this.stopped) return;
      try {
        await this.tick();
      } catch (err) {
        this.o.logger.warn({ err: { message: (err as Error).message } }, 'activity merge failed; next interval');
      }
      if (!this.stopped) this.timer = setTimeout(loop, this.o.intervalMs);
    };
    this.timer = setTimeout(loop, Math.min(this.o.intervalMs, 1000));
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.writes.stop();
    this.discovery.stop();
  }

  /** The merged last event of a resource (fresher than its status while a write waits for its turn). */
  lastEventTime(obj: IntakeResource): string | undefined {
    return this.merged.get(queueKey(obj.kind, obj.metadata.namespace as string, obj.metadata.name as string))
      ?.lastEventTime;
  }

  /** One round: poll, merge, queue what changed. Public for tests and the benchmark. */
  async tick(): Promise<void> {
    await this.poll();
    const nowMs = Date.now();
    for (const [key, held] of this.reports) if (nowMs - held.atMs > this.retainMs) this.reports.delete(key);
    this.o.metrics.activityReplicas.set(this.reports.size);
    this.o.alongside?.merge(this.writes);
    if (this.reports.size === 0) return;
    const byTarget = new Map<string, ReportedActivity[]>();
    const add = (kind: string, list: ReportedActivity[]): void => {
      for (const r of list) {
        const key = `${kind}/${r.namespace}/${r.name}`;
        const found = byTarget.get(key);
        if (found) found.push(r);
        else byTarget.set(key, [r]);
      }
    };
    for (const { report } of this.reports.values()) {
      add('WebhookIntegration', report.webhookIntegrations ?? []);
      add('ApiKey', report.apiKeys ?? []);
    }
    const seen = new Set<string>();
    for (const obj of this.o.resources()) {
      if (obj.metadata.deletionTimestamp) continue;
      const key = queueKey(obj.kind, obj.metadata.namespace as string, obj.metadata.name as string);
      seen.add(key);
      const reported = byTarget.get(reportKeyOf(obj)) ?? [];
      const previous = (obj.status as { activity?: Activity } | undefined)?.activity;
      if (reported.length === 0 && !previous) continue;
      const next = mergeActivity(reported, previous);
      this.merged.set(key, next);
      const fingerprint = activityFingerprint(next);
      if (!this.written.differs(key, fingerprint, activityFingerprint(previous))) {
        this.writes.delete(key);
        continue;
      }
      const pending: Pending = { obj, activity: next, fingerprint };
      this.writes.set(key, () => this.writeOne(key, pending));
    }
    for (const key of this.merged.keys()) if (!seen.has(key)) this.merged.delete(key);
    this.written.keepOnly(seen);
    this.o.metrics.activityPendingWrites.set(this.writes.size);
    this.o.afterMerge?.();
  }

  private async poll(): Promise<void> {
    const replicas = this.discovery.replicas();
    await Promise.all([
      this.o.alongside?.poll(replicas, pollTimeoutMs(this.o.intervalMs)),
      ...replicas.map(async (replica) => {
        try {
          const report = await fetchReplicaReport<ActivityReport>(
            replica.url,
            '/status/activity',
            pollTimeoutMs(this.o.intervalMs),
          );
          this.reports.set(replica.key, { report, atMs: Date.now() });
          this.o.metrics.activityPolls.inc({ result: 'ok' });
        } catch (err) {
          this.o.metrics.activityPolls.inc({ result: 'error' });
          this.o.logger.debug(
            { replica: replica.key, err: { message: (err as Error).message } },
            'ingester replica did not report its activity; keeping its last report for now',
          );
        }
      }),
    ]);
  }

  private async writeOne(key: string, p: Pending): Promise<void> {
    const activity: Activity = { ...p.activity, updatedTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') };
    try {
      await this.o.write(p.obj, activity);
      this.written.wrote(key, p.fingerprint);
      this.o.metrics.activityWrites.inc({ result: 'ok' });
    } catch (err) {
      this.o.metrics.activityWrites.inc({ result: 'error' });
      this.o.logger.warn(
        { key, err: { message: (err as Error).message, code: (err as { code?: number }).code } },
        'status.activity not written; the next merge tries again',
      );
    } finally {
      this.o.metrics.activityPendingWrites.set(this.writes.size);
    }
  }
}
