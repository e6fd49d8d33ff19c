/**
 * A team's Secret named by a Destination (its basicAuth, bearerToken or TLS material) or by a
 * WebhookIntegration (spec.credentials.secretRef, spec.authentication.signature.secretRef),
 * changed: the resources of its namespace that name it are reconciled at once, so the ingesters
 * deliver with the new credentials, or accept the new password or signing secret, within seconds
 * rather than at the next resync.
 *
 * Watching every Secret of every team namespace would cache (and list, at each start) the whole
 * cluster's Secrets. As with the credentials Secrets the operator makes (label
 * intake.dev/credentials), the informer asks for labelled Secrets only: a team labels the Secrets
 * its resources use `intake.dev/watch: "true"`; an unlabelled one is still read at every
 * reconcile and picked up at the next resync. Only the metadata is kept: the reconcile reads the
 * Secret itself, never from this cache.
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { Destination, DestinationAuthSpec, WebhookIntegration } from '../../api/v1alpha1/types.js';

export const WATCH_LABEL = 'intake.dev/watch';
export const WATCH_SELECTOR = `${WATCH_LABEL}=true`;

/** What the cache keeps of a watched Secret: who it is and its version, never its data. */
export function keptWatchedSecret(secret: V1Secret): V1Secret {
  const m = secret.metadata ?? {};
  return { metadata: { name: m.name, namespace: m.namespace, resourceVersion: m.resourceVersion } };
}

/** The names of the Secrets a Destination's spec names (in its own namespace). */
export function secretsOf(d: Destination): string[] {
  const names = new Set<string>();
  const add = (auth: DestinationAuthSpec | undefined): void => {
    if (!auth) return;
    if (auth.basicAuth?.secretRef?.name) names.add(auth.basicAuth.secretRef.name);
    if (auth.bearerToken?.secretRef?.name) names.add(auth.bearerToken.secretRef.name);
    if (auth.tls?.secretRef?.name) names.add(auth.tls.secretRef.name);
  };
  add(d.spec?.http);
  add(d.spec?.alertmanager);
  return [...names];
}

/** The Destinations of `namespace` that name Secret `name`. */
export function destinationsNaming(all: Iterable<Destination>, namespace: string, name: string): Destination[] {
  const out: Destination[] = [];
  for (const d of all) if (d.metadata.namespace === namespace && secretsOf(d).includes(name)) out.push(d);
  return out;
}

/** The WebhookIntegrations of `namespace` whose password or signing secret is Secret `name`. */
export function integrationsNaming(
  all: Iterable<WebhookIntegration>,
  namespace: string,
  name: string,
): WebhookIntegration[] {
  const out: WebhookIntegration[] = [];
  for (const wi of all)
    if (
      wi.metadata.namespace === namespace &&
      (wi.spec?.credentials?.secretRef?.name === name || wi.spec?.authentication?.signature?.secretRef?.name === name)
    )
      out.push(wi);
  return out;
}
