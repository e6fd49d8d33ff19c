/** What the console's pages derive from a resource (console/web/data/model.ts). */
import type { Resource } from '../../../console/web/data/api.js';
import { age, gitOpsOwner } from '../../../console/web/data/model.js';

const resource = (labels: Record<string, string> = {}, annotations: Record<string, string> = {}): Resource => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  metadata: { name: 'x', namespace: 'team', labels, annotations },
});

describe('gitOpsOwner', () => {
  it('recognises Argo CD by its instance label or tracking annotation', () => {
    expect(gitOpsOwner(resource({ 'argocd.argoproj.io/instance': 'payments' }))).toEqual({
      tool: 'Argo CD',
      owner: 'payments',
    });
    expect(
      gitOpsOwner(resource({}, { 'argocd.argoproj.io/tracking-id': 'payments:intake.dev/WebhookIntegration:team/x' })),
    ).toEqual({ tool: 'Argo CD', owner: 'payments' });
  });
  it('recognises Flux Kustomizations and HelmReleases', () => {
    expect(
      gitOpsOwner(
        resource({
          'kustomize.toolkit.fluxcd.io/name': 'apps',
          'kustomize.toolkit.fluxcd.io/namespace': 'flux-system',
        }),
      ),
    ).toEqual({ tool: 'Flux', owner: 'flux-system/apps' });
    expect(gitOpsOwner(resource({ 'helm.toolkit.fluxcd.io/name': 'intake-config' }))).toEqual({
      tool: 'Flux',
      owner: 'team/intake-config',
    });
  });
  it('leaves Helm and hand-made objects editable', () => {
    expect(gitOpsOwner(resource({ 'app.kubernetes.io/managed-by': 'Helm' }))).toBeUndefined();
    expect(gitOpsOwner(resource())).toBeUndefined();
  });
});

describe('age', () => {
  it('says how long ago, in the unit that reads best', () => {
    const now = Date.parse('2026-11-24T12:00:00Z');
    expect(age('2026-11-24T11:59:55Z', now)).toBe('5 s ago');
    expect(age('2026-11-24T11:30:00Z', now)).toBe('30 min ago');
    expect(age('2026-11-24T09:00:00Z', now)).toBe('3 h ago');
    expect(age('2026-11-20T12:00:00Z', now)).toBe('4 d ago');
    expect(age(undefined, now)).toBe('');
  });
});
