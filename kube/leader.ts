/**
 * Leader election on a coordination.k8s.io Lease (after client-go's leaderelection): acquire when
 * the Lease is free or expired, renew every retry period, and give up (the caller exits) when a
 * renewal has not succeeded within the renew deadline. Writes carry resourceVersion, so two
 * candidates can never both win one round.
 */
import { CoordinationV1Api, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { statusOf } from './config.js';

export interface LeaderElectionOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationSeconds?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  logger: Logger;
}

/** Go's metav1.MicroTime wants exactly six fractional digits. */
const microTime = (d: Date): string => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

export class LeaderElector {
  private readonly api: CoordinationV1Api;
  private stopped = false;
  private readonly leaseSeconds: number;
  private readonly renewDeadlineMs: number;
  private readonly retryMs: number;

  constructor(private readonly o: LeaderElectionOptions) {
    this.api = o.kubeConfig.makeApiClient(CoordinationV1Api);
    this.leaseSeconds = o.leaseDurationSeconds ?? 15;
    this.renewDeadlineMs = o.renewDeadlineMs ?? 10_000;
    this.retryMs = o.retryPeriodMs ?? 2_000;
    if (!(this.retryMs < this.renewDeadlineMs && this.renewDeadlineMs < this.leaseSeconds * 1000)) {
      throw new RangeError('leader election: need retryPeriod < renewDeadline < leaseDuration');
    }
  }

  /** Resolves once this candidate leads; then calls onLost if leadership cannot be kept. */
  async acquire(onLost: () => void): Promise<void> {
    while (!this.stopped) {
      if (await this.tryAcquireOrRenew()) break;
      await sleep(this.retryMs * (0.8 + Math.random() * 0.4));
    }
    if (this.stopped) return;
    this.o.logger.info({ lease: `${this.o.namespace}/${this.o.name}`, identity: this.o.identity }, 'became leader');
    void this.renewLoop(onLost);
  }

  private async renewLoop(onLost: () => void): Promise<void> {
    let lastRenew = Date.now();
    while (!this.stopped) {
      await sleep(this.retryMs);
      if (this.stopped) return;
      if (await this.tryAcquireOrRenew()) {
        lastRenew = Date.now();
      } else if (Date.now() - lastRenew > this.renewDeadlineMs) {
        this.o.logger.error({ lease: `${this.o.namespace}/${this.o.name}` }, 'leadership lost');
        onLost();
        return;
      }
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = new Date();
    try {
      let lease: V1Lease;
      try {
        lease = await this.api.readNamespacedLease({ name: this.o.name, namespace: this.o.namespace });
      } catch (err) {
        if (statusOf(err) !== 404) throw err;
        await this.api.createNamespacedLease({ namespace: this.o.namespace, body: this.leaseBody(now, now, 0) });
        return true;
      }
      const spec = lease.spec ?? {};
      const holder = spec.holderIdentity;
      const renewed = spec.renewTime ? new Date(spec.renewTime as unknown as string).getTime() : 0;
      const expired = renewed + (spec.leaseDurationSeconds ?? this.leaseSeconds) * 1000 < now.getTime();
      if (holder && holder !== this.o.identity && !expired) return false;
      const acquiredAt =
        holder === this.o.identity && spec.acquireTime ? new Date(spec.acquireTime as unknown as string) : now;
      const transitions = (spec.leaseTransitions ?? 0) + (holder === this.o.identity ? 0 : 1);
      const body = this.leaseBody(acquiredAt, now, transitions);
      body.metadata = { ...body.metadata, resourceVersion: lease.metadata?.resourceVersion };
      await this.api.replaceNamespacedLease({ name: this.o.name, namespace: this.o.namespace, body });
      return true;
    } catch (err) {
      this.o.logger.debug({ err: { message: (err as Error).message } }, 'lease not acquired or renewed');
      return false;
    }
  }

  private leaseBody(acquired: Date, renewed: Date, transitions: number): V1Lease {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.o.name, namespace: this.o.namespace },
      spec: {
        holderIdentity: this.o.identity,
        leaseDurationSeconds: this.leaseSeconds,
        acquireTime: microTime(acquired) as unknown as Date,
        renewTime: microTime(renewed) as unknown as Date,
        leaseTransitions: transitions,
      },
    };
  }

  /** Stops renewing and releases the Lease so another replica takes over at once. */
  async release(): Promise<void> {
    this.stopped = true;
    try {
      const lease = await this.api.readNamespacedLease({ name: this.o.name, namespace: this.o.namespace });
      if (lease.spec?.holderIdentity !== this.o.identity) return;
      lease.spec.holderIdentity = undefined;
      lease.spec.leaseDurationSeconds = 1;
      await this.api.replaceNamespacedLease({ name: this.o.name, namespace: this.o.namespace, body: lease });
    } catch (err) {
      this.o.logger.warn({ err: { message: (err as Error).message } }, 'lease not released');
    }
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
