import { describe, expect, it } from '@jest/globals';
import type { WebhookIntegration } from '../../../api/v1alpha1/types.js';
import { NameClaims } from '../../../operator/name-claims.js';

const wi = (namespace: string, name: string, specName?: string): WebhookIntegration => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  metadata: { namespace, name, uid: `${namespace}-${name}` },
  spec: specName ? { name: specName } : {},
});

const claimed = (claims: NameClaims, name: string): string[] =>
  claims
    .claimants(name)
    .map((w) => `${w.metadata.namespace}/${w.metadata.name}`)
    .sort();

describe('NameClaims', () => {
  it('finds every integration claiming a name, from spec.name or metadata.name', () => {
    const claims = new NameClaims();
    claims.update(wi('a', 'alerts'), undefined);
    claims.update(wi('b', 'other', 'alerts'), undefined);
    claims.update(wi('c', 'unrelated'), undefined);
    expect(claimed(claims, 'alerts')).toEqual(['a/alerts', 'b/other']);
    expect(claimed(claims, 'unrelated')).toEqual(['c/unrelated']);
    expect(claims.claimants('nobody')).toEqual([]);
  });

  it('moves an integration whose spec.name changed, and forgets a deleted one', () => {
    const claims = new NameClaims();
    const before = wi('a', 'x', 'first');
    claims.update(before, undefined);
    const after = wi('a', 'x', 'second');
    claims.update(after, before);
    expect(claimed(claims, 'first')).toEqual([]);
    expect(claimed(claims, 'second')).toEqual(['a/x']);
    claims.update(undefined, after);
    expect(claimed(claims, 'second')).toEqual([]);
  });

  it('keeps one entry per object across updates (the newest copy)', () => {
    const claims = new NameClaims();
    const v1 = { ...wi('a', 'x'), status: { url: 'v1' } } as WebhookIntegration;
    const v2 = { ...wi('a', 'x'), status: { url: 'v2' } } as WebhookIntegration;
    claims.update(v1, undefined);
    claims.update(v2, v1);
    expect(claims.claimants('x')).toEqual([v2]);
  });
});
