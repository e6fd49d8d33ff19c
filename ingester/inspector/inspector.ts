/**
 * The event inspector (docs/inspector.md): keeps what integrations that enabled it (spec.inspect)
 * received, and reads it back for the admin port.
 *
 * Only requests that proved their credentials are captured. A request refused before that (wrong
 * credentials, a forged signature, a sender blocked for guessing) comes from anyone on the
 * internet: keeping its body would let a stranger push a tenant's own captures out, and put the
 * stranger's text in front of the tenant as if its tool had sent it. Those stay what activity
 * shows of them: an address and a count (docs/activity.md).
 */
import type { CapturedRequest, CapturedRequestSummary } from '../../api/inspector.js';
import { summaryOf } from '../../api/inspector.js';
import type { RouteTable } from '../routing/route-table.js';
import { captureOf, type AnsweredRequest } from './capture.js';
import type { InspectorSettings } from './settings.js';
import type { InspectorStore, Integration, RecordedAttempt } from './store.js';

export class Inspector {
  constructor(
    private readonly store: InspectorStore,
    private readonly settings: InspectorSettings,
    private readonly routes: () => RouteTable,
  ) {}

  /** Captures an answered request of an integration that enabled the inspector; never throws. */
  capture(r: AnsweredRequest): void {
    const keep = r.entry.inspectRequests;
    if (keep === undefined) return;
    this.store.put(captureOf(r, this.settings), keep);
  }

  /** Whether the integration is inspected now (its attempts are worth recording). */
  inspects(where: Integration): boolean {
    return this.keepOf(where) !== undefined;
  }

  attempt(where: Integration, a: RecordedAttempt): void {
    if (this.inspects(where)) this.store.attempt(where, a);
  }

  /** The integration's captures, newest first; undefined when it is not published or not inspected. */
  async list(where: Integration): Promise<CapturedRequestSummary[] | undefined> {
    const keep = this.keepOf(where);
    if (keep === undefined) return undefined;
    return (await this.store.list(where, keep)).map(summaryOf);
  }

  async get(where: Integration, id: string): Promise<CapturedRequest | undefined> {
    const keep = this.keepOf(where);
    if (keep === undefined) return undefined;
    return (await this.store.list(where, keep)).find((c) => c.id === id);
  }

  close(): Promise<void> {
    return this.store.close();
  }

  private keepOf(where: Integration): number | undefined {
    const entry = this.routes().webhook(where.integration);
    return entry && entry.namespace === where.namespace ? entry.inspectRequests : undefined;
  }
}
