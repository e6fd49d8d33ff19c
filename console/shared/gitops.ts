/**
 * Whether Argo CD or Flux manages an object (their labels and annotations). The console does not
 * change such an object: the next sync would undo the change, which belongs in Git. The pages use
 * this to turn their buttons off, and the console server to refuse the write itself, so a page
 * opened before it knew the object (or an API call made without a page) cannot get round it.
 * Plain code: the server (Node) and the pages (the browser bundle) both import it.
 */

export interface GitOps {
  tool: 'Argo CD' | 'Flux';
  /** The application or Kustomization/HelmRelease that owns the object. */
  owner: string;
}

export interface ObjectMeta {
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export function gitOpsOwner(metadata: ObjectMeta | undefined): GitOps | undefined {
  const labels = metadata?.labels ?? {};
  const annotations = metadata?.annotations ?? {};
  const argo = labels['argocd.argoproj.io/instance'] ?? annotations['argocd.argoproj.io/tracking-id'];
  if (argo) return { tool: 'Argo CD', owner: argo.split(':')[0] ?? argo };
  const flux =
    labels['kustomize.toolkit.fluxcd.io/name'] ??
    labels['helm.toolkit.fluxcd.io/name'] ??
    annotations['kustomize.toolkit.fluxcd.io/name'] ??
    annotations['helm.toolkit.fluxcd.io/name'];
  if (flux) {
    const ns =
      labels['kustomize.toolkit.fluxcd.io/namespace'] ??
      labels['helm.toolkit.fluxcd.io/namespace'] ??
      metadata?.namespace;
    return { tool: 'Flux', owner: `${ns}/${flux}` };
  }
  const managedBy = (labels['app.kubernetes.io/managed-by'] ?? '').toLowerCase();
  if (managedBy.includes('argocd') || managedBy.includes('argo-cd')) return { tool: 'Argo CD', owner: managedBy };
  if (managedBy.includes('flux')) return { tool: 'Flux', owner: managedBy };
  return undefined;
}
