/**
 * Which WebhookIntegrations claim each integration name, kept current from informer events. A
 * reconcile looks up its own name instead of scanning every integration in the cache, which made
 * applying N integrations at once cost N² name comparisons.
 */
import type { WebhookIntegration } from '../api/v1alpha1/types.js';
import { integrationNameOf } from './naming.js';

const keyOf = (wi: WebhookIntegration): string => `${wi.metadata.namespace}/${wi.metadata.name}`;

export class NameClaims {
  private readonly byName = new Map<string, Map<string, WebhookIntegration>>();

  /** Applies one informer event: `old` leaves its name, `next` takes its own. */
  update(next: WebhookIntegration | undefined, old: WebhookIntegration | undefined): void {
    if (old) {
      const name = integrationNameOf(old);
      const claims = this.byName.get(name);
      claims?.delete(keyOf(old));
      if (claims?.size === 0) this.byName.delete(name);
    }
    if (next) {
      const name = integrationNameOf(next);
      let claims = this.byName.get(name);
      if (!claims) this.byName.set(name, (claims = new Map()));
      claims.set(keyOf(next), next);
    }
  }

  /** Every integration whose spec claims `name` (deleted ones included: the plan skips those). */
  claimants(name: string): WebhookIntegration[] {
    return [...(this.byName.get(name)?.values() ?? [])];
  }
}
