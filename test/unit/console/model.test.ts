/** What the console's pages derive from a resource (console/web/data/model.ts). */
import type { Resource } from '../../../console/web/data/resources.js';
import { age, gitOpsOwner, rotationOf } from '../../../console/web/data/model.js';

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

describe('rotationOf', () => {
  const integration = (spec: Record<string, unknown>): Resource => ({ ...resource(), spec });
  it('renews the generated password, with its grace period', () => {
    expect(rotationOf('webhookintegrations', integration({ credentials: { rotationGracePeriod: '1h' } }))).toEqual({
      renews: ['password'],
      passwordWord: 'password',
      grace: '1h',
      graceWord: 'password',
    });
  });
  it('renews the signing secret of a signed integration, and both in basic+signature', () => {
    const signed = integration({ authentication: { mode: 'signature', signature: { rotationGracePeriod: '10m' } } });
    expect(rotationOf('webhookintegrations', signed)).toMatchObject({
      renews: ['signing secret'],
      grace: '10m',
      graceWord: 'signing secret',
    });
    expect(
      rotationOf('webhookintegrations', integration({ authentication: { mode: 'basic+signature' } })).renews,
    ).toEqual(['password', 'signing secret']);
  });
  it('renews nothing the user keeps in a Secret of their own', () => {
    const own = integration({
      credentials: { secretRef: { name: 'mine' } },
      authentication: { mode: 'basic+signature', signature: { secretRef: { name: 'mine' } } },
    });
    expect(rotationOf('webhookintegrations', own).renews).toEqual([]);
  });
  it('calls an API key’s secret its key', () => {
    const key = { ...resource(), kind: 'ApiKey', spec: { rotationGracePeriod: '2h' } };
    expect(rotationOf('apikeys', key)).toEqual({ renews: ['key'], passwordWord: 'key', grace: '2h', graceWord: 'key' });
  });
});
